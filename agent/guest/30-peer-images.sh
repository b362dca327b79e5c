#!/bin/sh
# Images from a malicious peer: a real checkpoint, edited field by field
# with its CRC recomputed (sigmig-ctl --craft), so that only the decoder's
# and the restore's own checks stand between it and the kernel. Each one
# is posted to /v1/restore or to a held copy's requeue, as a peer agent
# would, and must be refused with its documented status and problem code,
# quickly, leaving no workload, process or file behind and the agent
# answering; the held copy's queues must not change. A valid image still
# restores afterwards.
# shellcheck disable=SC2016 # the single-quoted jq programs use jq's $variables
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
AGENT_BIN=${AGENT_BIN:-/sigmig/bin/sigmig-agent}
BIN_DIR=${BIN_DIR:-/sigmig/bin}
PORT=${PORT:-18183}
# Every refusal must come back within this many seconds (a restore that
# fails runs a process up to its first check; TCG is slow).
REFUSAL_BOUND_S=${REFUSAL_BOUND_S:-30}
RSS_SLACK_KB=${RSS_SLACK_KB:-8192}
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"
STATE_DIR=${STATE_DIR:-$WORK/state}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
CTL=$BIN_DIR/sigmig-ctl

need_tools curl jq "$AGENT_BIN" "$BIN_DIR/sigstorm" "$BIN_DIR/sigsend" "$CTL"
start_agent --restore-timeout-ms 120000 --log-level info ||
	{ echo "not ok 1 - agent did not come up"; cat "$WORK/agent.log"; exit 1; }
ok "agent listens on $BASE"

req GET /v1/capabilities
if [ "$(jqb .migration)" != true ]; then
	head -c 4096 /dev/zero >"$WORK/zeros"
	areq POST /v1/restore -H 'Content-Type: application/octet-stream' --data-binary "@$WORK/zeros"
	expect "without the kernel interface any image is 503" 503 kernel_unsupported
	finish
	exit 0
fi

# ---------------------------------------------------------------- a real checkpoint
areq POST /v1/workloads --json '{"program":"sigstorm","args":["--threads","3","--sigpending","100000"]}'
expect "sigstorm started" 201
W=$(jqb .id)
PID=$(jqb .pid)
note_pid "$W" "$PID"
sleep 1
checkpoint_with_signals "$W" "$PID" 300 5
"$CTL" --inspect "$WORK/image" >"$WORK/image.json"
check "the checkpoint has thread, shared and timer records ($(jq -c '{shared, timers, threads: [.threads[].pending]}' "$WORK/image.json"))" \
	jq -e '.valid and .shared > 0 and .timers > 0 and (.threads | length) == 3 and ([.threads[].pending] | add) > 0' "$WORK/image.json"
T0=$(jq -r '.threads[0].index' "$WORK/image.json")

workloads_count() {
	REQ_TIMEOUT=10 afetch "$WORK/list.body" "$WORK/list.headers" GET /v1/workloads
	jq '.workloads | length' "$WORK/list.body"
}

sigstorms() {
	pgrep -x sigstorm | wc -l
}

