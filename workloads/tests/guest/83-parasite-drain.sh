#!/bin/sh
# The compel parasite moves a plain program's signals out of it and back:
# peek every queue (P1), drain them through the parasite (the records must
# be P1's, byte for byte, and every queue empty afterwards), requeue the
# drained records through a second infection, each thread its own and the
# leader the process-wide ones, peek again (P2 = P1: same records, same
# order); once more with one rt_(tg)sigqueueinfo() per record (a kernel
# without the batched write()), and let the target check its queues
# itself: it must find exactly the signals it queued.
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-parasite-drain
COUNT=${PARASITE_DRAIN_COUNT:-64}
THREADS=${PARASITE_DRAIN_THREADS:-3}
rm -rf "$WORK" && mkdir -p "$WORK/p1" "$WORK/drained" "$WORK/p2" "$WORK/drained2" "$WORK/p3"

# every queue of $1 empty: SigPnd of each thread and ShdPnd all zero
queues_empty() {
	! grep -h -E '^(SigPnd|ShdPnd):' /proc/"$1"/task/*/status | grep -qv ':[[:space:]]*0*$'
}

# same_dirs A B: the same files, equal byte for byte
same_dirs() {
	[ "$(ls "$1")" = "$(ls "$2")" ] || return 1
	for f in "$1"/*.bin; do cmp -s "$f" "$2/${f##*/}" || return 1; done
}

start_peek_target "$COUNT" "$THREADS"
ok $? "peek-target queued its signals: $(head -n 1 "$WORK/state" 2>/dev/null)"
pending_before=$(grep -h -E '^(SigPnd|ShdPnd)' /proc/"$PID"/task/*/status | sort | tr '\n' ' ')

parasite p1 --out "$WORK/p1"
ok $? "peek through the parasite: $(tail -n 1 "$WORK/p1.out")"
parasite drain --drain --out "$WORK/drained"
ok $? "drain through the parasite: $(tail -n 1 "$WORK/drain.out")"
same_dirs "$WORK/p1" "$WORK/drained"
ok $? "the drained records are the peeked ones, byte for byte, in queue order"
queues_empty "$PID"
ok $? "every queue of the target is empty after the drain"
kill -0 "$PID" 2>/dev/null
ok $? "the target is alive after two infections"

parasite requeue --requeue "$WORK/drained"
ok $? "requeue through the parasite: $(tail -n 1 "$WORK/requeue.out")"
pending_after=$(grep -h -E '^(SigPnd|ShdPnd)' /proc/"$PID"/task/*/status | sort | tr '\n' ' ')
[ "$pending_before" = "$pending_after" ]
ok $? "the pending sets are back: $pending_after"
parasite p2 --out "$WORK/p2"
ok $? "peek again: $(tail -n 1 "$WORK/p2.out")"
same_dirs "$WORK/p1" "$WORK/p2"
ok $? "every queue holds what it held before, byte for byte and in order"

parasite drain2 --drain --out "$WORK/drained2"
queues_empty "$PID" && same_dirs "$WORK/p1" "$WORK/drained2"
ok $? "drained again: every queue empty, the same records"
parasite requeue2 --requeue "$WORK/drained2" --requeue-with sigqueueinfo
ok $? "requeue one rt_(tg)sigqueueinfo() per record: $(tail -n 1 "$WORK/requeue2.out")"
parasite p3 --out "$WORK/p3"
same_dirs "$WORK/p1" "$WORK/p3"
ok $? "every queue holds what it held before, byte for byte and in order"

touch "$WORK/go"
wait_until 60 grep -q '^done' "$WORK/state"
ok $? "the target peeked and drained its own queues"
grep -q '^done ok' "$WORK/state"
ok $? "it found exactly the signals it queued: $(grep -v '^ready' "$WORK/state" | tr '\n' ' ')"
finish
