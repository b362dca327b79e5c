#!/bin/sh
# CRIU alone, on a plain program (criu-pending: no sigmig runtime) with
# 1000 process-wide and 1000 thread-directed real-time signals pending:
# dump, restore, then the program drains its queues and checks each record's
# signal, si_code, sender and value, in order. The baseline the CRIU + sigmig
# engine is measured against; it fails if CRIU cannot dump or restore here.
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-criu-pending
COUNT=${CRIU_PENDING_COUNT:-1000}
rm -rf "$WORK" && mkdir -p "$WORK/img"

setsid criu-pending --state "$WORK/state" --count "$COUNT" </dev/null >"$WORK/out" 2>&1 &
PID=$!
track "$PID"
wait_until 30 grep -q '^ready' "$WORK/state"
ok $? "criu-pending queued $COUNT + $COUNT signals: $(head -n 1 "$WORK/state" 2>/dev/null)"
note "SigQ $(grep SigQ "/proc/$PID/status" | cut -f2), ShdPnd $(grep ShdPnd "/proc/$PID/status" | cut -f2)"

criu dump -t "$PID" -D "$WORK/img" -o dump.log -v4 >/dev/null 2>&1
rc=$?
ok $rc "criu dump -t $PID (rc=$rc)"
[ "$rc" -eq 0 ] || tail -n 15 "$WORK/img/dump.log" | while read -r line; do note "$line"; done
wait_until 10 exited "$PID"
gone=$?
ok $gone "the dumped process is gone"
# what answers the drain below must be the restored copy, never the original
[ "$gone" -eq 0 ] || { kill -KILL "$PID"; wait_until 10 exited "$PID"; }

criu restore -D "$WORK/img" -d -o restore.log -v4 >/dev/null 2>&1
rc=$?
ok $rc "criu restore -d (rc=$rc)"
[ "$rc" -eq 0 ] || tail -n 15 "$WORK/img/restore.log" | while read -r line; do note "$line"; done

kill -USR1 "$PID" 2>/dev/null
wait_until 30 grep -q '^done' "$WORK/state"
ok $? "the restored process drained its queues"
grep -q "^shared $COUNT ok" "$WORK/state"
ok $? "process-wide queue after restore: $(grep '^shared' "$WORK/state")"
grep -q "^private $COUNT ok" "$WORK/state"
ok $? "thread-directed queue after restore: $(grep '^private' "$WORK/state")"
finish
