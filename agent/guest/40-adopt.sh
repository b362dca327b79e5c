#!/bin/sh
# An agent that dies (SIGKILL: no shutdown of its own) and is started again
# adopts the workloads that still run, from their records in the state
# directory: same id, pid, state and files, driven as before. A copy keeps
# the numbers of the forwarded batches it took, so that a batch whose answer
# the dead agent never sent is acknowledged as a duplicate, not requeued
# twice; a held copy stays held and can be thawed. A record whose process is
# gone, whose pid now names another process, or that is not a record at all
# is removed, and nothing else is touched.
# shellcheck disable=SC2016 # the single-quoted jq programs use jq's $variables
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
AGENT_BIN=${AGENT_BIN:-/sigmig/bin/sigmig-agent}
BIN_DIR=${BIN_DIR:-/sigmig/bin}
PORT=${PORT:-18184}
# This test's own agent has the fault hook (POST /v1/debug/fault).
SIGMIG_AGENT_FAULTS=1
export SIGMIG_AGENT_FAULTS
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"
STATE_DIR=${STATE_DIR:-$WORK/state}
STRANGER=""
cleanup_adopt() {
	[ -z "$STRANGER" ] || kill -KILL "$STRANGER" 2>/dev/null || true
	cleanup
}
trap cleanup_adopt EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

need_tools curl jq "$AGENT_BIN" "$BIN_DIR/sigstorm" "$BIN_DIR/sigsend"

# The agent killed as a crash would: no shutdown, no thaw, records left as they are.
crash_and_restart() {	# NAME
	kill -KILL "$AGENT_PID"
	restart_agent "$1 (SIGKILL)"
}

alive() {	# PID
	kill -0 "$1" 2>/dev/null
}

start_agent --log-level info ||
	{ echo "not ok 1 - agent did not come up"; cat "$WORK/agent.log"; exit 1; }
ok "agent listens on $BASE"
req GET /v1/capabilities
IFACE=$(jqb .migration)

areq POST /v1/workloads --json '{"program":"sigstorm","args":["--threads","2","--no-local"]}'
expect "sigstorm started" 201
W=$(jqb .id)
PID=$(jqb .pid)
note_pid "$W" "$PID"
# A stranger to the agent, and a program without the runtime that waits
# (paused) to send signals to the workload.
sleep 600 &
STRANGER=$!
areq POST /v1/workloads --json "{\"program\":\"sigsend\",\"control\":false,\"args\":[\"--pid\",\"$PID\",\"--log\",\"/proc/self/fd/1\",\"--paused\"]}"
expect "a program without the runtime started" 201
P=$(jqb .id)
PPID_PLAIN=$(jqb .pid)
note_pid "$P" "$PPID_PLAIN"
areq POST "/v1/workloads/$W/freeze"
expect "freeze $W" 200
check "its record is in the state directory" test -s "$STATE_DIR/$W.record"
check "readable by the agent's user only" test "$(stat -c %a "$STATE_DIR/$W.record")" = 600

# Records that must not be adopted: not JSON; a pid that now names another
# process (its start time differs); a process that is gone.
printf '{"id":"w90",' >"$STATE_DIR/w90.record"
jq -c --argjson pid "$STRANGER" --arg id w91 '.id = $id | .pid = $pid | .start_time = 1' \
	"$STATE_DIR/$W.record" >"$STATE_DIR/w91.record"
jq -c --arg id w92 '.id = $id | .pid = 999999' "$STATE_DIR/$W.record" >"$STATE_DIR/w92.record"
printf '{"id":' >"$STATE_DIR/w93.record.tmp"

crash_and_restart "crash 1"
check "the workloads kept running while no agent ran" sh -c "kill -0 $PID && kill -0 $PPID_PLAIN"
areq GET "/v1/workloads/$W"
expect "GET the adopted workload" 200
check "$W adopted: same pid, frozen (its runtime answers), control, adopted ($(jq -c '{pid, state, adopted}' "$BODY"))" \
	jq -e --argjson pid "$PID" '.pid == $pid and .state == "frozen" and .control and .adopted == true
		and .runtime.state == "frozen"' "$BODY"
areq GET "/v1/workloads/$P"
check "$P adopted as well (no runtime)" jq -e --argjson pid "$PPID_PLAIN" '.pid == $pid and .state == "running" and .adopted == true' "$BODY"
areq GET /v1/workloads
check "records not adopted: not JSON, a reused pid, a gone process ($(jq -c '[.workloads[].id]' "$BODY"))" \
	jq -e '[.workloads[].id] | (index("w90") // index("w91") // index("w92")) == null' "$BODY"
check "their records are removed, and a half-written one" sh -c "! ls '$STATE_DIR'/w9[0123].record* 2>/dev/null"
check "the process a stale record named is left alone" alive "$STRANGER"
check "the agent logs the adoption" grep -q "adopted from its record" "$WORK/agent.log"

