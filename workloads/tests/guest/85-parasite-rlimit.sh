#!/bin/sh
# Records requeued past the target's RLIMIT_SIGPENDING: a copy that holds
# its moved records gets the commit delta behind them, more than the
# original ever held at once. A plain program (no runtime, no
# CAP_SYS_RESOURCE) with a limit that fits its queues once but not twice:
# its records drained, requeued, then requeued again behind themselves.
# The second requeue must write every record (the driver raises the
# limit for it), leave the program its own limit, and a failed raise must
# write none.
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-parasite-rlimit
COUNT=100
THREADS=3
LIMIT=700
rm -rf "$WORK" && mkdir -p "$WORK/drained"

# the records queued for the target's user, and its RLIMIT_SIGPENDING soft limit
queued() { sed -n 's/^SigQ:[[:space:]]*\([0-9]*\)\/.*/\1/p' /proc/"$PID"/status; }
soft_limit() { awk '/^Max pending signals/ { print $4 }' /proc/"$PID"/limits; }

setsid withrlimit "$LIMIT" peek-target --dir "$WORK" --count "$COUNT" --threads "$THREADS" \
	</dev/null >"$WORK/out" 2>&1 &
PID=$!
track "$PID"
wait_until 30 grep -q '^ready' "$WORK/state"
ok $? "a program with RLIMIT_SIGPENDING $LIMIT queued its signals: $(head -n 1 "$WORK/state" 2>/dev/null)"

parasite drain --drain --out "$WORK/drained"
records=$(awk '/^total/ { print $2 }' "$WORK/drain.out")
[ "${records:-0}" -gt $((LIMIT / 2)) ] && [ "$records" -lt "$LIMIT" ]
ok $? "drained $records records: they fit under $LIMIT once, not twice"
parasite requeue --requeue "$WORK/drained"
ok $? "requeued once: $(tail -n 1 "$WORK/requeue.out")"

before=$(queued)
parasite behind --requeue "$WORK/drained" --behind
ok $? "requeued again behind them, past the limit: $(tail -n 1 "$WORK/behind.out")"
grep -q 'raised from' "$WORK/behind.err"
ok $? "the driver raised the limit for it: $(grep 'raised from' "$WORK/behind.err")"
after=$(queued)
# a standard signal already pending merges with its record (no second entry)
merged=$(awk '/^requeued/ { n += $8 } END { print n + 0 }' "$WORK/behind.out")
[ "$((after - before))" = "$((records - merged))" ]
ok $? "every record went in: $before queued for the user before, $after after ($records records, $merged standard ones merged)"
[ "$(soft_limit)" = "$LIMIT" ]
ok $? "the program keeps its own limit afterwards ($(soft_limit))"
[ "$(grep -c '^requeued.* verified$' "$WORK/behind.out")" = $((THREADS + 1)) ]
ok $? "every queue verified behind what it held ($(grep -c '^requeued' "$WORK/behind.out") queues)"

# a raise that cannot be made (the driver without CAP_SYS_RESOURCE, which
# withrlimit drops): nothing is written, and the driver says why
before=$(queued)
withrlimit 100000 sigmig-peek-parasite --requeue "$WORK/drained" --behind "$PID" \
	>"$WORK/nocap.out" 2>"$WORK/nocap.err"
rc=$?
[ "$rc" != 0 ] && [ "$(queued)" = "$before" ] && grep -q 'nothing requeued' "$WORK/nocap.err"
ok $? "a driver that cannot raise it requeues nothing (rc=$rc, $before queued before, $(queued) after): $(tail -n 1 "$WORK/nocap.err")"
[ "$(soft_limit)" = "$LIMIT" ]
ok $? "and the program's limit is untouched ($(soft_limit))"
finish
