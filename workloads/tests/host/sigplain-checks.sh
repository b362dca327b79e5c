#!/usr/bin/env bash
# sigplain on the host (TAP): with --gate, what is sent stays pending, in
# the threads' queues and the process's, until the gate signal (SIGRTMAX);
# then every signal is delivered once, the gate first, each thread-directed
# one in the thread it was sent to (sigledger's verdict over the senders'
# logs and the ledger). Its threads carry the names sigsend finds them by,
# also in a PID namespace of its own. Without --gate, a signal is delivered
# at once.
# Usage: sigplain-checks.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
WORK=$(mktemp -d /tmp/sigplain-checks.XXXXXX)
PLAIN_PID="" TARGET_PID=""
# sigplain first: killing unshare leaves its child, pid 1 of the namespace
stop_plain() {
	[ -n "$PLAIN_PID" ] || return 0
	kill -KILL "$TARGET_PID" || true
	kill -KILL "$PLAIN_PID" || true
	wait "$PLAIN_PID" || true
	PLAIN_PID=""
} 2>/dev/null
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	stop_plain
	rm -rf "$WORK"
}
trap cleanup EXIT
failed=0

ok() { echo "ok - sigplain: $*"; }
not_ok() { echo "not ok - sigplain: $*"; failed=1; }

# start_plain [--pid-namespace] ARGS...: waits for its ready line (bounded).
# In a PID namespace of its own, as the agent starts it for engine criu
# (with the parent's /proc): PLAIN_PID is then unshare's, TARGET_PID
# sigplain's as this host sees it.
start_plain() {
	local wrap=()
	if [ "${1:-}" = --pid-namespace ]; then
		wrap=(unshare --pid --fork)
		shift
	fi
	"${wrap[@]}" "$build/sigplain" --ledger "$WORK/ledger" --threads 3 "$@" >"$WORK/plain.out" 2>&1 &
	PLAIN_PID=$!
	# shellcheck disable=SC2016 # $1 is bash -c's argument
	timeout 10 bash -c 'until grep -q "^sigplain: pid" "$1"; do sleep 0.05; done' _ "$WORK/plain.out"
	TARGET_PID=$PLAIN_PID
	[ ${#wrap[@]} = 0 ] || TARGET_PID=$(pgrep -P "$PLAIN_PID")
}

send() {	# NAME ARGS...: one sigsend to sigplain, to its end
	local name=$1
	shift
	timeout 60 "$build/sigsend" --pid "$TARGET_PID" --log "$WORK/$name.log" "$@"
}

deliveries() { awk '$1 == "D"' "$WORK/ledger" | wc -l; }
# The first delivery's si_signo, as the ledger has it (4 bytes, hex, LE)
first_delivered() { awk '$1 == "D" { print substr($5, 1, 8); exit }' "$WORK/ledger"; }

# wait_deliveries N: until the ledger has N delivery lines (10 s at most)
wait_deliveries() {
	local tries
	for tries in $(seq 100); do
		[ "$(deliveries)" -ge "$1" ] && return 0
		sleep 0.1
	done
	echo "# $tries tries" >&2
	return 1
}

# threads with a private signal pending
queued_threads() {
	grep -l '^SigPnd:.*[1-9a-f]' /proc/"$TARGET_PID"/task/*/status 2>/dev/null | wc -l
}

# The agent's way when this host allows it (root), else a plain start.
ns=()
if unshare --pid --fork true 2>/dev/null; then
	ns=(--pid-namespace)
else
	echo "# not allowed to make a PID namespace here: sigplain runs in this one"
fi
start_plain "${ns[@]}" --gate
names=$(cat /proc/"$TARGET_PID"/task/*/comm | sort | tr '\n' ' ')
if [ "$names" = "storm-0 storm-1 storm-2 " ]; then
	ok "its threads are named for sigsend: $names${ns:+(in a PID namespace of its own)}"
else
	not_ok "thread names: $names(want storm-0 storm-1 storm-2)"
fi
send pile --count 600 --kinds sigqueue,tgsigqueue --std-percent 0 --id 1
sleep 0.3
sigq=$(awk '$1 == "SigQ:" { split($2, q, "/"); print q[1] }' "/proc/$TARGET_PID/status")
shd=$(awk '$1 == "ShdPnd:" { print $2 }' "/proc/$TARGET_PID/status")
threads=$(queued_threads)
if [ "$(deliveries)" = 0 ] && [ "${sigq:-0}" -ge 600 ] && [ "$shd" != 0000000000000000 ] &&
	[ "$threads" -ge 2 ]; then
	ok "--gate: 600 real-time signals stay pending ($sigq queued, $threads threads with private ones, shared mask $shd), none delivered"
else
	not_ok "--gate: $(deliveries) delivered, SigQ $sigq, ShdPnd $shd, $threads threads with private signals (want 0, >= 600, non-zero, >= 2)"
fi
# The gate goes through a queue over its RLIMIT_SIGPENDING as a kill()
# (si_code >= 0: the kernel queues it beyond the limit), where a
# sigqueue() would get EAGAIN for as long as the gate stays shut.
prlimit --pid "$TARGET_PID" --sigpending=1:1
limit=$(awk '$1 == "SigQ:" { print $2 }' "/proc/$TARGET_PID/status")
if timeout 2 "$build/sigsend" --pid "$TARGET_PID" --log "$WORK/refused.log" --count 1 \
	--kinds sigqueue --rt 64 --std-percent 0 --id 3; then
	not_ok "a sigqueue() to it over the limit ($limit) should wait (EAGAIN)"
else
	ok "over its RLIMIT_SIGPENDING ($limit), a sigqueue() of the gate waits (EAGAIN) and is not sent"
fi
send gate --count 1 --kinds kill --rt 64 --std "" --std-percent 0 --id 2
if wait_deliveries 601 && [ "$(first_delivered)" = 40000000 ]; then
	ok "the gate (SIGRTMAX by kill(), over the limit) opens it: $(deliveries) deliveries, the gate's first"
else
	not_ok "after the gate: $(deliveries) deliveries (want 601), first si_signo $(first_delivered), want 40000000 (64)"
fi
if out=$("$build/sigledger" "${ns[@]}" --log "$WORK/pile.log" --log "$WORK/gate.log" --ledger "$WORK/ledger" 2>&1); then
	ok "sigledger: every signal sent delivered once ($(tail -n 1 <<<"$out"))"
else
	not_ok "sigledger: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
fi
stop_plain
rm -f "$WORK/ledger"

start_plain
send plain --count 50 --kinds sigqueue,tgsigqueue --std-percent 0 --id 3
if wait_deliveries 50; then
	ok "without --gate every signal is delivered at once (50 of 50)"
else
	not_ok "without --gate: $(deliveries) of 50 delivered"
fi
exit $failed
