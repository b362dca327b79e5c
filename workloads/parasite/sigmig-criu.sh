#!/bin/sh
# shellcheck shell=sh disable=SC3043 # busybox ash, the guest's shell, has local
# CRIU moves the process, the compel parasite moves its pending signals.
#
#   sigmig-criu dump [--leave-frozen] [--external KEY]... [--max-records N] PID DIR
#   sigmig-criu restore [--hold] [--inherit-fd SPEC]... [--max-records N] DIR
#   sigmig-criu abort [--max-records N] PID DIR
#   sigmig-criu delta PID DIR | requeue-held PID DIR | release PID DIR
#   sigmig-criu criu-dump PID DIR | criu-restore DIR     (CRIU alone)
#
# The process is held without a single signal sent to it: SIGSTOP/SIGCONT
# would queue a SIGCONT record in a program that blocks or catches SIGCONT,
# and flush pending stop signals (or a pending SIGCONT) from its queues.
# ptrace holds it while the parasite or CRIU works on it, and a cgroup v2
# freezer of its own (/sys/fs/cgroup/sigmig-criu/PID) holds it between
# them; the parasite thaws that cgroup once it has seized every thread and
# freezes it again before letting go.
#
# dump: move the process into its hold cgroup, drain every queue through
# the parasite into DIR/signals (each thread's own queue, the leader also
# the process-wide one, records in queue order; the parasite freezes the
# cgroup before it detaches), then `criu dump --freeze-cgroup` into
# DIR/criu, which finds the queues empty. If the drain or criu fails,
# whatever left the process goes back into it, in front of anything that
# arrived since, it goes back to its own cgroup and continues: nothing
# lost. --leave-frozen keeps the original, drained and frozen, for a
# two-phase move: `abort` puts the records back and continues it; kill it
# once the copy runs.
# restore: `criu restore`, whose pre-resume action freezes the copy in its
# hold cgroup before CRIU lets go of it; the records back into the queues
# they came from, each by its own thread and in front of what CRIU itself
# queued (signals that reached the frozen process after the drain), every
# queue verified by a peek; then the copy goes into the cgroup the original
# was in (DIR/cgroup) and runs.
# --external / --inherit-fd: CRIU's own options (a file the process has
# open that stays behind, and the descriptor that stands for it on restore).
# restore --hold: the copy stays frozen in its hold cgroup, records requeued
# and verified; release PID DIR lets it run, requeue-held PID DIR puts
# DIR/signals' records behind what it holds (still held).
# delta PID DIR: what reached a --leave-frozen original since its dump,
# drained into DIR/signals; then the original is killed (it stays frozen
# until then, so nothing of it runs). It is sealed (SFD_IOC_SEAL) before
# that drain: a send after it fails with ESRCH rather than being lost with
# the process (sealed=1; 0 on a kernel without the seal).
# criu-dump / criu-restore: the same moves by CRIU alone (its
# PTRACE_PEEKSIGINFO dump and rt_sigqueueinfo restore), for comparison.
#
# stdout: one line per command, "KEY=VALUE ..." (pid, records, the phases
# and total_us, which they add up to). Logs in DIR.
set -u
PATH=/sigmig/bin:$PATH
MAX_RECORDS=131072

die() { echo "sigmig-criu: $*" >&2; exit 1; }
usage() {
	cat >&2 <<'USAGE'
usage: sigmig-criu dump [--leave-frozen] [--external KEY]... [--max-records N] PID DIR
       sigmig-criu restore [--hold] [--inherit-fd SPEC]... [--max-records N] DIR
       sigmig-criu abort [--max-records N] PID DIR
       sigmig-criu delta PID DIR | requeue-held PID DIR | release PID DIR
       sigmig-criu criu-dump PID DIR | criu-restore DIR
USAGE
	exit 2
}

CGROOT=/sys/fs/cgroup/sigmig-criu	# the hold cgroup of PID is $CGROOT/PID

# own_cgroup PID: the cgroup v2 path PID is in
own_cgroup() { sed -n 's/^0:://p' "/proc/$1/cgroup"; }

