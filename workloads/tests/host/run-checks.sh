#!/usr/bin/env bash
# Runs the host unit tests (ASan+UBSan builds, then TSan builds) and a
# bounded libFuzzer run of the image decoder, as one TAP stream.
# Usage: run-checks.sh BUILD_DIR FUZZ_SECONDS TEST...
set -euo pipefail
build=$1
seconds=$2
shift 2
failed=0

run_tap() {
	local name=$1
	shift
	if ! "$@"; then
		echo "not ok - $name exited non-zero"
		failed=1
	fi
}

fuzz() {
	local corpus log
	corpus=$(mktemp -d)
	log=$(mktemp)
	trap 'rm -rf "$corpus" "$log"' RETURN
	"$build/san/test_image" --write-seeds "$corpus"
	if timeout $((seconds + 60)) "$build/fuzz/fuzz_image" -max_total_time="$seconds" \
		-max_len=65536 -rss_limit_mb=2048 "$corpus" >"$log" 2>&1; then
		echo "ok - fuzz: image decoder ${seconds}s, $(grep -o 'Done [0-9]* runs' "$log" | head -1 || echo '?'), no crash"
	else
		sed 's/^/# /' "$log" | tail -40
		echo "not ok - fuzz: image decoder crashed or timed out"
		failed=1
	fi
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The first report ends the process, a forked child's too (its parent sees
# the status): no race goes by as a mere line on stderr.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
run_tap test_image "$build/san/test_image"
for t in "$@"; do
	run_tap "$t" "$build/san/$t"
done
for t in "$@"; do
	echo "# $t under ThreadSanitizer"
	run_tap "$t (tsan)" "$build/tsan/$t"
done
run_tap sigledger-checks "$(dirname "$0")/sigledger-checks.sh" "$build"
fuzz
exit $failed
