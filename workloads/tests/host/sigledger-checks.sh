#!/usr/bin/env bash
# sigledger on the host (TAP): senders told apart by their payload's id even
# when two hosts gave them the same pid, a shared id refused, stray
# arguments refused, lost / duplicated counted, the queue comparison and
# --fail folded into the one verdict; then a real run: sigstorm and two
# sigsend with their own --id. Usage: sigledger-checks.sh BUILD_DIR
set -euo pipefail
WL=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "$1" && pwd)
WORK=$(mktemp -d /tmp/sigledger-checks.XXXXXX)
STORM_PID=""
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	[ -z "$STORM_PID" ] || kill -KILL "$STORM_PID" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
failed=0

ok() { echo "ok - sigledger: $*"; }
not_ok() { echo "not ok - sigledger: $*"; failed=1; }

# The program under ASan/UBSan, built here: it needs nothing of libsigmig.
LEDGER=$build/san/sigledger
mkdir -p "$build/san"
${CC:-cc} -O1 -g -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE \
	-fsanitize=address,undefined -fno-sanitize-recover=all -o "$LEDGER" "$WL/sigledger.c"

le32() { printf '%02x%02x%02x%02x' $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) $((($1 >> 24) & 255)); }

# si SIGNO CODE PID UID VALUE: a 128-byte x86_64 siginfo in hex (rt layout)
si() {
	local hex
	hex=$(le32 "$1")00000000$(le32 "$2")00000000$(le32 "$3")$(le32 "$4")$(le32 $(($5 & 0xffffffff)))$(le32 $(($5 >> 32)))
	printf '%s%0*d' "$hex" $((256 - ${#hex})) 0
}

payload() { printf '%d' $(((0x5347 << 48) | ($1 << 32) | $2)); }	# ID SEQ

# send_log FILE PID ID N: N sigqueue sends of SIGRTMIN+1 (35) to pid 500
send_log() {
	local i
	for i in $(seq 1 "$4"); do
		printf 'S %d sigqueue 35 500 -1 0 %x %d 0 %d %d\n' "$i" "$(payload "$3" "$i")" "$2" "$((1000 + i))" "$3"
	done >"$1"
}

# deliver LEDGER PID ID SEQ...: a D line per sequence number
deliver() {
	local ledger=$1 pid=$2 id=$3 seq
	shift 3
	for seq in "$@"; do
		printf 'D 0 501 %d %s\n' "$((5000 + seq))" "$(si 35 -1 "$pid" 0 "$(payload "$id" "$seq")")"
	done >>"$ledger"
}

run() {	# ARGS...: sigledger --json; sets OUT and RC
	RC=0
	OUT=$("$LEDGER" --json "$@" 2>"$WORK/err") || RC=$?
}

field() { jq -r "$1" <<<"$OUT"; }

# Two hosts booted alike: both senders have pid 120; ids 1 and 2.
send_log "$WORK/a.log" 120 1 3
send_log "$WORK/b.log" 120 2 3
echo 'H 500 0 1 62' >"$WORK/a.ledger"
deliver "$WORK/a.ledger" 120 1 1 2 3
echo 'H 600 1 2 62' >"$WORK/b.ledger"
deliver "$WORK/b.ledger" 120 2 1 2 3
run --log "$WORK/a.log" --log "$WORK/b.log" --ledger "$WORK/a.ledger" --ledger "$WORK/b.ledger"
if [ "$RC" = 0 ] && [ "$(field '[.sent, .lost, .duplicated, .mismatched, .senders, .verdict.pass] | @tsv')" = $'6\t0\t0\t0\t2\ttrue' ]; then
	ok "two senders with one pid (two hosts) are told apart by their ids: PASS"
else
	not_ok "two senders with one pid: rc $RC $OUT $(cat "$WORK/err")"
fi

send_log "$WORK/b-same-id.log" 120 1 3
run --log "$WORK/a.log" --log "$WORK/b-same-id.log" --ledger "$WORK/a.ledger"
if [ "$RC" = 2 ] && grep -q 'sender id 1 logs send 1 twice.*own --id' "$WORK/err"; then
	ok "two logs of one sender id are refused ($(cat "$WORK/err"))"
else
	not_ok "a shared sender id: rc $RC $(cat "$WORK/err")"
fi

run --log "$WORK/a.log" "$WORK/b.log" --ledger "$WORK/a.ledger" "$WORK/b.ledger"
if [ "$RC" = 2 ] && grep -q "unexpected argument '$WORK/b.log'" "$WORK/err" && [ -z "$OUT" ]; then
	ok "'--log a b --ledger x y' is refused, naming b"
else
	not_ok "stray arguments: rc $RC $OUT $(cat "$WORK/err")"
fi
# read whole: grep -q would leave at the first line, and a help text past
# one stdio buffer would then die of SIGPIPE under pipefail
help=$("$LEDGER" --help)
if grep -q -- '--log SENDLOG \[--log SENDLOG...\]' <<<"$help"; then
	ok "usage: one file per --log / --ledger"
else
	not_ok "usage line"
fi

head -2 "$WORK/b.ledger" >"$WORK/b-lost.ledger"
run --log "$WORK/a.log" --log "$WORK/b.log" --ledger "$WORK/a.ledger" --ledger "$WORK/b-lost.ledger"
if [ "$RC" = 1 ] && [ "$(field '.lost')" = 2 ] && [ "$(field '.verdict.reasons[0]')" = "lost = 2" ]; then
	ok "two sends never delivered: lost = 2, FAIL"
else
	not_ok "lost: rc $RC $OUT"
fi

deliver "$WORK/b-dup.ledger" 120 2 1 2 3 3
run --log "$WORK/a.log" --log "$WORK/b.log" --ledger "$WORK/a.ledger" --ledger "$WORK/b-dup.ledger"
if [ "$RC" = 1 ] && [ "$(field '.duplicated')" = 1 ] && [ "$(field '.lost')" = 0 ]; then
	ok "one send delivered twice: duplicated = 1, FAIL"
else
	not_ok "duplicated: rc $RC $OUT"
fi

# A log from before --id (10 fields): the id defaults to the pid's low bits.
printf 'S 1 sigqueue 35 500 -1 0 %x 120 0 1001\n' "$(payload 120 1)" >"$WORK/old.log"
echo 'H 500 0 1 62' >"$WORK/old.ledger"
deliver "$WORK/old.ledger" 120 120 1
run --log "$WORK/old.log" --ledger "$WORK/old.ledger"
if [ "$RC" = 0 ] && [ "$(field '.sent')" = 1 ]; then
	ok "a log without ids (older sigsend): the id is the pid's low 16 bits"
else
	not_ok "old log: rc $RC $OUT $(cat "$WORK/err")"
fi

# Queues before and after: identical, identical + a timer, one byte off,
# truncated, nothing pending.
rt=$(si 35 -1 120 0 "$(payload 1 1)")
timer=$(si 36 -2 0 0 0)
printf 'Q shared 1\n%s\nQ t0 0\n' "$rt" >"$WORK/q-before"
cp "$WORK/q-before" "$WORK/q-same"
printf 'Q shared 1\n%s\nQ t0 1\n%s\n' "$rt" "$timer" >"$WORK/q-timer"
printf 'Q shared 1\n%s\nQ t0 0\n' "${rt:0:100}1${rt:101}" >"$WORK/q-diff"
printf 'Q shared 2\n%s\nQ t0 0\n' "$rt" >"$WORK/q-trunc"
printf 'Q shared 0\nQ t0 0\n' >"$WORK/q-empty"
L=(--log "$WORK/a.log" --log "$WORK/b.log" --ledger "$WORK/a.ledger" --ledger "$WORK/b.ledger")
run "${L[@]}" --before "$WORK/q-before" --after "$WORK/q-same"
if [ "$RC" = 0 ] && [ "$(field '[.queues[].result] | join(",")')" = identical,identical ]; then
	ok "queues identical: PASS"
else
	not_ok "identical queues: rc $RC $OUT"
fi
run "${L[@]}" --before "$WORK/q-before" --after "$WORK/q-timer"
if [ "$RC" = 0 ] && [ "$(field '.queues[1] | "\(.result) \(.timers_added)"')" = "timers 1" ]; then
	ok "a timer signal queued after the moved records: PASS (timers 1)"
else
	not_ok "timer after: rc $RC $OUT"
fi
# Standard signals, two hosts' clocks: B's is behind A's. A SIGUSR1 sent on
# A (time 1000 there) was pending when it moved and was delivered on B (500
# on B's clock): after the send, whatever the clocks say. A send made on B
# (600, --target-log) with no delivery after it on B is lost.
printf 'S 1 kill 10 500 -1 0 - 600 0 1000 7\n' >"$WORK/std-a.log"
printf 'S 1 kill 10 501 -1 0 - 601 0 600 8\n' >"$WORK/std-b.log"
printf 'H 500 0 0 62\n' >"$WORK/std-a.ledger"
printf 'H 501 1 0 62\nD 0 501 500 %s\n' "$(si 10 0 600 0 0)" >"$WORK/std-b.ledger"
S=(--log "$WORK/std-a.log" --ledger "$WORK/std-a.ledger" --ledger "$WORK/std-b.ledger")
run "${S[@]}"
if [ "$RC" = 0 ] && [ "$(field '"\(.lost) \(.coalesced)"')" = "0 0" ]; then
	ok "a standard signal moved and delivered on B, whose clock is behind: PASS"
else
	not_ok "moved standard signal, clocks apart: rc $RC $OUT"
fi
# A sender on B may send the same signal to the same queue just before the
# moved one is delivered there: the delivery's si_pid (only a sender on A
# has it) still says that it moved.
printf 'S 1 kill 10 501 -1 0 - 601 0 400 8\n' >"$WORK/std-b-early.log"
printf 'H 501 1 0 62\nD 0 501 500 %s\nD 0 501 550 %s\n' "$(si 10 0 600 0 0)" \
	"$(si 10 0 601 0 0)" >"$WORK/std-b-early.ledger"
run --log "$WORK/std-a.log" --target-log "$WORK/std-b-early.log" \
	--ledger "$WORK/std-a.ledger" --ledger "$WORK/std-b-early.ledger"
if [ "$RC" = 0 ] && [ "$(field .lost)" = 0 ]; then
	ok "a send on B just before the moved signal's delivery there: PASS (the pid says it moved)"
else
	not_ok "B send before the moved delivery: rc $RC $OUT"
fi
# Pids of the two hosts coincide: the sender on A had pid 600 and so has a
# sender on B, which sent only SIGUSR2. A SIGUSR1 from pid 600 delivered on
# B after another B sender's SIGUSR1 is still the moved one: no sender on B
# with that pid had sent SIGUSR1 by then.
printf 'S 1 kill 12 501 -1 0 - 600 0 400 8\nS 1 kill 10 501 -1 0 - 601 0 400 9\n' >"$WORK/std-b-same-pid.log"
printf 'H 501 1 0 62\nD 0 501 450 %s\nD 0 501 500 %s\nD 0 501 550 %s\n' "$(si 12 0 600 0 0)" \
	"$(si 10 0 600 0 0)" "$(si 10 0 601 0 0)" >"$WORK/std-b-same-pid.ledger"
run --log "$WORK/std-a.log" --target-log "$WORK/std-b-same-pid.log" \
	--ledger "$WORK/std-a.ledger" --ledger "$WORK/std-b-same-pid.ledger"
if [ "$RC" = 0 ] && [ "$(field .lost)" = 0 ]; then
	ok "a moved SIGUSR1 whose sender pid a sender on B has too (it sent no SIGUSR1): PASS"
else
	not_ok "moved signal, pids shared across hosts: rc $RC $OUT"
fi
run "${S[@]}" --target-log "$WORK/std-b.log"
if [ "$RC" = 1 ] && [ "$(field .lost)" = 1 ]; then
	ok "a send on B with no delivery after it on B's clock: lost"
else
	not_ok "target send not delivered: rc $RC $OUT"
fi

# A moved timer record is its timer's own entry on B: its overrun may grow
# there (and nothing else in it may change), never shrink.
qt() { printf 'Q shared 1\n%s\nQ t0 1\n%s\n' "$rt" "$(si 36 -2 "$1" "$2" 0)" >"$WORK/$3"; }
qt 3 4 qt-before
qt 3 9 qt-raised
qt 3 2 qt-lowered
qt 4 9 qt-other
run "${L[@]}" --before "$WORK/qt-before" --after "$WORK/qt-raised"
if [ "$RC" = 0 ] && [ "$(field '.queues[1] | "\(.result) \(.timers_added) \(.timers_raised)"')" = "timers 0 1" ]; then
	ok "a moved timer record whose overrun grew on B: PASS (raised 1)"
else
	not_ok "timer raised: rc $RC $OUT"
fi
for bad in qt-lowered qt-other; do
	run "${L[@]}" --before "$WORK/qt-before" --after "$WORK/$bad"
	if [ "$RC" = 1 ] && [ "$(field '.verdict.reasons | join(";")')" = "queue t0 differs after the move" ]; then
		ok "$bad: a timer record that did more than raise its overrun: FAIL"
	else
		not_ok "$bad: rc $RC $OUT"
	fi
done
run "${L[@]}" --before "$WORK/q-before" --after "$WORK/q-diff"
if [ "$RC" = 1 ] && [ "$(field '.verdict.reasons | join(";")')" = "queue shared differs after the move" ]; then
	ok "one byte differs in a queue: FAIL naming the queue"
else
	not_ok "different queue: rc $RC $OUT"
fi
run "${L[@]}" --before "$WORK/q-trunc" --after "$WORK/q-trunc"
if [ "$RC" = 1 ] && [ "$(field '.queues[0].result')" = truncated ]; then
	ok "a snapshot listing fewer records than it counts: FAIL"
else
	not_ok "truncated: rc $RC $OUT"
fi
run "${L[@]}" --before "$WORK/q-empty" --after "$WORK/q-empty"
if [ "$RC" = 1 ] && field '.verdict.reasons[]' | grep -qx 'nothing was pending before the move'; then
	ok "nothing pending before the move: FAIL"
else
	not_ok "empty before: rc $RC $OUT"
fi
run "${L[@]}" --before "$WORK/q-before"
if [ "$RC" = 2 ] && grep -q -- '--before and --after go together' "$WORK/err"; then
	ok "--before without --after is refused"
else
	not_ok "--before alone: rc $RC"
fi

run "${L[@]}" --fail 'the original on A is "running"' --fail second
if [ "$RC" = 1 ] && [ "$(field '.verdict.reasons | join("|")')" = 'the original on A is "running"|second' ]; then
	ok "--fail reasons join the verdict (JSON-escaped)"
else
	not_ok "--fail: rc $RC $OUT"
fi
text=$("$LEDGER" "${L[@]}" --fail boom) || true
if [[ $text = "verdict: FAIL sent=6 "*"): boom" ]]; then
	ok "text output: one line, the verdict, the counts and the reasons"
else
	not_ok "text verdict line"
fi

# A real run: sigstorm and two senders with ids 7 and 8 (payloads only, so
# that every send must arrive exactly once).
make -s -C "$WL" programs >/dev/null
"$build/sigstorm" --threads 2 --no-local --ctl "$WORK/ctl.sock" --ledger "$WORK/real.ledger" \
	2>"$WORK/storm.err" &
STORM_PID=$!
for _ in $(seq 1 100); do [ -S "$WORK/ctl.sock" ] && break; sleep 0.1; done
for id in 7 8; do
	"$build/sigsend" --pid "$STORM_PID" --log "$WORK/real-$id.log" --count 300 --id "$id" \
		--kinds sigqueue,tgsigqueue --std-percent 0 --seed "$id"
done
# Until the verdict has every send delivered (at most 20 s): counting D lines
# would also count signals the workload raised itself.
for _ in $(seq 1 200); do
	run --log "$WORK/real-7.log" --log "$WORK/real-8.log" --ledger "$WORK/real.ledger"
	[ "$(field .lost 2>/dev/null)" = 0 ] && break
	sleep 0.1
done
kill -TERM "$STORM_PID"
wait "$STORM_PID" 2>/dev/null || true
STORM_PID=""
run --log "$WORK/real-7.log" --log "$WORK/real-8.log" --ledger "$WORK/real.ledger"
if [ "$RC" = 0 ] && [ "$(field '[.sent, .lost, .duplicated, .mismatched, .senders] | @tsv')" = $'600\t0\t0\t0\t2' ]; then
	ok "real run: sigstorm, two sigsend with --id 7 and 8: 600 sent, every one delivered once"
else
	not_ok "real run: rc $RC $OUT $(cat "$WORK/err" "$WORK/storm.err")"
fi
first=$(awk '$1 == "S" { print $8, $12; exit }' "$WORK/real-7.log")
if [ "$first" = "5347000700000001 7" ]; then
	ok "sigsend logs its id and carries it in the payload (0x5347 << 48 | 7 << 32 | seq)"
else
	not_ok "sigsend id in the log/payload: $first"
fi
exit "$failed"
