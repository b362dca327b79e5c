#!/bin/sh
# A corrupt, a truncated and a foreign image are refused cleanly (exit 3,
# one-line reason, nothing delivered); the frozen original is thawed
# (abort) and stays intact: its verdict is clean.
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-bad
rm -rf "$WORK" && mkdir -p "$WORK"
SOCK=/run/sigmig/bad.sock
SOCK2=/run/sigmig/bad-restore.sock

start_storm "$SOCK" "$WORK/ledger.1" --timer-us 10000
ok $? "sigstorm started"
echo "$STORM_PID" > "$WORK/pid"
start_sender "$WORK/pid" "$WORK/send.log"
sleep 2
sigmig-ctl "$SOCK" FREEZE >/dev/null
ok $? "FREEZE"
sigsend --pid "$STORM_PID" --log "$WORK/burst.log" --count 1500 --rate 0 --std-percent 5 \
	--seed 11 2>>"$WORK/send.err" &
BURST_PID=$!
track "$BURST_PID"
wait_until 300 exited "$BURST_PID"
pause_sender "$WORK/send.log"
reply=$(sigmig-ctl "$SOCK" DUMP --out "$WORK/image")
ok $? "DUMP: $reply"
size=$(wc -c < "$WORK/image")

cp "$WORK/image" "$WORK/corrupt"
sigmig-ctl --xor "$WORK/corrupt" $((size / 2)) 0xff
head -c $((size - 200)) "$WORK/image" > "$WORK/truncated"
cp "$WORK/image" "$WORK/foreign"
sigmig-ctl --xor "$WORK/foreign" 16 0x89	# e_machine 62 -> 183 (aarch64)

try_restore() {	# try_restore NAME IMAGE EXPECTED_TEXT
	rm -f "$WORK/err" "$WORK/ledger.$1"
	sigstorm --restore "$2" --ctl "$SOCK2" --ledger "$WORK/ledger.$1" --threads 4 2>"$WORK/err"
	rc=$?
	msg=$(cat "$WORK/err")
	[ "$rc" -eq 3 ] && [ "$(wc -l < "$WORK/err")" -eq 1 ] && grep -q "$3" "$WORK/err" &&
		! grep -q '^D' "$WORK/ledger.$1" 2>/dev/null
	ok $? "$1 image refused: rc=$rc: $msg"
}
try_restore corrupt "$WORK/corrupt" "checksum mismatch"
try_restore truncated "$WORK/truncated" "truncated"
try_restore foreign "$WORK/foreign" "foreign architecture"

status_is "$SOCK" frozen
ok $? "original still frozen after the refused restores"
reply=$(sigmig-ctl "$SOCK" PEEK --out "$WORK/image.again")
ok $? "PEEK of the frozen original: $reply"
cmp -s "$WORK/image.again" "$WORK/image"
rc=$?
# the header's creation time differs: compare the decoded summaries instead
a=$(sigmig-ctl --inspect "$WORK/image" | sed 's/"pid":[0-9]*//')
b=$(sigmig-ctl --inspect "$WORK/image.again" | sed 's/"pid":[0-9]*//')
[ "$a" = "$b" ]
ok $? "queues unchanged by the refused restores (cmp=$rc)"
sigmig-ctl "$SOCK" THAW >/dev/null && status_is "$SOCK" running
ok $? "THAW: original running again"
kill -USR2 "$SENDER_PID"
sleep 2
kill -TERM "$SENDER_PID"
wait_until 10 exited "$SENDER_PID"
verdict() { sigledger --log "$WORK/send.log" --log "$WORK/burst.log" --ledger "$WORK/ledger.1"; }
wait_until 120 verdict
v=$(verdict)
ok $? "original intact: $v"
finish
