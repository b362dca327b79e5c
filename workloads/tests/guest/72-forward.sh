#!/bin/sh
# The original as a forwarder: freeze sigstorm, DUMP, send more, FORWARD:
# its reply holds exactly what the queues gained since the DUMP and leaves
# every queue empty (dequeued), the process parked. What arrives next
# (real-time and standard) comes
# out with DRAIN, then with the COMMIT that ends it. The copy restored
# from the image takes the delta held, then each drain while it runs
# (REQUEUE into a running copy): sigledger over every send finds nothing
# lost, duplicated or changed.
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-forward
rm -rf "$WORK" && mkdir -p "$WORK"
SOCK=/run/sigmig/forward.sock
SOCK2=/run/sigmig/forward-restored.sock

start_storm "$SOCK" "$WORK/ledger.1" --no-local --timers 0
ok $? "sigstorm started (pid $STORM_PID)"
reply=$(sigmig-ctl "$SOCK" DRAIN)
echo "$reply" | grep -q '"error":"wrong_state"'
ok $? "DRAIN of a process that is not forwarding: wrong_state ($reply)"
reply=$(sigmig-ctl "$SOCK" FREEZE)
ok $? "FREEZE: $reply"
reply=$(sigmig-ctl "$SOCK" FORWARD)
echo "$reply" | grep -q '"error":"wrong_state"'
ok $? "FORWARD before a DUMP: wrong_state ($reply)"
sigsend --pid "$STORM_PID" --log "$WORK/before.log" --count 1500 --rate 0 --std-percent 20 \
	--seed 3 --id 1 2>>"$WORK/send.err"
ok $? "1500 sends before the DUMP"
reply=$(sigmig-ctl "$SOCK" DUMP --out "$WORK/image")
ok $? "DUMP: $(echo "$reply" | head -c 200)"
dumped=$(echo "$reply" | json_field signals)
sigsend --pid "$STORM_PID" --log "$WORK/after-rt.log" --count 400 --rate 0 \
	--kinds sigqueue,tgsigqueue --std-percent 0 --seed 5 --id 2 2>>"$WORK/send.err"
sigsend --pid "$STORM_PID" --log "$WORK/after-std.log" --count 100 --rate 0 \
	--kinds kill,tgkill --seed 9 --id 3 2>>"$WORK/send.err"
ok $? "500 sends after the DUMP"
peeked=$(sigmig-ctl "$SOCK" PEEK | json_field signals)
reply=$(sigmig-ctl "$SOCK" FORWARD --out "$WORK/delta")
ok $? "FORWARD: $reply"
carried=$(echo "$reply" | json_field carried)
removed=$(echo "$reply" | json_field removed)
[ -n "$carried" ] && [ "$carried" -ge 400 ] && [ "$removed" = 0 ] &&
	[ "$((dumped + carried))" = "$peeked" ]
ok $? "the delta is what the queues gained: carried $carried = $peeked pending - $dumped dumped"
status_is "$SOCK" forwarding
ok $? "the original is forwarding: $(sigmig-ctl "$SOCK" STATUS | head -c 80)"
reply=$(sigmig-ctl "$SOCK" THAW)
echo "$reply" | grep -q '"error":"wrong_state"'
ok $? "a forwarder is never thawed: $reply"

sigsend --pid "$STORM_PID" --log "$WORK/fwd1-rt.log" --count 300 --rate 0 \
	--kinds sigqueue,tgsigqueue --std-percent 0 --seed 11 --id 4 2>>"$WORK/send.err"
sigsend --pid "$STORM_PID" --log "$WORK/fwd1-std.log" --count 50 --rate 0 \
	--kinds kill,tgkill --seed 13 --id 5 2>>"$WORK/send.err"
ok $? "350 sends to the forwarder"

reply=$(sigmig-ctl "$SOCK" DRAIN --out "$WORK/drain1")
ok $? "DRAIN: $reply"
drained1=$(echo "$reply" | json_field carried)
[ -n "$drained1" ] && [ "$drained1" -ge 300 ] && [ "$drained1" -le 350 ]
ok $? "DRAIN read $drained1: the 300 real-time sends since FORWARD and the standard ones that did not merge"
reply=$(sigmig-ctl "$SOCK" DRAIN --out "$WORK/drain-empty")
[ "$(echo "$reply" | json_field carried)" = 0 ]
ok $? "a DRAIN with nothing new: $reply"
sigsend --pid "$STORM_PID" --log "$WORK/fwd2.log" --count 200 --rate 0 \
	--kinds sigqueue,tgsigqueue --std-percent 0 --seed 19 --id 7 2>>"$WORK/send.err"
reply=$(sigmig-ctl "$SOCK" COMMIT --out "$WORK/drain2")
ok $? "COMMIT of the forwarder: $reply"
[ "$(echo "$reply" | json_field carried)" = 200 ]
ok $? "COMMIT drained the last 200"
wait_until 10 exited "$STORM_PID"
ok $? "the forwarder exited after COMMIT"

sigstorm --restore "$WORK/image" --restore-hold --ctl "$SOCK2" --ledger "$WORK/ledger.2" \
	--threads 4 --no-local --timers 0 2>>"$WORK/storm.err" &
NEW_PID=$!
track "$NEW_PID"
wait_until 60 sh -c "sigmig-ctl '$SOCK2' STATUS | grep -q '\"state\":\"frozen\",.*\"restored\":true'"
ok $? "restored copy $NEW_PID held"
reply=$(sigmig-ctl "$SOCK2" "REQUEUE $WORK/delta")
echo "$reply" | grep -q "\"requeued\":$carried"
ok $? "the held copy took the delta: $reply"
reply=$(sigmig-ctl "$SOCK2" THAW)
ok $? "THAW: $reply"
reply=$(sigmig-ctl "$SOCK2" "REQUEUE /nonexistent")
echo "$reply" | grep -q '"error":"requeue_failed"' && status_is "$SOCK2" running
ok $? "REQUEUE of a missing file into the running copy: requeue_failed, still running ($reply)"
reply=$(sigmig-ctl "$SOCK2" "REQUEUE $WORK/drain1")
requeued=$(echo "$reply" | json_field requeued)
merged=$(echo "$reply" | json_field merged)
[ -n "$requeued" ] && [ "$((requeued + merged))" = "$drained1" ] && status_is "$SOCK2" running
ok $? "the running copy took the first drain: $reply"
reply=$(sigmig-ctl "$SOCK2" "REQUEUE $WORK/drain2")
echo "$reply" | grep -q '"requeued":200' && status_is "$SOCK2" running
ok $? "and the last one: $reply"

verdict() {
	sigledger --log "$WORK/before.log" --log "$WORK/after-rt.log" --log "$WORK/after-std.log" \
		--log "$WORK/fwd1-rt.log" --log "$WORK/fwd1-std.log" \
		--log "$WORK/fwd2.log" --ledger "$WORK/ledger.1" --ledger "$WORK/ledger.2" "$@"
}
wait_until 60 verdict
v=$(verdict)
rc=$?
[ "$rc" -eq 0 ] || verdict --verbose 2>&1 >/dev/null | head -20 | sed 's/^/# /'
ok "$rc" "verdict lost=0 duplicated=0 mismatched=0: $v"
[ -s "$WORK/storm.err" ] && sed 's/^/# stderr: /' "$WORK/storm.err"
finish