# enter_hold PID: PID into a cgroup of its own, its old one saved in DIR
enter_hold() {
	local cg
	cg=$CGROOT/$1
	[ -f /sys/fs/cgroup/cgroup.controllers ] ||
		die "no cgroup v2 hierarchy at /sys/fs/cgroup: cannot hold $1"
	own_cgroup "$1" >"$DIR/cgroup"
	[ -s "$DIR/cgroup" ] || die "cannot read the cgroup of $1"
	mkdir -p "$cg" || die "cannot create $cg"
	echo "$1" >"$cg/cgroup.procs" || die "cannot move $1 into $cg"
}

# leave_hold PID: PID thawed and into the cgroup the original was in
leave_hold() {
	local cg back=/
	cg=$CGROOT/$1
	read -r back <"$DIR/cgroup" 2>/dev/null
	[ -n "$back" ] || back=/
	echo 0 >"$cg/cgroup.freeze" 2>/dev/null
	echo "$1" >"/sys/fs/cgroup${back%/}/cgroup.procs" 2>/dev/null ||
		echo "sigmig-criu: $1 stays in $cg" >&2
	rmdir "$cg" 2>/dev/null
	return 0
}

# frozen CG: cgroup.events says so (read by the shell itself: a fork and
# exec cost about 15 ms in a TCG guest, and this runs while the copy waits)
frozen() {
	local key value
	while read -r key value; do
		[ "$key $value" != "frozen 1" ] || return 0
	done <"$1/cgroup.events"
	return 1
}

wait_frozen() {	# wait_frozen CG: bounded by 10 s
	local tries=0
	while ! frozen "$1"; do
		tries=$((tries + 1))
		[ "$tries" -le 1000 ] || return 1
		sleep 0.01
	done
}

# write_hold_script: CRIU's pre-resume action, run while CRIU still holds
# the copy in ptrace stops: into its hold cgroup, which is frozen, so that
# it stays held once CRIU detaches.
write_hold_script() {
	cat >"$DIR/hold-on-resume" <<HOLD
#!/bin/sh
[ "\$CRTOOLS_SCRIPT_ACTION" = pre-resume ] || exit 0
cg=$CGROOT/\$CRTOOLS_INIT_PID
mkdir -p "\$cg" && echo "\$CRTOOLS_INIT_PID" >"\$cg/cgroup.procs" &&
	echo 1 >"\$cg/cgroup.freeze"
HOLD
	chmod +x "$DIR/hold-on-resume"
}

parasite() {	# parasite LOG ARGS... PID
	local log="$1"
	shift
	timeout 600 sigmig-peek-parasite --max-records "$MAX_RECORDS" "$@" \
		>"$DIR/$log.out" 2>"$DIR/$log.err"
}

