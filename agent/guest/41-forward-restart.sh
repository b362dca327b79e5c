#!/bin/sh
# The source's agent dies during the forwarding lease and is started again:
# it adopts the parked forwarder and goes on with the lease from its record
# (target, numbering, the batches not acknowledged), then ends it, so that a
# sender that keeps sending to the old pid through all of it loses nothing.
# Two agents in one guest (A and B on loopback), three migrations A -> B:
# A's agent killed two seconds into the lease; killed exactly between a
# drain of the forwarder and the write of that batch (the runtime answers
# the same records again to a DRAIN under the same tag); killed once the
# commit delta is written ahead, before B has it (the restarted agent
# finishes the cutover: the delta into B's held copy, then its thaw).
# shellcheck disable=SC2016 # the single-quoted jq programs use jq's $variables
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
AGENT_BIN=${AGENT_BIN:-/sigmig/bin/sigmig-agent}
BIN_DIR=${BIN_DIR:-/sigmig/bin}
PORT=${PORT:-18185}
PORT_B=$((PORT + 1))
LEASE_MS=8000
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"
STATE_DIR=${STATE_DIR:-$WORK/state}
STATE_B=$WORK/state-b
B_PID="" MIG_PID=""
# This test's agent A has the fault hook (POST /v1/debug/fault).
SIGMIG_AGENT_FAULTS=1
export SIGMIG_AGENT_FAULTS
cleanup_two() {
	[ -z "$MIG_PID" ] || kill "$MIG_PID" 2>/dev/null || true
	stop_second_agent "$STATE_B"
	cleanup
}
trap cleanup_two EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

need_tools curl jq "$AGENT_BIN" "$BIN_DIR/sigstorm" "$BIN_DIR/sigsend" "$BIN_DIR/sigledger"


start_agents_a_b "$PORT_B" "$STATE_B"

# The copy on B delivers what is pending; frozen, its ledger is final.
sent_pending() {	# COPY
	bcurl POST "/v1/workloads/$1/freeze" >/dev/null
	n=$(bcurl GET "/v1/workloads/$1/signals?limit=100000" | jq '[(.threads[].pending.signals[]), .shared.signals[]]
		| map(select(.code_name == "SI_USER" or .code_name == "SI_QUEUE" or .code_name == "SI_TKILL")) | length')
	[ "$n" = 0 ] && return 0
	bcurl POST "/v1/workloads/$1/thaw" >/dev/null
	sleep 1
	return 1
}

# one_move HOW ID: a move with a sender (id ID) throughout; A's agent dies
# during the move: HOW "kill" (SIGKILL two seconds into the lease) or a
# fault point of its own: "drain-before-spool", "delta-before-post".
one_move() {
	how=$1
	areq POST /v1/workloads --json '{"program":"sigstorm","args":["--threads","2","--no-local","--timers","0"]}'
	expect "$how: sigstorm started on A" 201
	W=$(jqb .id)
	PID=$(jqb .pid)
	note_pid "$W" "$PID"
	areq POST /v1/workloads --json "{\"program\":\"sigsend\",\"control\":false,\"args\":[\"--pid\",\"$PID\",\"--log\",\"/proc/self/fd/1\",\"--rate\",\"400\",\"--seconds\",\"90\",\"--linger-ms\",\"1000\",\"--std-percent\",\"20\",\"--seed\",\"$2\",\"--id\",\"$2\"]}"
	expect "$how: a sender that keeps sending to it (400/s, all kinds, 20% standard)" 201
	S=$(jqb .id)
	note_pid "$S" "$(jqb .pid)"
	if [ "$how" != kill ]; then
		areq POST /v1/debug/fault --json "{\"point\":\"$how\"}"
		expect "$how: armed on A" 200
	fi
	sleep 1
	body=$(jq -cn --arg t "http://127.0.0.1:$PORT_B" --arg k "$TOKEN" --argjson f "$LEASE_MS" \
		'{target: $t, token: $k, forward_ms: $f}')
	rm -f "$WORK/migrate.json"
	curl -s -m 120 -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
		-d "$body" -o "$WORK/migrate.json" "$BASE/v1/workloads/$W/migrate" &
	MIG_PID=$!
	if [ "$how" = kill ]; then
		check "$how: the original became a forwarder (the cutover is over)" wait_for 60 state_is "$W" forwarding
		sleep 2
		kill -KILL "$AGENT_PID"
	elif ! wait_for 60 ended "$AGENT_PID"; then
		not_ok "$how: the fault point was not reached within 60 s"
		kill -KILL "$AGENT_PID"
	fi
	wait "$MIG_PID" 2>/dev/null || true
	MIG_PID=""
	check "$how: A's agent died during the lease: the migrate request got no answer" \
		test ! -s "$WORK/migrate.json"
	sleep 1	# arrivals pile up in the forwarder while no agent runs
	restart_agent "$how: A"
	check "$how: it adopted the forwarder and goes on with its lease" \
		grep -q "forward $W: its forwarder is still parked: the lease goes on" "$WORK/agent.log"
	if [ "$how" = delta-before-post ]; then
		check "$how: it finished the cutover: the delta into B's held copy, then its thaw" \
			wait_for 30 grep -q "forward $W: the copy w[0-9]* on .* thawed" "$WORK/agent.log"
	fi
	check "$how: the lease ends: the original is migrated" wait_for 30 state_is "$W" migrated
	check "$how: the resumed lease reports what it forwarded" \
		grep -q "forward $W: the resumed lease is over" "$WORK/agent.log"
	check "$how: the sender stops a second after the old pid is gone (ESRCH)" wait_for 60 state_is "$S" exited
	grep "forward $W: \|fault" "$WORK/agent.log" | sed 's/^/# /'
	R=$(bcurl GET /v1/workloads | jq -r '[.workloads[] | select(.restored)][0].id // empty')
	check "$how: B runs the copy ($R)" test -n "$R"
	check "$how: the copy consumed every signal sent to it" wait_for 60 sent_pending "$R"
	# sealed before its last read, nothing is excused: a later send failed
	window=$(sed -n "s/.*forward $W: the resumed lease is over.*exit window \([0-9]*:[0-9]*\)$/--exit-window $PID:\1/p" \
		"$WORK/agent.log" | head -1)
	check "$how: the forwarder was sealed before its last read" \
		grep -q "forward $W: the resumed lease is over.*exit window [0-9]*:[0-9]* sealed" "$WORK/agent.log"
	# shellcheck disable=SC2086 # window: one option and its argument, or nothing
	if sigledger --log "$STATE_DIR/$S.log" --ledger "$STATE_DIR/$W.ledger" --ledger "$STATE_B/$R.ledger" \
		$window --json >"$WORK/verdict.json" 2>"$WORK/verdict.err" &&
		jq -e '.sent >= 1000 and .delivered > 0' "$WORK/verdict.json" >/dev/null; then
		ok "$how: sigledger: $(jq -c '{sent, delivered, lost, duplicated, mismatched, exit_window}' "$WORK/verdict.json")"
	else
		not_ok "$how: sigledger: $(jq -c '{sent, delivered, lost, duplicated, mismatched, verdict}' \
			"$WORK/verdict.json" 2>/dev/null) $(head -c 300 "$WORK/verdict.err")"
	fi
	bcurl DELETE "/v1/workloads/$R" >/dev/null
	areq DELETE "/v1/workloads/$W"
	areq DELETE "/v1/workloads/$S"
}

one_move kill 11
one_move drain-before-spool 12
one_move delta-before-post 13
finish
