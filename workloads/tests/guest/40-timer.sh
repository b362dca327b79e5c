#!/bin/sh
# A pending SI_TIMER (si_overrun 2) is delivered after restore with a valid
# si_timerid and its overrun; the timer ids are recreated identical.
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-timer
rm -rf "$WORK" && mkdir -p "$WORK"
SOCK=/run/sigmig/timer.sock
SOCK2=/run/sigmig/timer-restored.sock

timer-restore --ctl "$SOCK" --state "$WORK/state" 2>>"$WORK/err" &
PID=$!
track "$PID"
wait_until 20 test -s "$WORK/state"
ok $? "timer-restore armed its timers: ids $(cat $WORK/state 2>/dev/null)"
sigmig-ctl "$SOCK" FREEZE >/dev/null
reply=$(sigmig-ctl "$SOCK" DUMP --out "$WORK/image")
ok $? "DUMP: $reply"
note "image: $(sigmig-ctl --inspect $WORK/image)"
sigmig-ctl "$SOCK" COMMIT >/dev/null
ok $? "COMMIT"
wait_until 10 exited "$PID"
timer-restore --restore "$WORK/image" --ctl "$SOCK2" --state "$WORK/state" --ledger "$WORK/unused" \
	2>>"$WORK/err" > "$WORK/out"
rc=$?
relay_tap "$WORK/out"
ok "$rc" "restored timer-restore exit status $rc $(cat "$WORK/err")"
finish
