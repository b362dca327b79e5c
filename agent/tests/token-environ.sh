#!/usr/bin/env bash
# The agent's token, handed over in SIGMIG_AGENT_TOKEN (the guest init does,
# so that ps does not show it), must not outlive its reading: not in the
# agent's own /proc/PID/environ, not in the environment of the programs it
# starts (a workload that prints its environment would publish it through
# GET .../log to anyone who reads its output).  TAP on stdout.
# Usage: token-environ.sh AGENT_BINARY
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AGENT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
WL=$HERE/../workloads/build
# shellcheck source=orchestrate/lib/ports.sh
. "$HERE/../orchestrate/lib/ports.sh"
PORT=$(free_port_base 2)	# below the ephemeral range: no outgoing connection takes it
TOKEN=environ-secret-$$-$RANDOM
WORK=$(mktemp -d /tmp/agent-token.XXXXXX)
agent_pid="" pid=""
# shellcheck source=orchestrate/lib/tap.sh
. "$HERE/../orchestrate/lib/tap.sh"

# The agent does not end its workloads when it exits: end ours first.
cleanup() {
	[ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true
	[ -z "$agent_pid" ] || kill -TERM "$agent_pid" 2>/dev/null || true
	[ -z "$agent_pid" ] || timeout 10 tail --pid="$agent_pid" -f /dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

# environ_has PID: the token appears in the process's environment block
# (or the block cannot be read, which must not pass for "absent").
environ_has() {
	local env
	env=$(tr '\0' '\n' <"/proc/$1/environ") || return 0
	grep -qF "$TOKEN" <<<"$env"
}

make -s -C "$HERE/../workloads" all >/dev/null
mkdir -p "$WORK/bin" "$WORK/state"
ln -s "$WL/sigstorm" "$WORK/bin/sigstorm"
SIGMIG_AGENT_TOKEN=$TOKEN "$AGENT" --listen "127.0.0.1:$PORT" --bin-dir "$WORK/bin" \
	--state-dir "$WORK/state" 2>"$WORK/agent.log" &
agent_pid=$!
for _ in $(seq 100); do
	curl -fsS -m 2 -o /dev/null "http://127.0.0.1:$PORT/v1/health" 2>/dev/null && break
	sleep 0.1
done

printf 'Authorization: Bearer %s\n' "$TOKEN" >"$WORK/auth"
reply=$(curl -sS -m 10 -H @"$WORK/auth" -H 'Content-Type: application/json' \
	-d '{"program":"sigstorm","control":true,"args":["--threads","1","--no-local"]}' \
	"http://127.0.0.1:$PORT/v1/workloads")
pid=$(jq -r '.pid // empty' <<<"$reply")
[ -n "$pid" ]
tap $? "the token read from SIGMIG_AGENT_TOKEN authenticates a start ($reply)"

if [ -n "$pid" ]; then
	if environ_has "$pid"; then rc=1; else rc=0; fi
	tap "$rc" "the started program's environment does not hold the token"
fi
if environ_has "$agent_pid"; then rc=1; else rc=0; fi
tap "$rc" "the agent's own /proc/PID/environ no longer shows the token"

tap_done