# Nothing a refusal may leave: a workload, a process, an image file.
left_as_before() {	# WORKLOADS SIGSTORMS
	[ "$(workloads_count)" = "$1" ] && [ "$(sigstorms)" = "$2" ] &&
		! ls "$STATE_DIR"/*.image >/dev/null 2>&1
}

health_ok() {
	REQ_TIMEOUT=5 fetch "$WORK/h.body" "$WORK/h.headers" GET /v1/health
	[ "$FETCH_STATUS" = 200 ]
}

detail_hides_paths() {
	! jqb .detail | grep -qF -e "$STATE_DIR" -e "$BIN_DIR"
}

craft() {	# FIELD=VALUE...: $WORK/crafted is the checkpoint with them set
	cp "$WORK/image" "$WORK/crafted"
	"$CTL" --craft "$WORK/crafted" "$@"
}

# post_crafted NAME STATUS CODE PATH FIELD=VALUE...
post_crafted() {
	case_name=$1
	want=$2
	code=$3
	path=$4
	shift 4
	if ! craft "$@"; then
		not_ok "$case_name: cannot craft $*"
		return 0
	fi
	n_wl=$(workloads_count)
	n_proc=$(sigstorms)
	t0=$(date +%s)
	areq POST "$path" -H 'Content-Type: application/octet-stream' --data-binary "@$WORK/crafted"
	took=$(($(date +%s) - t0))
	expect "$case_name ($*): $want $code: $(jqb .detail 2>/dev/null | head -c 160)" "$want" "$code"
	check "$case_name: the detail names no path of the agent's" detail_hides_paths
	check "$case_name: answered in ${took}s (bound ${REFUSAL_BOUND_S}s)" test "$took" -le "$REFUSAL_BOUND_S"
	check "$case_name: the agent answers /v1/health" health_ok
	check "$case_name: no workload, process or image file left" left_as_before "$n_wl" "$n_proc"
}

RSS0=$(rss_kb "$AGENT_PID")
R_ARGS="/v1/restore?arg=--threads&arg=3&arg=--sigpending&arg=100000"

# ---------------------------------------------------------------- refused by the decoder
post_crafted "thread count over the limit" 400 bad_image "$R_ARGS" nthreads=0xffffffff
post_crafted "shared queue count at the limit, no records behind it" 400 bad_image "$R_ARGS" shared_count=4194304
post_crafted "shared queue count over the limit" 400 bad_image "$R_ARGS" shared_count=0x7fffffff
post_crafted "timer count over the limit" 400 bad_image "$R_ARGS" ntimers=4097
post_crafted "a thread's queue count beyond the image" 400 bad_image "$R_ARGS" thread.0.count=0x7fffffff
post_crafted "two threads with one index" 400 bad_image "$R_ARGS" "thread.1.index=$T0"
post_crafted "the runtime's freeze signal in the shared queue" 400 bad_image "$R_ARGS" shared.0.signo=64
post_crafted "signal 0 in the shared queue" 400 bad_image "$R_ARGS" shared.0.signo=0
post_crafted "a SIGEV_THREAD timer" 400 bad_image "$R_ARGS" timer.0.notify=2
post_crafted "a negative timer id" 400 bad_image "$R_ARGS" timer.0.id=-1
post_crafted "a timer on signal 99" 400 bad_image "$R_ARGS" timer.0.signo=99

# ---------------------------------------------------------------- refused by the restore
post_crafted "a thread index the program does not have" 422 restore_failed "$R_ARGS" thread.0.index=900
post_crafted "a timer aimed at a thread the program does not have" 422 restore_failed "$R_ARGS" \
	timer.0.notify=4 timer.0.thread_index=900
post_crafted "timer id INT_MAX (the restore must not walk to it)" 422 restore_failed "$R_ARGS" \
	timer.0.id=2147483647
post_crafted "a timer on a clock that does not exist" 422 restore_failed "$R_ARGS" timer.0.clock=99

# ---------------------------------------------------------------- into a held copy's queues
areq POST "/v1/restore?hold=1&arg=--threads&arg=3&arg=--sigpending&arg=100000" \
	-H 'Content-Type: application/octet-stream' --data-binary "@$WORK/image"
expect "a valid image restores held" 201
R=$(jqb .id)
note_pid "$R" "$(jqb .pid)"
areq GET "/v1/workloads/$R/signals?limit=100000"
cp "$BODY" "$WORK/held1.json"
# The held copy's timers keep running while it waits (their records may
# come and go, their overruns grow): compare every other record.
records() {	# JSON: every queue's signals but the timers'
	jq -c '[.shared.signals, (.threads[].pending.signals) | map(select(.layout != "timer"))]' "$1"
}
queues_unchanged() {
	areq GET "/v1/workloads/$R/signals?limit=100000"
	[ "$(records "$BODY")" = "$(records "$WORK/held1.json")" ] &&
		state_is "$R" frozen
}
Q="/v1/workloads/$R/requeue"
post_crafted "requeue: a thread count over the limit" 400 bad_image "$Q" nthreads=0xffffffff
check "requeue refused by the decoder: the held copy's queues are unchanged" queues_unchanged
post_crafted "requeue: a thread index the copy does not have" 422 requeue_failed "$Q" thread.0.index=900
check "requeue refused by the copy: its queues are unchanged and it is still held" queues_unchanged
areq DELETE "/v1/workloads/$R"
expect "DELETE the held copy" 200

# ---------------------------------------------------------------- still whole
RSS1=$(rss_kb "$AGENT_PID")
check "agent RSS after every crafted image: ${RSS0} -> ${RSS1} kB (slack ${RSS_SLACK_KB})" \
	test "$RSS1" -le $((RSS0 + RSS_SLACK_KB))
areq POST "$R_ARGS" -H 'Content-Type: application/octet-stream' --data-binary "@$WORK/image"
expect "the valid image still restores" 201
R=$(jqb .id)
note_pid "$R" "$(jqb .pid)"
check "and runs verified" jq -e '.state == "running" and .restore.verified == true' "$BODY"
areq DELETE "/v1/workloads/$R"
expect "DELETE the restored copy" 200
finish