areq POST "/v1/workloads/$W/thaw"
expect "thaw the adopted workload" 200
check "thawed: running" jq -e '.workload.state == "running"' "$BODY"
areq POST /v1/workloads --json '{"program":"sigstorm","args":["--threads","1","--no-local"]}'
expect "a new workload after the restart" 201
N=$(jqb .id)
note_pid "$N" "$(jqb .pid)"
check "its id ($N) follows every recorded one, adopted or not" test "${N#w}" -gt 93
areq DELETE "/v1/workloads/$N"
expect "DELETE it" 200

kill -KILL "$PPID_PLAIN"
check "an adopted workload's end is seen (not our child: its pidfd)" wait_for 10 state_is "$P" exited
areq GET "/v1/workloads/$P"
check "its exit status is unknown: code and signal null" jq -e '.exit == {"code": null, "signal": null}' "$BODY"
areq DELETE "/v1/workloads/$P"
expect "DELETE the ended adopted workload" 200
check "its record is removed" test ! -e "$STATE_DIR/$P.record"

if [ "$IFACE" != true ]; then
	areq DELETE "/v1/workloads/$W"
	expect "DELETE the adopted workload" 200
	check "DELETE ended its process" wait_for 10 ended "$PID"
	finish
	exit 0
fi

# ---------------------------------------------------------------- a copy's batches
checkpoint_with_signals "$W" "$PID" 200 9
areq DELETE "/v1/workloads/$W"
expect "DELETE the original" 200

areq POST "/v1/restore?hold=1&arg=--threads&arg=2&arg=--no-local" \
	-H 'Content-Type: application/octet-stream' --data-binary "@$WORK/image"
expect "restore it, held" 201
R=$(jqb .id)
RPID=$(jqb .pid)
note_pid "$R" "$RPID"
crash_and_restart "crash 2"
areq GET "/v1/workloads/$R"
check "the held copy is adopted held: frozen, held, restored ($(jq -c '{state, held, restored}' "$BODY"))" \
	jq -e --argjson pid "$RPID" '.pid == $pid and .state == "frozen" and .held == true and .restored' "$BODY"
areq POST "/v1/workloads/$R/thaw"
expect "thaw the adopted held copy" 200

batch() {	# N NAME STATUS
	areq POST "/v1/workloads/$R/requeue?source=adopt-test&batch=$1" \
		-H 'Content-Type: application/octet-stream' --data-binary "@$WORK/image"
	expect "$2" "$3"
}
batch 1 "batch 1 into the copy" 200
check "batch 1 requeued" jq -e '.result.duplicate == false and .result.requeued + .result.merged > 0' "$BODY"
crash_and_restart "crash 3"
batch 1 "batch 1 again, to the restarted agent (the first answer lost)" 200
check "batch 1 again: a duplicate, nothing requeued ($(jq -c .result "$BODY"))" \
	jq -e '.result.duplicate == true and .result.requeued == 0' "$BODY"
batch 3 "batch 3 before batch 2 is 409" 409 batch_out_of_order
batch 2 "batch 2 is taken" 200
check "batch 2 requeued, not a duplicate" jq -e '.result.duplicate == false' "$BODY"

# The worst moment: the runtime has requeued batch 3, the agent has not yet
# recorded it. The runtime's own tag must tell the next agent.
areq POST /v1/debug/fault --json '{"point":"batch-before-record"}'
expect "arm batch-before-record" 200
REQ_TIMEOUT=60 fetch "$BODY" "$HEADERS" POST "/v1/workloads/$R/requeue?source=adopt-test&batch=3" \
	-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/octet-stream' --data-binary "@$WORK/image"
check "batch 3: the agent died before answering (HTTP $FETCH_STATUS)" test "$FETCH_STATUS" = 000
restart_agent "crash 4 (batch-before-record)"
check "it exited 86 at the fault (rc $AGENT_RC)" test "$AGENT_RC" = 86
check "the new agent took the runtime's word over its record (batch 3, not 2)" \
	grep -q "its runtime took batch 3 of adopt-test, its record said 2" "$WORK/agent.log"
batch 3 "batch 3 again, to the restarted agent" 200
check "batch 3 again: a duplicate, nothing requeued twice ($(jq -c .result "$BODY"))" \
	jq -e '.result.duplicate == true and .result.requeued == 0' "$BODY"
batch 4 "batch 4 is taken" 200
check "batch 4 requeued, not a duplicate" jq -e '.result.duplicate == false' "$BODY"
areq DELETE "/v1/workloads/$R"
expect "DELETE the adopted copy" 200
check "DELETE ended its process" wait_for 10 ended "$RPID"
finish
