#!/bin/sh
# CRIU + the parasite (sigmig-criu) move a plain program (peek-target, no
# sigmig runtime: 3 threads, real-time and standard signals in every
# thread's queue and process-wide, the signals of 2 POSIX timers): dump drains every queue through the
# parasite (CRIU then finds them empty), restore puts each record back from
# the thread it belongs to and verifies. Byte for byte and in order:
# P1 = a peek before, the dump's records, P2 = a peek of the restored copy;
# then the copy checks its queues itself, and that each timer's record is
# its own entry again (fired once more, it raises the overrun instead of
# queueing a second record). Before that, on a second target,
# the two-phase rule: a dump that CRIU fails puts the records back and the
# original continues; an abort after `dump --leave-frozen` puts them back
# in front of signals that reached the frozen original meanwhile. No signal
# of its own reaches the target at any step (it blocks SIGCONT, so a
# SIGSTOP/SIGCONT hold would show up as an extra record).
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-criu-sigmig
COUNT=${CRIU_SIGMIG_COUNT:-256}
THREADS=${CRIU_SIGMIG_THREADS:-3}
rm -rf "$WORK" && mkdir -p "$WORK"

same_dirs() {	# same_dirs A B: the same files, equal byte for byte
	[ "$(ls "$1")" = "$(ls "$2")" ] || return 1
	for f in "$1"/*.bin; do cmp -s "$f" "$2/${f##*/}" || return 1; done
}

peek() {	# peek DIR: every queue of $PID into DIR
	mkdir -p "$1" && timeout 120 sigmig-peek-parasite --out "$1" "$PID" >"$1.out" 2>&1
}

show_err() { tail -n 5 "$1" 2>/dev/null | while read -r line; do note "$line"; done; }

# running PID: out of sigmig-criu's hold cgroup, not stopped
running() {
	! grep -q sigmig-criu "/proc/$1/cgroup" &&
		! grep -q '^State:[[:space:]]*T' "/proc/$1/status"
}

held_frozen() { grep -qx 'frozen 1' "/sys/fs/cgroup/sigmig-criu/$1/cgroup.events"; }

# --- the two-phase rule, on a target of its own ---
MAIN_WORK=$WORK
WORK=$MAIN_WORK/abort
mkdir -p "$WORK"
start_peek_target 32 2 2
ok $? "a second target queued its signals: $(head -n 1 "$WORK/state" 2>/dev/null)"
peek "$WORK/p1"
mkdir -p "$WORK/fail/criu/dump.log"	# criu cannot open its log: it fails after the drain
! sigmig-criu dump "$PID" "$WORK/fail" >"$WORK/fail.out" 2>"$WORK/fail.err" &&
	grep -q 'continues with its signals' "$WORK/fail.err"
ok $? "a failed criu dump is reported: $(tail -n 1 "$WORK/fail.err")"
wait_until 10 running "$PID"
ok $? "the original continues"
peek "$WORK/p-fail" && same_dirs "$WORK/p1" "$WORK/p-fail"
ok $? "its queues hold what they held before, byte for byte and in order"

sigmig-criu dump --leave-frozen "$PID" "$WORK/kept" >"$WORK/kept.out" 2>"$WORK/kept.err"
ok $? "dump --leave-frozen: $(cat "$WORK/kept.out")"
show_err "$WORK/kept.err"
held_frozen "$PID"
ok $? "the original is left frozen"
kill -s 41 "$PID" && kill -s 41 "$PID"	# not a signal the target queues
sigmig-criu abort "$PID" "$WORK/kept" >"$WORK/abort.out" 2>"$WORK/abort.err"
ok $? "abort: $(cat "$WORK/abort.out")"
show_err "$WORK/abort.err"
wait_until 10 running "$PID"
ok $? "the original continues after the abort"
peek "$WORK/p-abort"
n=$(stat -c %s "$WORK/p1/shared.bin")
after=$(stat -c %s "$WORK/p-abort/shared.bin")
head -c "$n" "$WORK/p-abort/shared.bin" | cmp -s - "$WORK/p1/shared.bin" &&
	[ "$after" -eq $((n + 256)) ]
ok $? "its process-wide queue: the drained records in order, then the 2 sent while it was frozen ($n + 256 = $after bytes)"
for f in "$WORK"/p1/private.*.bin; do
	cmp -s "$f" "$WORK/p-abort/${f##*/}" || break
done
ok $? "each thread's queue: the drained records, byte for byte"
kill -KILL "$PID"

# --- the move ---
WORK=$MAIN_WORK
start_peek_target "$COUNT" "$THREADS" 2
ok $? "peek-target queued its signals: $(head -n 1 "$WORK/state" 2>/dev/null)"
peek "$WORK/p1"
ok $? "P1, a peek through the parasite: $(tail -n 1 "$WORK/p1.out")"
ORIG=$PID
sigmig-criu dump "$PID" "$WORK/move" >"$WORK/dump.out" 2>"$WORK/dump.err"
ok $? "sigmig-criu dump: $(cat "$WORK/dump.out")"
show_err "$WORK/dump.err"
same_dirs "$WORK/p1" "$WORK/move/signals"
ok $? "the dumped records are P1's, byte for byte and in queue order"
wait_until 10 exited "$ORIG"
ok $? "the dumped original is gone"

sigmig-criu restore "$WORK/move" >"$WORK/restore.out" 2>"$WORK/restore.err"
ok $? "sigmig-criu restore: $(cat "$WORK/restore.out")"
show_err "$WORK/restore.err"
PID=$(cat "$WORK/move/restored.pid" 2>/dev/null)
track "$PID"
[ "$PID" = "$ORIG" ] && wait_until 10 running "$PID"
ok $? "the copy runs as $PID"
peek "$WORK/p2" && same_dirs "$WORK/p1" "$WORK/p2"
ok $? "P2, a peek of the copy, equals P1: every queue, byte for byte and in order"

touch "$WORK/go"
wait_until 60 grep -q '^done' "$WORK/state"
ok $? "the copy peeked and drained its own queues"
grep -q '^done ok' "$WORK/state"
ok $? "it found exactly the signals it queued: $(grep -v '^ready' "$WORK/state" | tr '\n' ' ')"
finish
