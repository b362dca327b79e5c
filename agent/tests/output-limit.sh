#!/usr/bin/env bash
# --max-output: a workload's files stay under the agent's limit whatever
# the program writes, the program learns it (EFBIG, SIGXFSZ), and the API
# says which files reached it, so that a verdict read from them is known
# to be incomplete. TAP on stdout.
# Usage: output-limit.sh AGENT_BINARY
set -uo pipefail	# no -e: each check reports its own failure
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AGENT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
WL=$HERE/../workloads/build
# shellcheck source=orchestrate/lib/ports.sh
. "$HERE/../orchestrate/lib/ports.sh"
PORT=$(free_port_base 2)	# below the ephemeral range: no outgoing connection takes it
BASE=http://127.0.0.1:$PORT
LIMIT=65536
WORK=$(mktemp -d /tmp/agent-output.XXXXXX)
agent_pid=""
# shellcheck source=orchestrate/lib/tap.sh
. "$HERE/../orchestrate/lib/tap.sh"

# The agent does not end its workloads when it exits: the API does.
cleanup() {
	local id
	if [ -n "$agent_pid" ]; then
		for id in $(api GET /v1/workloads 2>/dev/null | jq -r '.workloads[]?.id'); do
			api DELETE "/v1/workloads/$id" >/dev/null 2>&1 || true
		done
		kill -TERM "$agent_pid" 2>/dev/null || true
		timeout 20 tail --pid="$agent_pid" -f /dev/null || kill -KILL "$agent_pid" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

api() {	# METHOD PATH [JSON]: the body on stdout
	local args=(-sS -m 30 -X "$1" -H @"$WORK/auth")
	[ -z "${3:-}" ] || args+=(-H 'Content-Type: application/json' -d "$3")
	curl "${args[@]}" "$BASE$2"
}

# wait_exited ID: its workload object once it has exited (60 s at most)
wait_exited() {
	local i
	for i in $(seq 300); do
		api GET "/v1/workloads/$1" >"$WORK/w.json"
		[ "$(jq -r .state "$WORK/w.json")" != exited ] || return 0
		sleep 0.2
	done
	echo "# $1 still running after $i tries" >&2
	return 1
}

make -s -C "$HERE/../workloads" all >/dev/null
mkdir -p "$WORK/bin" "$WORK/state"
for p in sigstorm sigsend; do ln -s "$WL/$p" "$WORK/bin/$p"; done
printf 'Authorization: Bearer output-%s\n' "$$" >"$WORK/auth"
printf 'output-%s\n' "$$" >"$WORK/token"

rc=0
"$AGENT" --listen "127.0.0.1:$PORT" --token-file "$WORK/token" --bin-dir "$WORK/bin" \
	--state-dir "$WORK/state" --max-output 1K 2>"$WORK/refused.log" || rc=$?
[ "$rc" = 2 ]
tap $? "--max-output below 64K is refused at start (exit $rc: $(head -c 120 "$WORK/refused.log"))"

"$AGENT" --listen "127.0.0.1:$PORT" --token-file "$WORK/token" --bin-dir "$WORK/bin" \
	--state-dir "$WORK/state" --max-output 64K 2>"$WORK/agent.log" &
agent_pid=$!
for _ in $(seq 100); do
	curl -fsS -m 2 -o /dev/null "$BASE/v1/health" 2>/dev/null && break
	sleep 0.1
done

storm=$(api POST /v1/workloads '{"program":"sigstorm","args":["--threads","1","--no-local"]}')
W=$(jq -r '.id // empty' <<<"$storm")
P=$(jq -r '.pid // empty' <<<"$storm")
fsize=$(awk '/^Max file size/ { print $4 " " $5 }' "/proc/$P/limits" 2>/dev/null || true)
[ -n "$W" ] && [ "$fsize" = "$LIMIT $LIMIT" ] &&
	[ "$(jq -r '.output | .max_bytes == 65536 and .log_bytes < 65536 and .ledger_bytes < 65536 and (.limit_reached | not)' <<<"$storm")" = true ]
tap $? "a started workload's RLIMIT_FSIZE is the limit ($fsize) and its output is below it ($(jq -c .output <<<"$storm"))"

# Each signal is a ledger line of ~290 bytes for sigstorm and a log line
# of ~110 for sigsend, which goes on (ESRCH) once sigstorm has stopped.
send=$(api POST /v1/workloads "{\"program\":\"sigsend\",\"control\":false,\"args\":[\"--pid\",\"$P\",\"--log\",\"/dev/stdout\",\"--count\",\"5000\",\"--kinds\",\"sigqueue\",\"--std-percent\",\"0\"]}")
S=$(jq -r '.id // empty' <<<"$send")
wait_exited "$W" && cp "$WORK/w.json" "$WORK/storm.json"
wait_exited "$S" && cp "$WORK/w.json" "$WORK/send.json"

ledger=$(stat -c %s "$WORK/state/$W.ledger")
[ "$ledger" = "$LIMIT" ] && [ "$(jq -r .exit.code "$WORK/storm.json")" = 4 ] &&
	[ "$(jq -r '.output.ledger_bytes == 65536 and .output.limit_reached' "$WORK/storm.json")" = true ]
tap $? "sigstorm's ledger stops at the limit ($ledger bytes), its next write fails and it exits 4 ($(jq -c '{exit, output}' "$WORK/storm.json"))"

log=$(stat -c %s "$WORK/state/$S.log")
[ "$log" = "$LIMIT" ] && [ "$(jq -r .exit.signal "$WORK/send.json")" = 25 ] &&
	[ "$(jq -r '.output.log_bytes == 65536 and .output.limit_reached and .output.ledger_bytes == null' "$WORK/send.json")" = true ]
tap $? "sigsend's log stops at the limit ($log bytes) and SIGXFSZ ends it ($(jq -c '{exit, output}' "$WORK/send.json"))"

got=$(api GET "/v1/workloads/$S/log" | wc -c)
[ "$got" = "$LIMIT" ]
tap $? "GET .../log serves what was written, no more ($got bytes)"

big=$(find "$WORK/state" -type f -size +64k | head -3)
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$BASE/v1/health")
[ -z "$big" ] && [ "$code" = 200 ]
tap $? "no file of the state directory is larger${big:+: $big}; the agent answers ($code)"

tap_done
