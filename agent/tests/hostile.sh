#!/usr/bin/env bash
# The agent against a hostile client on loopback: each attack must fail
# with its documented status and problem code, change nothing outside the
# state directory, and leave /v1/health answering. TAP on stdout.
# Usage: hostile.sh AGENT_BINARY
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AGENT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
WL=$HERE/../workloads/build
# shellcheck source=orchestrate/lib/ports.sh
. "$HERE/../orchestrate/lib/ports.sh"
PORT=$(free_port_base 2)	# below the ephemeral range: no outgoing connection takes it
BASE=http://127.0.0.1:$PORT
TOKEN=hostile-$$-$RANDOM
WORK=$(mktemp -d /tmp/agent-hostile.XXXXXX)
HEALTH_BOUND_S=${HEALTH_BOUND_S:-5}
agent_pid=""
AGENT_RC=0
# shellcheck source=orchestrate/lib/tap.sh
. "$HERE/../orchestrate/lib/tap.sh"
TAP_ON_FAILURE=show_last_body

stop_agent() {
	[ -n "$agent_pid" ] || return 0
	kill -TERM "$agent_pid" 2>/dev/null || true
	timeout 20 tail --pid="$agent_pid" -f /dev/null || kill -KILL "$agent_pid" 2>/dev/null || true
	AGENT_RC=0
	wait "$agent_pid" 2>/dev/null || AGENT_RC=$?
	agent_pid=""
}

