#!/bin/sh
# Signals pending without a queue entry (sent over RLIMIT_SIGPENDING) are
# found by the dump and delivered after restore with the siginfo the source
# kernel would have given them (SI_USER, si_pid 0, si_uid 0).
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-unqueued
rm -rf "$WORK" && mkdir -p "$WORK"
SOCK=/run/sigmig/unqueued.sock
SOCK2=/run/sigmig/unqueued-restored.sock

unqueued-restore --ctl "$SOCK" --state "$WORK/state" 2>>"$WORK/err" &
PID=$!
track "$PID"
wait_until 20 test -s "$WORK/state"
test "$(cat "$WORK/state" 2>/dev/null)" = ready
ok $? "unqueued-restore filled RLIMIT_SIGPENDING and sent two signals over it: $(cat "$WORK/state" 2>/dev/null)"
# The freeze signals themselves are over the limit: the runtime lifts it.
reply=$(sigmig-ctl "$SOCK" FREEZE)
ok $? "FREEZE at RLIMIT_SIGPENDING: $reply"
reply=$(sigmig-ctl "$SOCK" DUMP --out "$WORK/image")
ok $? "DUMP: $reply"
note "image: $(sigmig-ctl --inspect "$WORK/image")"
sigmig-ctl "$SOCK" COMMIT >/dev/null
ok $? "COMMIT"
wait_until 10 exited "$PID"
unqueued-restore --restore "$WORK/image" --ctl "$SOCK2" --ledger "$WORK/unused" \
	2>>"$WORK/err" > "$WORK/out"
rc=$?
relay_tap "$WORK/out"
ok "$rc" "restored unqueued-restore exit status $rc $(cat "$WORK/err")"
finish