has_records() {	# has_records DIR: any record saved there (no fork)
	local f
	for f in "$1"/*.bin; do
		[ ! -s "$f" ] || return 0
	done
	return 1
}

records_in() {	# records_in DIR: the records saved there
	cat "$1"/*.bin 2>/dev/null | wc -c | awk '{ print $1 / 128 }'
}

# put_back PID: the drained records into the held original, continue it
put_back() {
	local rc=0
	if has_records "$DIR/signals"; then
		parasite put-back --requeue "$DIR/signals" --thaw "$CGROOT/$1" \
			"$1" || rc=1
	fi
	leave_hold "$1"
	[ "$rc" = 0 ] || echo "sigmig-criu: the drained records could not all go back" \
		"($(tail -n 1 "$DIR/put-back.err" 2>/dev/null)), they are in $DIR/signals" >&2
	return "$rc"
}

cmd_dump() {	# PID
	local t0 t1 t2 cg
	PID=$1
	cg=$CGROOT/$PID
	kill -0 "$PID" 2>/dev/null || die "no process $PID"
	mkdir -p "$DIR/signals" "$DIR/criu" || die "cannot create $DIR"
	enter_hold "$PID"
	t0=$(now-us)
	if ! parasite drain --drain --out "$DIR/signals" --freeze "$cg" "$PID"; then
		put_back "$PID"
		die "drain failed: $(tail -n 1 "$DIR/drain.err"), $PID continues"
	fi
	t1=$(now-us)
	# shellcheck disable=SC2086 # CRIU_ARGS: options without spaces
	if ! criu dump -t "$PID" -D "$DIR/criu" -o dump.log --freeze-cgroup "$cg" \
		$KEEP $CRIU_ARGS >/dev/null 2>&1; then
		put_back "$PID"
		die "criu dump failed (see $DIR/criu/dump.log), $PID continues with its signals"
	fi
	t2=$(now-us)
	[ -n "$KEEP" ] || rmdir "$cg" 2>/dev/null
	echo "dump pid=$PID records=$(records_in "$DIR/signals")" \
		"drain_us=$((t1 - t0)) criu_us=$((t2 - t1)) total_us=$((t2 - t0))"
}

cmd_restore() {
	local t0 t1 t2 late cg
	if [ ! -d "$DIR/criu" ] || [ ! -d "$DIR/signals" ]; then
		die "$DIR holds no dump"
	fi
	write_hold_script
	t0=$(now-us)
	rm -f "$DIR/restored.pid"
	# shellcheck disable=SC2086 # CRIU_ARGS: options without spaces
	# --manage-cgroups=ignore: CRIU would put the copy back into the
	# original's hold cgroup, frozen while a --leave-frozen original waits
	criu restore -D "$DIR/criu" -o restore.log -d --pidfile "$DIR/restored.pid" \
		--manage-cgroups=ignore --action-script "$DIR/hold-on-resume" \
		$CRIU_ARGS >/dev/null 2>&1 ||
		die "criu restore failed (see $DIR/criu/restore.log)"
	t1=$(now-us)
	PID=""	# criu writes the pid file without a newline: read fails at EOF
	read -r PID <"$DIR/restored.pid" 2>/dev/null
	[ -n "$PID" ] || die "criu wrote no pid file"
	cg=$CGROOT/$PID
	if ! wait_frozen "$cg"; then
		kill -KILL "$PID"
		die "the restored $PID was not held frozen in $cg; the copy is killed"
	fi
	# held: the parasite runs even with no records, to find (late, and the
	# records in DIR/late) what CRIU itself queued, which the commit delta
	# then leaves out
	if [ -z "$HOLD" ] && ! has_records "$DIR/signals"; then
		: >"$DIR/requeue.out"
		echo 0 >"$cg/cgroup.freeze" || { kill -KILL "$PID"; die "cannot thaw $cg"; }
	elif ! mkdir -p "$DIR/late" ||
		! parasite requeue --requeue "$DIR/signals" --out "$DIR/late" --thaw "$cg" \
		${HOLD:+--freeze} ${HOLD:+"$cg"} "$PID"; then
		kill -KILL "$PID"
		die "requeue failed: $(tail -n 1 "$DIR/requeue.err"); the copy is killed," \
			"the records stay in $DIR/signals"
	fi
	# the copy runs from here unless held: the parasite thawed its cgroup
	# (and froze it again with --hold) before it let go
	t2=$(now-us)
	[ -n "$HOLD" ] || leave_hold "$PID"
	late=$(awk '/^requeued/ { n += $6 } END { print n + 0 }' "$DIR/requeue.out")
	echo "restore pid=$PID records=$(records_in "$DIR/signals") late=$late" \
		"criu_us=$((t1 - t0)) requeue_us=$((t2 - t1)) total_us=$((t2 - t0))"
}

cmd_abort() {	# PID: the original of a dump --leave-frozen
	PID=$1
	put_back "$PID" || exit 1
	echo "abort pid=$PID records=$(records_in "$DIR/signals")"
}

cmd_delta() {	# PID: a --leave-frozen original
	local cg
	PID=$1
	cg=$CGROOT/$PID
	mkdir -p "$DIR/signals" || die "cannot create $DIR"
	# sealed first: what reaches it after the drain fails with ESRCH
	if ! parasite delta --drain --seal --out "$DIR/signals" --thaw "$cg" --freeze "$cg" \
		"$PID"; then
		kill -KILL "$PID"
		die "the drain of $PID failed: $(tail -n 1 "$DIR/delta.err"); it is killed"
	fi
	kill -KILL "$PID"
	rmdir "$cg" 2>/dev/null
	echo "delta pid=$PID records=$(records_in "$DIR/signals")" \
		"sealed=$(grep -qx 'seal 0' "$DIR/delta.out" && echo 1 || echo 0)"
}

cmd_requeue_held() {	# PID: a copy restored with --hold
	local cg
	PID=$1
	cg=$CGROOT/$PID
	has_records "$DIR/signals" || { echo "requeue-held pid=$PID records=0"; return 0; }
	parasite requeue --requeue "$DIR/signals" --behind --thaw "$cg" --freeze "$cg" "$PID" ||
		die "requeue into $PID failed: $(tail -n 1 "$DIR/requeue.err")"
	echo "requeue-held pid=$PID records=$(records_in "$DIR/signals")"
}

cmd_release() {	# PID: a copy restored with --hold
	PID=$1
	[ -d "$CGROOT/$PID" ] || die "$PID is not held"
	leave_hold "$PID"
	echo "release pid=$PID"
}

cmd_criu_dump() {	# PID
	local t0 t1
	PID=$1
	mkdir -p "$DIR/criu" || die "cannot create $DIR"
	t0=$(now-us)
	criu dump -t "$PID" -D "$DIR/criu" -o dump.log >/dev/null 2>&1 ||
		die "criu dump failed (see $DIR/criu/dump.log)"
	t1=$(now-us)
	echo "criu-dump pid=$PID criu_us=$((t1 - t0)) total_us=$((t1 - t0))"
}

cmd_criu_restore() {
	local t0 t1
	t0=$(now-us)
	rm -f "$DIR/restored.pid"
	criu restore -D "$DIR/criu" -o restore.log -d --pidfile "$DIR/restored.pid" \
		>/dev/null 2>&1 || die "criu restore failed (see $DIR/criu/restore.log)"
	t1=$(now-us)
	echo "criu-restore pid=$(cat "$DIR/restored.pid") criu_us=$((t1 - t0))" \
		"total_us=$((t1 - t0))"
}

main() {
	local cmd="${1:-}"
	[ $# -ge 2 ] || usage
	shift
	KEEP=""
	HOLD=""
	CRIU_ARGS=""
	while [ $# -gt 0 ]; do
		case "$1" in
		--leave-frozen) [ "$cmd" = dump ] || usage; KEEP=--leave-running; shift ;;
		--external) [ "$cmd" = dump ] || usage
			CRIU_ARGS="$CRIU_ARGS --external ${2:?}"; shift 2 ;;
		--hold) [ "$cmd" = restore ] || usage; HOLD=1; shift ;;
		--inherit-fd) [ "$cmd" = restore ] || usage
			CRIU_ARGS="$CRIU_ARGS --inherit-fd ${2:?}"; shift 2 ;;
		--max-records) MAX_RECORDS=${2:?}; shift 2 ;;
		-*) usage ;;
		*) break ;;
		esac
	done
	case "$cmd:$#" in
	dump:2) DIR=$2; cmd_dump "$1" ;;
	abort:2) DIR=$2; cmd_abort "$1" ;;
	delta:2) DIR=$2; cmd_delta "$1" ;;
	requeue-held:2) DIR=$2; cmd_requeue_held "$1" ;;
	release:2) DIR=$2; cmd_release "$1" ;;
	restore:1) DIR=$1; cmd_restore ;;
	criu-dump:2) DIR=$2; cmd_criu_dump "$1" ;;
	criu-restore:1) DIR=$1; cmd_criu_restore ;;
	*) usage ;;
	esac
}

main "$@"
