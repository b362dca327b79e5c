#!/usr/bin/env bash
# Runs the host unit tests (ASan+UBSan builds, then TSan builds) and
# bounded libFuzzer runs of the image decoder (as is, and with the CRC
# recomputed so that mutations reach past it), as one TAP stream.
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

# fuzz NAME: build/fuzz/NAME on the valid images test_image writes, the
# corpus and any reproducer kept in build/fuzz/NAME.d/.
fuzz() {
	local name=$1 work log repro runs cov
	work=$(cd "$build" && pwd)/fuzz/$name.d
	log=$work/fuzz.log
	mkdir -p "$work/corpus"
	"$build/san/test_image" --write-seeds "$work/corpus"
	if timeout $((seconds + 60)) "$build/fuzz/$name" -max_total_time="$seconds" \
		-max_len=65536 -rss_limit_mb=2048 -artifact_prefix="$work/" \
		"$work/corpus" >"$log" 2>&1; then
		runs=$(grep -o 'Done [0-9]* runs' "$log" | head -1 || true)
		cov=$(grep -o 'DONE *cov: [0-9]*' "$log" | grep -o '[0-9]*$' || true)
		echo "ok - fuzz: $name ${seconds}s, ${runs:-? runs}, ${cov:-?} edges, no crash"
		return
	fi
	sed 's/^/# /' "$log" | tail -40
	repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
	if [ -n "$repro" ]; then
		echo "not ok - fuzz: $name crashed, reproducer $repro (replay: $build/fuzz/$name $repro)"
	else
		echo "not ok - fuzz: $name failed or timed out (see $log)"
	fi
	failed=1
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
run_tap sigsend-checks "$(dirname "$0")/sigsend-checks.sh" "$build"
run_tap sigplain-checks "$(dirname "$0")/sigplain-checks.sh" "$build"
fuzz fuzz_image
fuzz fuzz_image_fixcrc
exit $failed
