# shellcheck shell=sh disable=SC3043 # busybox ash, the guest's shell, has local
# Shared helpers for the workloads guest tests (busybox sh). Sourced.
set -u
PATH=/sigmig/bin:$PATH
TAP_N=0
TAP_FAILED=0
PIDS=""

ok() {	# ok COND_STATUS NAME: status 0 = pass
	TAP_N=$((TAP_N + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $TAP_N - $2"
	else
		echo "not ok $TAP_N - $2"
		TAP_FAILED=1
	fi
}

note() { echo "# $*"; }

meminfo() {
	note "mem: $(grep -E '^(MemFree|Slab|Shmem):' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"
}

# relay_tap FILE: the ok / not ok lines of a program's own TAP as ours
relay_tap() {
	while read -r line; do
		case "$line" in
		"ok "*) ok 0 "$(echo "${line#ok }" | sed 's/^[0-9]* *- //')" ;;
		"not ok "*) ok 1 "$(echo "${line#not ok }" | sed 's/^[0-9]* *- //')" ;;
		esac
	done <"$1"
}

finish() {
	cleanup
	echo "1..$TAP_N"
	exit $TAP_FAILED
}

cleanup() {
	for p in $PIDS; do
		kill -KILL "$p" 2>/dev/null
	done
	PIDS=""
}
trap cleanup EXIT INT TERM

track() { PIDS="$PIDS $1"; }

# wait_until SECONDS COMMAND...: poll every 0.2 s, bounded by wall-clock time
wait_until() {
	local deadline=$(( $(date +%s) + $1 ))
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -ge "$deadline" ] && return 1
		sleep 0.2
	done
	return 0
}

json_field() {	# json_field NAME < json
	sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" | tr -d '"'
}

status_is() {	# status_is SOCK STATE
	sigmig-ctl "$1" STATUS 2>/dev/null | grep -q "\"state\":\"$2\""
}

exited() { ! kill -0 "$1" 2>/dev/null; }

# start_storm SOCK LEDGER [extra args]: sets STORM_PID
start_storm() {
	local sock="$1" ledger="$2"
	shift 2
	${STORM:-sigstorm} --threads 4 --ctl "$sock" --ledger "$ledger" "$@" 2>>"$WORK/storm.err" &
	STORM_PID=$!
	track "$STORM_PID"
	wait_until 20 status_is "$sock" running
}

# pause_sender LOG: SIGUSR1, then wait for its "P" line (last line once paused)
pause_sender() {
	kill -USR1 "$SENDER_PID"
	wait_until 30 sh -c "tail -n 1 '$1' | grep -q '^P'"
}

# start_sender PIDFILE LOG [extra args]: sets SENDER_PID
start_sender() {
	local pidfile="$1" log="$2"
	shift 2
	sigsend --pid-file "$pidfile" --log "$log" --rate "${SEND_RATE:-2000}" "$@" 2>>"$WORK/send.err" &
	SENDER_PID=$!
	track "$SENDER_PID"
}

# parasite LOG ARGS...: sigmig-peek-parasite ARGS on $PID, its stdout and
# stderr in $WORK/LOG.out and .err; on failure the last lines as notes
parasite() {	# LOG ARGS...
	log=$1
	shift
	timeout 120 sigmig-peek-parasite "$@" "$PID" >"$WORK/$log.out" 2>"$WORK/$log.err"
	rc=$?
	[ "$rc" -eq 0 ] || tail -n 10 "$WORK/$log.err" | while read -r line; do note "$line"; done
	return "$rc"
}

# start_peek_target COUNT THREADS [TIMERS]: a plain program (no runtime)
# with its signals queued in every thread and process-wide (and TIMERS
# timer signals pending), in $WORK; sets PID
start_peek_target() {
	setsid peek-target --dir "$WORK" --count "$1" --threads "$2" \
		--timers "${3:-0}" </dev/null >"$WORK/out" 2>&1 &
	PID=$!
	track "$PID"
	wait_until 30 grep -q '^ready' "$WORK/state"
}
