#!/bin/sh
# The compel parasite (sigmig-peek-parasite) against a plain program
# (peek-target: no sigmig runtime) with real-time and standard signals
# pending, process-wide and in each of its threads: the parasite reads every
# thread's private queue and the process-wide queue from inside the seized
# process. Then the target peeks the same queues itself and drains them:
# the records the parasite returned must equal the target's own peek, byte
# for byte and in order, and the target must dequeue as many as it queued:
# the parasite dequeued nothing, added nothing. (Dequeue order is by signal
# number, not queue order, so the drained bytes are only counted here.)
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-parasite-peek
COUNT=${PARASITE_PEEK_COUNT:-64}
THREADS=${PARASITE_PEEK_THREADS:-3}
rm -rf "$WORK" && mkdir -p "$WORK/parasite"

start_peek_target "$COUNT" "$THREADS"
ok $? "peek-target queued its signals: $(head -n 1 "$WORK/state" 2>/dev/null)"
note "SigQ $(grep SigQ "/proc/$PID/status" | cut -f2), ShdPnd $(grep ShdPnd "/proc/$PID/status" | cut -f2)"
# Not State: the target may be caught running (R) one time, sleeping the next.
status_before=$(grep -E '^(SigPnd|ShdPnd|SigBlk)' "/proc/$PID/status" | tr '\n' ' ')

timeout 120 sigmig-peek-parasite --out "$WORK/parasite" "$PID" >"$WORK/peek.out" 2>"$WORK/peek.err"
rc=$?
ok $rc "sigmig-peek-parasite $PID (rc=$rc): $(tail -n 1 "$WORK/peek.out")"
[ "$rc" -eq 0 ] || tail -n 15 "$WORK/peek.err" | while read -r line; do note "$line"; done
while read -r line; do note "$line"; done <"$WORK/peek.out"

kill -0 "$PID" 2>/dev/null
ok $? "the target is alive after the parasite was cured"
status_after=$(grep -E '^(SigPnd|ShdPnd|SigBlk)' "/proc/$PID/status" | tr '\n' ' ')
[ "$status_before" = "$status_after" ]
ok $? "its pending sets and mask are unchanged: $status_after (before: $status_before)"

touch "$WORK/go"
wait_until 60 grep -q '^done' "$WORK/state"
ok $? "the target peeked and drained its own queues"
grep -q '^done ok' "$WORK/state"
ok $? "it found the records it queued: $(grep -v '^ready' "$WORK/state" | tr '\n' ' ')"

# same_bytes A B: both exist and are equal, byte for byte
same_bytes() { [ -f "$1" ] && [ -f "$2" ] && cmp -s "$1" "$2"; }

tids=$(ls /proc/"$PID"/task 2>/dev/null)
n=0
for f in "$WORK"/self-private.*.bin; do
	tid=${f##*/self-private.}
	tid=${tid%.bin}
	n=$((n + 1))
	same_bytes "$WORK/parasite/private.$tid.bin" "$f"
	ok $? "thread $tid: the parasite's private records = the thread's own peek"
done
np=0
for f in "$WORK"/parasite/private.*.bin; do
	[ -f "$f" ] && np=$((np + 1))
done
[ "$n" -eq "$THREADS" ] && [ "$np" -eq "$THREADS" ]
ok $? "$n thread(s) read their queues, the parasite read $np (want $THREADS; tids $(echo "$tids" | tr '\n' ' '))"
same_bytes "$WORK/parasite/shared.bin" "$WORK/self-shared.bin"
ok $? "the parasite's process-wide records = the target's own peek"
finish
