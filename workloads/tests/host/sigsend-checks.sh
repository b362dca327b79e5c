#!/usr/bin/env bash
# sigsend on the host (TAP): --linger-ms ends a sender soon after its
# target is gone (its first ESRCH), however long --seconds would have let
# it run; without it, a sender keeps sending (and failing) until --seconds.
# Usage: sigsend-checks.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
WORK=$(mktemp -d /tmp/sigsend-checks.XXXXXX)
TARGET_PID=""
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	[ -z "$TARGET_PID" ] || kill -KILL "$TARGET_PID" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
failed=0

ok() { echo "ok - sigsend: $*"; }
not_ok() { echo "not ok - sigsend: $*"; failed=1; }

# run_against_short_target LOG ARGS...: a target that lives 1 s (SIGWINCH,
# the only signal sent, is ignored by default); prints sigsend's run time
# in ms. bash reaps the target as soon as it exits (SIGCHLD), so a send
# to it fails with ESRCH rather than reaching a zombie.
run_against_short_target() {
	local log=$1 t0 t1
	shift
	sleep 1 &
	TARGET_PID=$!
	t0=$(date +%s%N)
	timeout 60 "$build/sigsend" --pid "$TARGET_PID" --log "$log" --kinds kill \
		--std 28 --std-percent 100 --rate 200 "$@"
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

esrch_lines() { awk '$1 == "F" && $5 == 3' "$1" | wc -l; }

ms=$(run_against_short_target "$WORK/linger.log" --seconds 30 --linger-ms 500)
n=$(esrch_lines "$WORK/linger.log")
if [ "$n" -gt 0 ] && [ "$ms" -lt 5000 ] && grep -q '^E ' "$WORK/linger.log"; then
	ok "--linger-ms 500 ends ${ms} ms after starting against a 1 s target ($n sends got ESRCH)"
else
	not_ok "--linger-ms 500 ran ${ms} ms against a 1 s target, $n ESRCH (want < 5000 ms, > 0)"
fi
ms=$(run_against_short_target "$WORK/plain.log" --seconds 3)
n=$(esrch_lines "$WORK/plain.log")
if [ "$n" -gt 0 ] && [ "$ms" -ge 3000 ]; then
	ok "without --linger-ms it sends until --seconds (${ms} ms, $n ESRCH)"
else
	not_ok "without --linger-ms: ${ms} ms, $n ESRCH (want >= 3000 ms, > 0)"
fi
exit $failed
