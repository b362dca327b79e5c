#!/bin/sh
# What reaches a frozen process after its DUMP goes with its COMMIT: freeze
# sigstorm, DUMP, send more (real-time with payloads, thread-directed and
# process-wide, and standard signals), COMMIT: the reply's delta holds
# exactly the entries the queues gained. Restore the image held, REQUEUE the
# delta into it, thaw: sigledger over every send finds nothing lost or
# duplicated. Also: REQUEUE needs a path, and a bad one changes nothing.
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-commit-delta
rm -rf "$WORK" && mkdir -p "$WORK"
SOCK=/run/sigmig/delta.sock
SOCK2=/run/sigmig/delta-restored.sock

start_storm "$SOCK" "$WORK/ledger.1" --no-local --timers 0
ok $? "sigstorm started (pid $STORM_PID)"
reply=$(sigmig-ctl "$SOCK" "REQUEUE /nonexistent")
echo "$reply" | grep -q '"error":"requeue_failed"' && status_is "$SOCK" running
ok $? "REQUEUE of a missing file: requeue_failed, still running ($reply)"
reply=$(sigmig-ctl "$SOCK" FREEZE)
ok $? "FREEZE: $reply"
sigsend --pid "$STORM_PID" --log "$WORK/before.log" --count 1500 --rate 0 --std-percent 20 \
	--seed 3 --id 1 2>>"$WORK/send.err"
ok $? "1500 sends before the DUMP"
reply=$(sigmig-ctl "$SOCK" DUMP --out "$WORK/image")
ok $? "DUMP: $(echo "$reply" | head -c 200)"
dumped=$(echo "$reply" | json_field signals)
# after the DUMP: real-time only (each one queues), then standard ones
sigsend --pid "$STORM_PID" --log "$WORK/after-rt.log" --count 400 --rate 0 \
	--kinds sigqueue,tgsigqueue --std-percent 0 --seed 5 --id 2 2>>"$WORK/send.err"
sigsend --pid "$STORM_PID" --log "$WORK/after-std.log" --count 100 --rate 0 \
	--kinds kill,tgkill --seed 9 --id 3 2>>"$WORK/send.err"
ok $? "500 sends after the DUMP ($(grep SigQ "/proc/$STORM_PID/status"))"
reply=$(sigmig-ctl "$SOCK" PEEK)
peeked=$(echo "$reply" | json_field signals)
note "pending before COMMIT: $peeked (dumped $dumped)"
reply=$(sigmig-ctl "$SOCK" COMMIT --out "$WORK/delta")
ok $? "COMMIT: $reply"
carried=$(echo "$reply" | json_field carried)
removed=$(echo "$reply" | json_field removed)
inspect=$(sigmig-ctl --inspect "$WORK/delta")
note "delta: $inspect"
[ -n "$carried" ] && [ "$carried" -ge 400 ] && [ "$removed" = 0 ] &&
	[ "$((dumped + carried))" = "$peeked" ] &&
	echo "$inspect" | grep -q "\"total\":$carried"
ok $? "the delta is what the queues gained: carried $carried = $peeked pending - $dumped dumped, removed $removed"
echo "$reply" | grep -q '"sealed":true'
ok $? "COMMIT sealed the original before its last read (SFD_IOC_SEAL)"
# exiting, or a zombie until this shell reaps it: unsealed, the kernel
# would accept this send and drop it
! kill -s USR1 "$STORM_PID" 2>/dev/null
ok $? "a send right after COMMIT's reply fails (ESRCH) instead of being accepted and lost"
wait_until 10 exited "$STORM_PID"
ok $? "original exited after COMMIT"

sigstorm --restore "$WORK/image" --restore-hold --ctl "$SOCK2" --ledger "$WORK/ledger.2" \
	--threads 4 --no-local --timers 0 2>>"$WORK/storm.err" &
NEW_PID=$!
track "$NEW_PID"
wait_until 60 sh -c "sigmig-ctl '$SOCK2' STATUS | grep -q '\"state\":\"frozen\",.*\"restored\":true'"
ok $? "restored copy $NEW_PID held"
reply=$(sigmig-ctl "$SOCK2" REQUEUE)
echo "$reply" | grep -q '"error":"bad_request"'
ok $? "REQUEUE without a path: bad_request ($reply)"
reply=$(sigmig-ctl "$SOCK2" "REQUEUE $WORK/delta")
ok $? "REQUEUE: $reply"
echo "$reply" | grep -q "\"requeued\":$carried"
ok $? "the held copy requeued and found all $carried"
reply=$(sigmig-ctl "$SOCK2" PEEK)
[ "$(echo "$reply" | json_field signals)" = "$peeked" ]
ok $? "the copy's queues hold what the original's held at COMMIT: $(echo "$reply" | json_field signals) of $peeked"
reply=$(sigmig-ctl "$SOCK2" THAW)
ok $? "THAW: $reply"

verdict() {
	sigledger --log "$WORK/before.log" --log "$WORK/after-rt.log" --log "$WORK/after-std.log" \
		--ledger "$WORK/ledger.1" --ledger "$WORK/ledger.2" "$@"
}
wait_until 60 verdict
v=$(verdict)
rc=$?
[ "$rc" -eq 0 ] || verdict --verbose 2>&1 >/dev/null | head -20 | sed 's/^/# /'
ok "$rc" "verdict lost=0 duplicated=0 mismatched=0: $v"
[ -s "$WORK/storm.err" ] && sed 's/^/# stderr: /' "$WORK/storm.err"
finish