cleanup() {
	stop_agent
	[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

show_last_body() {
	[ ! -s "$WORK/body" ] || echo "#   last body: $(head -c 400 "$WORK/body")"
}

check() {	# NAME COMMAND...: ok when the command succeeds
	local name=$1
	shift
	if "$@" >/dev/null; then tap 0 "$name"; else tap 1 "$name"; fi
}

start_agent() {	# extra options...
	"$AGENT" --listen "127.0.0.1:$PORT" --bin-dir "$WORK/bin" \
		--state-dir "$WORK/state" "$@" 2>>"$WORK/agent.log" &
	agent_pid=$!
	for _ in $(seq 100); do
		curl -fsS -m 2 -o /dev/null "$BASE/v1/health" 2>/dev/null && return 0
		kill -0 "$agent_pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# call METHOD PATH [curl args...]: sets STATUS, CODE (the problem code) and
# writes the body to $WORK/body.
call() {
	local method=$1 path=$2
	shift 2
	STATUS=$(curl -sS -m 30 -o "$WORK/body" -w '%{http_code}' -X "$method" "$@" \
		"$BASE$path" 2>>"$WORK/curl.log") || STATUS=000
	CODE=$(jq -r '.code // empty' "$WORK/body" 2>/dev/null) || CODE=""
	[ "$STATUS" != 201 ] || reap_started
}

# An attack that started something: stop it at once (the agent leaves
# its workloads running when it exits).
reap_started() {
	local id
	id=$(jq -r '.id // empty' "$WORK/body")
	[ -n "$id" ] || return 0
	curl -s -m 30 -o /dev/null -X DELETE -H @"$WORK/auth" "$BASE/v1/workloads/$id" || true
}

not() { ! "$@"; }

acall() {	# as call, with the token (from a file: never in argv)
	call "$@" -H @"$WORK/auth"
}

health_ok() {	# /v1/health answers 200 within HEALTH_BOUND_S
	local code
	code=$(curl -sS -m "$HEALTH_BOUND_S" -o /dev/null -w '%{http_code}' \
		"$BASE/v1/health" 2>/dev/null) || return 1
	[ "$code" = 200 ]
}

# expect NAME STATUS CODE: the last reply, and the agent still answering
expect() {
	local rc=0
	[ "$STATUS" = "$2" ] && [ "$CODE" = "$3" ] || rc=1
	health_ok || rc=1
	tap "$rc" "$1: $2 $3 (got $STATUS ${CODE:-no code}), health answers"
}

# Every attack aims its files at $OUT (a shared /tmp cannot be watched:
# other programs write there): it must stay empty, the program directory
# unchanged.
OUT=$WORK/outside
snapshot() {
	find "$OUT" "$WORK/bin" -mindepth 1 -newer "$WORK/stamp"
}

make -s -C "$HERE/../workloads" all >/dev/null
mkdir -p "$WORK/bin" "$WORK/state" "$OUT"
for p in sigstorm sigsend sigmig-ctl withrlimit sigledger; do
	[ -x "$WL/$p" ] || { echo "hostile: $WL/$p was not built" >&2; exit 1; }
	ln -s "$WL/$p" "$WORK/bin/$p"
done
ln -s "$AGENT" "$WORK/bin/sigmig-agent"
ln -s /bin/sh "$WORK/bin/sh"
printf 'Authorization: Bearer %s\n' "$TOKEN" >"$WORK/auth"
touch "$WORK/stamp"
JSON=(-H 'Content-Type: application/json')

# ---------------------------------------------------------------- authentication fails closed
# refuses_to_start NAME OPTIONS...: exits 2 at once, nothing listening
refuses_to_start() {
	local name=$1 rc=0
	shift
	env -u SIGMIG_AGENT_TOKEN timeout 20 "$AGENT" --bin-dir "$WORK/bin" \
		--state-dir "$WORK/state" "$@" 2>"$WORK/refused.log" || rc=$?
	check "$name: exits 2 ($rc: $(head -c 200 "$WORK/refused.log"))" test "$rc" = 2
}
refuses_to_start "no token" --listen "127.0.0.1:$PORT"
refuses_to_start "an empty token file" --listen "127.0.0.1:$PORT" --token-file /dev/null
refuses_to_start "--insecure-loopback on 0.0.0.0" --insecure-loopback --listen "0.0.0.0:$PORT"
env -u SIGMIG_AGENT_TOKEN "$AGENT" --insecure-loopback --port "$PORT" --bin-dir "$WORK/bin" \
	--state-dir "$WORK/state" 2>>"$WORK/agent.log" &
agent_pid=$!
wait_until_up() { for _ in $(seq 100); do health_ok && return 0; sleep 0.1; done; return 1; }
check "--insecure-loopback --port serves on 127.0.0.1" wait_until_up
listening_on() { ss -Hltn "sport = :$PORT" | awk '{ print $4 }'; }
check "--insecure-loopback binds 127.0.0.1 only ($(listening_on))" \
	test "$(listening_on)" = "127.0.0.1:$PORT"
stop_agent

printf '%s\n' "$TOKEN" >"$WORK/auth.token"
IDLE_S=3
PER_CLIENT=16
start_agent --token-file "$WORK/auth.token" --idle-timeout "$IDLE_S" \
	--max-connections-per-client "$PER_CLIENT" ||
	{ echo "not ok 1 - the agent did not come up"; cat "$WORK/agent.log"; exit 1; }

# ---------------------------------------------------------------- no command execution
marker=$OUT/pwned
for prog in withrlimit sigmig-agent sigmig-ctl sigledger sh; do
	case $prog in
	withrlimit) args='["1000","sh","-c","id > '"$marker"'"]' ;;
	sigmig-agent) args='["--listen","127.0.0.1:'$((PORT + 1))'","--bin-dir","/bin"]' ;;
	*) args='["-c","id > '"$marker"'"]' ;;
	esac
	acall POST /v1/workloads "${JSON[@]}" -d "{\"program\":\"$prog\",\"control\":false,\"args\":$args}"
	expect "starting $prog is refused" 403 program_not_allowed
done
check "no refused program ran (no $marker)" test ! -e "$marker"
check "no second agent listens" \
	test "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((PORT + 1))/v1/health")" = 000
call GET /v1/capabilities
check "capabilities lists only workload programs ($(jq -c .programs "$WORK/body"))" \
	jq -e '.programs - ["sigstorm", "sigstorm32", "sigsend"] == []' "$WORK/body"

