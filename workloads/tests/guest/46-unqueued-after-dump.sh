#!/bin/sh
# Signals that become pending without a queue entry after the DUMP (sent
# over RLIMIT_SIGPENDING while the process is frozen) go with the COMMIT:
# no peek shows them, so the delta must find them in the pending sets as
# the DUMP does, once each, on their own queue, with the siginfo the
# kernel would have delivered (SI_USER, si_pid 0, si_uid 0).
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-unqueued-late
rm -rf "$WORK" && mkdir -p "$WORK"
SOCK=/run/sigmig/unqueued-late.sock
RTSIG=41	# SIGRTMIN + 7 (glibc's SIGRTMIN is 34)
STDSIG=10	# SIGUSR1

unqueued-restore --ctl "$SOCK" --state "$WORK/state" --late 2>>"$WORK/err" &
PID=$!
track "$PID"
wait_until 20 test -s "$WORK/state"
test "$(cat "$WORK/state" 2>/dev/null)" = ready
ok $? "unqueued-restore filled RLIMIT_SIGPENDING: $(cat "$WORK/state" 2>/dev/null)"
reply=$(sigmig-ctl "$SOCK" FREEZE)
ok $? "FREEZE at RLIMIT_SIGPENDING: $reply"
reply=$(sigmig-ctl "$SOCK" DUMP --out "$WORK/image")
ok $? "DUMP: $reply"
[ "$(echo "$reply" | json_field signals)" = 4 ]
ok $? "the image holds the 4 queued signals only"

# Over the limit: kill() of a real-time signal (process-wide) and tgkill()
# of a standard one (its thread): both pending, neither queued (this
# user's queued count, SigQ, does not move).
sigq() { sed -n 's/^SigQ:[[:space:]]*\([0-9]*\)\/.*/\1/p' "/proc/$PID/status"; }
queued=$(sigq)
# (sigsend's kill kind sends standard signals only: the shell's kill here)
kill -"$RTSIG" "$PID" &&
	sigsend --pid "$PID" --log "$WORK/std.log" --count 1 --rate 0 --kinds tgkill \
		--std "$STDSIG" 2>>"$WORK/err" &&
	! grep -q '^F' "$WORK/std.log"
ok $? "kill() of signal $RTSIG and tgkill() of signal $STDSIG after the DUMP both returned success"
pending=$(grep -E 'ShdPnd|SigPnd' "/proc/$PID/status" | tr '\n' ' ')
[ "$(sigq)" = "$queued" ] && echo "$pending" | grep -q 'SigPnd:[[:space:]]*0*200 ' &&
	echo "$pending" | grep -q 'ShdPnd:[[:space:]]*0*30000000000 '
ok $? "both pending without a queue entry: SigQ stays $queued, $pending"

reply=$(sigmig-ctl "$SOCK" COMMIT --out "$WORK/delta")
ok $? "COMMIT: $reply"
records=$(sigmig-ctl --records "$WORK/delta")
note "delta records: $(echo "$records" | tr '\n' ';')"
[ "$(echo "$records" | wc -l)" = 2 ] &&
	echo "$records" | grep -qx "shared $RTSIG 0 0 0" &&
	echo "$records" | grep -qx "thread.0 $STDSIG 0 0 0"
ok $? "the delta carries each once, on its own queue, SI_USER from pid 0 uid 0"
[ "$(echo "$reply" | json_field carried)" = 2 ]
ok $? "COMMIT counts them as carried"
wait_until 10 exited "$PID"
ok $? "original exited after COMMIT"
[ -s "$WORK/err" ] && sed 's/^/# stderr: /' "$WORK/err"
finish
