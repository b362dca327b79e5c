#!/bin/sh
# Under load: freeze sigstorm, let thousands of signals pile up in both queues
# of several threads, dump, COMMIT, restore into a new process, resume the
# sender, and prove with sigledger: lost=0 duplicated=0 mismatched=0.
# STORM=sigstorm32 runs the same with the i386 build (compat siginfo);
# REQUEUE=sigqueueinfo restores with one syscall per record instead of
# the default write() to a signalfd (the fallback for kernels without it).
cd "$(dirname "$0")" && . ./lib.sh
STORM=${STORM:-sigstorm}
REQUEUE=${REQUEUE:-write}
WORK=/tmp/wl-roundtrip-$STORM-$REQUEUE
rm -rf "$WORK" && mkdir -p "$WORK"
SOCK=/run/sigmig/roundtrip-$STORM-$REQUEUE.sock
SOCK2=/run/sigmig/roundtrip-$STORM-$REQUEUE-restored.sock

start_storm "$SOCK" "$WORK/ledger.1" --timer-us 10000
ok $? "$STORM started (pid $STORM_PID)"
echo "$STORM_PID" > "$WORK/pid"
start_sender "$WORK/pid" "$WORK/send.log"
sleep 3
reply=$(sigmig-ctl "$SOCK" FREEZE)
ok $? "FREEZE under load: $reply"
sleep 2	# the sender keeps sending: everything stays pending
# plus a burst, to thousands, on every queue
sigsend --pid "$STORM_PID" --log "$WORK/burst.log" --count 4000 --rate 0 --std-percent 5 \
	--seed 7 2>>"$WORK/send.err" &
BURST_PID=$!
track "$BURST_PID"
wait_until 300 exited "$BURST_PID"
ok $? "burst of $(grep -c '^S' "$WORK/burst.log") sends while frozen"
note "sends so far: $(grep -c '^S' "$WORK/send.log"), $(grep SigQ "/proc/$STORM_PID/status")"
meminfo
note "pausing the sender"
pause_sender "$WORK/send.log"
ok $? "sender paused after $(grep -c '^S' "$WORK/send.log") sends"
note "dumping"
reply=$(sigmig-ctl "$SOCK" DUMP --out "$WORK/image")
ok $? "DUMP: $reply"
signals=$(echo "$reply" | json_field signals)
summary=$(sigmig-ctl --inspect "$WORK/image")
note "image: $summary"
shared=$(echo "$summary" | json_field shared)
busy=$(echo "$summary" | grep -o '"pending":[0-9]*' | awk -F: '$2 >= 100' | wc -l)
[ "${signals:-0}" -ge 2000 ] && [ "${shared:-0}" -ge 100 ] && [ "$busy" -ge 2 ]
ok $? "thousands pending across queues: total=$signals shared=$shared threads_with_100+=$busy"
lines_before=$(wc -l < "$WORK/ledger.1")
reply=$(sigmig-ctl "$SOCK" COMMIT)
ok $? "COMMIT: $reply"
wait_until 10 exited "$STORM_PID"
wait "$STORM_PID"
rc=$?
[ "$rc" -eq 0 ] && [ "$(wc -l < "$WORK/ledger.1")" -eq "$lines_before" ]
ok $? "original exited 0 (rc=$rc) and delivered nothing after COMMIT"

$STORM --restore "$WORK/image" --ctl "$SOCK2" --ledger "$WORK/ledger.2" --threads 4 \
	--requeue-with "$REQUEUE" 2>>"$WORK/storm.err" &
NEW_PID=$!
track "$NEW_PID"
wait_until 60 status_is "$SOCK2" running
ok $? "restored process $NEW_PID running"
status=$(sigmig-ctl "$SOCK2" STATUS)
note "$status"
requeued=$(echo "$status" | sed -n 's/.*"requeued":\([0-9]*\).*/\1/p')
echo "$status" | grep -q '"restored":true' && echo "$status" | grep -q '"verified":true' &&
	[ "$requeued" = "$signals" ]
ok $? "restore verified byte for byte: requeued=$requeued of $signals"
echo "$status" | grep -q "\"requeue\":\"$REQUEUE\""
ok $? "the records were queued by $REQUEUE"
note "restore_ns=$(echo "$status" | sed -n 's/.*"restore_ns":\([0-9]*\).*/\1/p')"

echo "$NEW_PID" > "$WORK/pid"
kill -USR2 "$SENDER_PID"
sleep 3
kill -TERM "$SENDER_PID"
wait_until 10 exited "$SENDER_PID"
verdict() {
	sigledger --log "$WORK/send.log" --log "$WORK/burst.log" --ledger "$WORK/ledger.1" --ledger "$WORK/ledger.2" "$@"
}
wait_until 120 verdict
v=$(verdict)
rc=$?
echo "# $v"
[ "$rc" -eq 0 ] || verdict --verbose 2>&1 >/dev/null | head -20 | sed 's/^/# /'
ok "$rc" "verdict lost=0 duplicated=0 mismatched=0: $v"
grep -q 'sent=[1-9]' <<EOT
$v
EOT
ok $? "the verdict counted sends"
[ -s "$WORK/storm.err" ] && sed 's/^/# stderr: /' "$WORK/storm.err"
finish