# ---------------------------------------------------------------- agent-owned options in every spelling
spelled=0 refused=0
for opt in ctl ledger restore restore-hold; do
	for ((i = 1; i <= ${#opt}; i++)); do
		for form in "--${opt:0:i}" "--${opt:0:i}=$OUT/owned"; do
			spelled=$((spelled + 1))
			acall POST /v1/workloads "${JSON[@]}" \
				-d "{\"program\":\"sigstorm\",\"control\":false,\"args\":[\"$form\",\"$OUT/owned\"]}"
			if [ "$STATUS" = 400 ] && [ "$CODE" = invalid_field ]; then
				refused=$((refused + 1))
			else
				echo "# $form: $STATUS $CODE"
			fi
		done
	done
done
all_refused() { [ "$refused" = "$spelled" ] && [ ! -e "$OUT/owned" ] && health_ok; }
check "every prefix and = spelling of an agent-owned option is 400 ($refused of $spelled)" all_refused

# ---------------------------------------------------------------- no or wrong token, cross-site bodies
# Every operation of docs/openapi.yaml: those it marks bearer refuse a
# missing or wrong token, the others answer without one.
routes=() open=()
while read -r method path auth; do
	path=${path//\{id\}/w1}
	if [ "$auth" = bearer ]; then routes+=("$method:$path"); else open+=("$method:$path"); fi
done < <(/usr/bin/python3 "$HERE/../orchestrate/lib/openapi_check.py" routes)
routes+=('POST:/v1/workloads/w1/requeue?source=s&batch=1')
check "docs/openapi.yaml lists the routes (${#routes[@]} with a token, ${#open[@]} open)" \
	test "${#routes[@]}" -ge 16 -a "${#open[@]}" -ge 1
for r in "${routes[@]}"; do
	call "${r%%:*}" "${r#*:}"
	expect "${r%%:*} ${r#*:} without a token" 401 unauthorized
	call "${r%%:*}" "${r#*:}" -H "Authorization: Bearer ${TOKEN}x"
	expect "${r%%:*} ${r#*:} with a wrong token" 401 unauthorized
done
for r in "${open[@]}"; do
	call "${r%%:*}" "${r#*:}"
	check "${r%%:*} ${r#*:} answers without a token (the spec has it open): $STATUS" test "$STATUS" = 200
done
for limit in 100001 1000000 99999999999999999999 1e9 -1; do
	acall GET "/v1/workloads/w1/signals?limit=$limit"
	expect "GET signals?limit=$limit (it freezes and grows with limit)" 400 invalid_parameter
done
# The forwarding verbs. Their queries are checked in the guest (agent/guest/
# 10-api.sh): here, without the kernel interface, a requeue is refused
# before its body is read, whatever it says; a replay needs a spool.
acall POST "/v1/workloads/w1/requeue?source=../../etc&batch=-1" -H 'Content-Type: application/octet-stream' \
	--data-binary @"$WL/../tests/host/tap.h"
expect "requeue on a kernel without the interface" 503 kernel_unsupported
# (started past call(), which stops what an attack started)
fwd=$(curl -sS -m 30 -H @"$WORK/auth" "${JSON[@]}" -d '{"program":"sigstorm","control":false}' \
	"$BASE/v1/workloads" | jq -r '.id // empty')
acall POST "/v1/workloads/${fwd:-w0}/replay"
expect "replay of a workload that left no spool" 409 nothing_to_replay
[ -z "$fwd" ] || curl -s -m 30 -o /dev/null -X DELETE -H @"$WORK/auth" "$BASE/v1/workloads/$fwd" || true
acall POST /v1/workloads/w999999/replay
expect "replay of an unknown workload" 404 unknown_workload
form='{"program":"sigstorm","control":false}'
acall POST /v1/workloads -d "$form"
expect "a form-urlencoded body (what a cross-site form sends)" 415 unsupported_media_type
acall POST /v1/workloads -H 'Content-Type: text/plain' -d "$form"
expect "a text/plain body" 415 unsupported_media_type
acall POST /v1/workloads -H 'Content-Type: multipart/form-data; boundary=x' -d "$form"
expect "a multipart body" 415 unsupported_media_type
acall POST /v1/workloads -H 'Content-Type:' -d "$form"
expect "a body without Content-Type" 415 unsupported_media_type
acall POST /v1/workloads -H 'Content-Type: application/json-seq' -d "$form"
expect "application/json-seq is not application/json" 415 unsupported_media_type

# ---------------------------------------------------------------- log injection, oversized requests
forged=FORGED-$$
acall POST "/v1/x%0a2026-01-01T00:00:00.000Z%20sigmig-agent%20error:%20$forged"
expect "a path with %0a" 404 not_found
sleep 0.2
check "the log shows the newline escaped, no forged line" \
	sh -c "grep -qF 'x\\x0a2026-01-01' '$WORK/agent.log' && ! grep -q '^2026-01-01T00:00:00.000Z' '$WORK/agent.log'"
acall POST /v1/workloads "${JSON[@]}" -d "{\"program\":\"sig$(printf '\\u001b')[31mstorm\"}"
expect "a program name with an escape sequence" 400 invalid_field
long=$(head -c 40000 /dev/zero | tr '\0' a)
call GET "/v1/$long"
expect "a 40 KB path" 414 uri_too_long
call GET "/v1/health?q=$long"
expect "a 40 KB query" 414 uri_too_long
call GET /v1/health -H "X-Big: $long"
expect "a 40 KB header" 431 headers_too_large
call GET "/v1/$(head -c 8000 /dev/zero | tr '\0' a)"
expect "an 8000-byte path is under the limit" 404 not_found
# Past the agent's request buffer (256 KiB) libmicrohttpd answers itself.
printf 'X-Big: %s\n' "$(head -c 300000 /dev/zero | tr '\0' a)" >"$WORK/huge-header"
call GET /v1/health -H @"$WORK/huge-header"
check "a 300 KB header: libmicrohttpd's own 431 (got $STATUS)" test "$STATUS" = 431
check "health after the huge header" health_ok
nested=$(printf '%.0s[' $(seq 5000))
acall POST /v1/workloads "${JSON[@]}" -d "{\"program\":\"sigstorm\",\"args\":$nested}"
expect "a body nested 5000 deep (jansson's depth limit)" 400 malformed_json
head -c 70000 /dev/zero | tr '\0' ' ' >"$WORK/big.json"
acall POST /v1/workloads "${JSON[@]}" --data-binary @"$WORK/big.json"
expect "a body over --max-body" 413 body_too_large

# ---------------------------------------------------------------- restore on a kernel without the interface
call GET /v1/capabilities
if [ "$(jq -r .migration "$WORK/body")" = false ]; then
	head -c $((64 << 20)) /dev/zero >"$WORK/image"
	sent=$(curl -sS -m 30 -o "$WORK/body" -w '%{size_upload}' -H @"$WORK/auth" \
		-H 'Content-Type: application/octet-stream' --data-binary @"$WORK/image" \
		"$BASE/v1/restore") || sent=failed
	STATUS=$(jq -r .status "$WORK/body" 2>/dev/null) CODE=$(jq -r .code "$WORK/body" 2>/dev/null)
	expect "a 64 MiB restore without the kernel interface" 503 kernel_unsupported
	check "... refused before the body was read ($sent bytes sent)" test "${sent%.*}" -lt $((1 << 20))
	rm -f "$WORK/image"
fi

# ---------------------------------------------------------------- connection floods
# 64 idle and 16 trickling connections from 127.0.0.2 (more than the 64
# connection threads): /v1/health from 127.0.0.1 must still answer, idle
# ones must be closed after --idle-timeout, trickling ones stay within the
# per-client share.
flood_out=$WORK/flood.out
timeout 60 /usr/bin/python3 "$HERE/tests/conn-flood.py" "$PORT" 127.0.0.2 64 16 \
	$((IDLE_S * 3)) >"$flood_out" 2>&1 &
flood_pid=$!
for _ in $(seq 100); do grep -q holding "$flood_out" && break; sleep 0.1; done
slowest_ms=0 answered=0
for _ in 1 2 3 4 5; do
	t0=$(date +%s%N)
	if health_ok; then answered=$((answered + 1)); fi
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$ms" -le "$slowest_ms" ] || slowest_ms=$ms
	sleep 0.5
done
check "/v1/health answers during the flood ($answered of 5, slowest ${slowest_ms} ms, bound ${HEALTH_BOUND_S}s; $(head -1 "$flood_out"))" \
	test "$answered" = 5
wait "$flood_pid" || true
summary=$(tail -1 "$flood_out")
still=$(sed -n 's/.*still_open=\([0-9]*\).*/\1/p' <<<"$summary")
check "idle connections closed, the rest within the per-client share of $PER_CLIENT ($summary)" \
	test "${still:-999}" -le "$PER_CLIENT"
check "the agent answers after the flood" health_ok

# ---------------------------------------------------------------- sigsend's file options
# A sender that got through would signal this sleep, not the test.
sleep 120 &
target=$!
for a in '"--log","OUT/sent"' '"--lo=OUT/sent"' '"--pid-file","OUT/pid"' '"--pid-f=OUT/pid"'; do
	a=${a//OUT/$OUT}
	acall POST /v1/workloads "${JSON[@]}" \
		-d "{\"program\":\"sigsend\",\"control\":false,\"args\":[\"--pid\",\"$target\",\"--count\",\"1\",$a]}"
	expect "sigsend ${a//\"/}" 400 invalid_field
done

# ---------------------------------------------------------------- sigsend's targets
# It runs as root: only this agent's running workloads may be its target,
# not init, the agent, or the sleep above, in any spelling getopt takes.
sigsend_to() {	# ARGS (JSON list members)
	acall POST /v1/workloads "${JSON[@]}" \
		-d "{\"program\":\"sigsend\",\"control\":false,\"args\":[$1,\"--count\",\"1\",\"--log\",\"/dev/stdout\"]}"
}
for a in '"--pid","1"' '"--pid=1"' "\"--pid\",\"$agent_pid\"" "\"--pid=$target\"" \
	"\"--pid\",\"$target\",\"--pid\",\"1\""; do
	sigsend_to "$a"
	expect "sigsend aimed at a process that is no workload (${a//\"/})" 403 target_not_allowed
done
for a in '"--pid=1x"' '"--pid","0x1"' '"--pid="' '"--pid","99999999999"' '"--pid"'; do
	sigsend_to "$a"
	expect "sigsend with a --pid that is not a pid (${a//\"/})" 400 invalid_field
done
# (with its runtime: without it, sigstorm exits at once on its usage)
victim=$(curl -sS -m 30 -H @"$WORK/auth" "${JSON[@]}" \
	-d '{"program":"sigstorm","args":["--threads","1","--no-local"]}' \
	"$BASE/v1/workloads" | jq -r '.id + " " + (.pid | tostring)')
sigsend_to "\"--pid\",\"${victim#* }\""
check "sigsend aimed at a workload of the agent starts: $STATUS" test "$STATUS" = 201
curl -s -m 30 -o /dev/null -X DELETE -H @"$WORK/auth" "$BASE/v1/workloads/${victim%% *}" || true
kill "$target" 2>/dev/null || true
wait "$target" 2>/dev/null || true

# ---------------------------------------------------------------- nothing changed outside
stray=$(snapshot)
check "nothing changed outside the state directory${stray:+: $stray}" test -z "$stray"

stop_agent
# The sanitized agent exits non-zero on a leak or a report.
check "the agent survived every attack and exited cleanly (rc $AGENT_RC)" test "$AGENT_RC" = 0
check "no sanitizer report in the agent's log" \
	not grep -q 'ERROR: [A-Za-z]*Sanitizer\|runtime error:' "$WORK/agent.log"
tap_done
