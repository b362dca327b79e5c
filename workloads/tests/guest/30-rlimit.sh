#!/bin/sh
# Restoring thousands of signals under a RLIMIT_SIGPENDING that is too low
# and cannot be raised (no CAP_SYS_RESOURCE) fails cleanly before anything
# is requeued; the original, thawed, is intact.
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-rlimit
rm -rf "$WORK" && mkdir -p "$WORK"
SOCK=/run/sigmig/rlimit.sock
SOCK2=/run/sigmig/rlimit-restore.sock

start_storm "$SOCK" "$WORK/ledger.1" --timer-us 10000
ok $? "sigstorm started"
echo "$STORM_PID" > "$WORK/pid"
sigmig-ctl "$SOCK" FREEZE >/dev/null
ok $? "FREEZE"
start_sender "$WORK/pid" "$WORK/send.log" --count 3000 --rate 0 --std-percent 0 --kinds sigqueue,tgsigqueue
wait_until 120 exited "$SENDER_PID"
reply=$(sigmig-ctl "$SOCK" DUMP --out "$WORK/image")
signals=$(echo "$reply" | json_field signals)
[ "${signals:-0}" -ge 3000 ]
ok $? "DUMP with $signals pending"

withrlimit 500 sigstorm --restore "$WORK/image" --ctl "$SOCK2" --ledger "$WORK/ledger.2" \
	--threads 4 2>"$WORK/err"
rc=$?
msg=$(cat "$WORK/err")
[ "$rc" -eq 3 ] && grep -q "RLIMIT_SIGPENDING.*nothing requeued" "$WORK/err" &&
	! grep -q '^D' "$WORK/ledger.2"
ok $? "restore under RLIMIT_SIGPENDING=500 refused: rc=$rc: $msg"
[ ! -S "$SOCK2" ] || ! status_is "$SOCK2" running
ok $? "no restored process left running"

sigmig-ctl "$SOCK" THAW >/dev/null
ok $? "THAW original"
verdict() { sigledger --log "$WORK/send.log" --ledger "$WORK/ledger.1"; }
wait_until 120 verdict
v=$(verdict)
ok $? "original intact: $v"
finish
