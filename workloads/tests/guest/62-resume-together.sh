#!/bin/sh
# After a restore every thread resumes at once: the restored signals of one
# thread do not hold back the others (resume-together.c).
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-resume-together
rm -rf "$WORK" && mkdir -p "$WORK"
SOCK=/run/sigmig/resume-together.sock
SOCK2=/run/sigmig/resume-together-restored.sock

resume-together --ctl "$SOCK" --state "$WORK/state" --go "$WORK/go" 2>>"$WORK/err" &
PID=$!
track "$PID"
# "running" comes as the runtime starts, before its two threads have
# registered: a FREEZE then would leave a late one out of it
both_registered() {
	sigmig-ctl "$SOCK" STATUS 2>/dev/null | grep -q '"index":0,.*"index":1,'
}
wait_until 20 both_registered
ok $? "resume-together running with both threads registered (pid $PID)"
reply=$(sigmig-ctl "$SOCK" FREEZE)
ok $? "FREEZE: $reply"
touch "$WORK/go"
wait_until 20 test -s "$WORK/state"
ok $? "signals queued to both parked threads: $(grep SigQ "/proc/$PID/status")"
reply=$(sigmig-ctl "$SOCK" DUMP --out "$WORK/image")
ok $? "DUMP: $reply"
sigmig-ctl "$SOCK" COMMIT >/dev/null
ok $? "COMMIT"
wait_until 10 exited "$PID"
resume-together --restore "$WORK/image" --ctl "$SOCK2" 2>>"$WORK/err" >"$WORK/out"
rc=$?
relay_tap "$WORK/out"
ok "$rc" "restored resume-together exit status $rc $(cat "$WORK/err")"
finish
