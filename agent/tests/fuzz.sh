#!/usr/bin/env bash
# Bounded libFuzzer runs of the agent's parsers, one TAP line each.
# Usage: fuzz.sh BUILD_DIR SECONDS HARNESS...
# A harness fuzz_X is BUILD_DIR/fuzz/fuzz_X, seeded from tests/corpus-X
# (fuzz_request: tests/corpus); its work directory is BUILD_DIR/fuzz/X.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "$1" && pwd)
seconds=$2
shift 2
# shellcheck source=orchestrate/lib/tap.sh
. "$HERE/../../orchestrate/lib/tap.sh"
# shellcheck source=orchestrate/lib/fuzz.sh
. "$HERE/../../orchestrate/lib/fuzz.sh"

export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for h in "$@"; do
	case $h in
	request) seeds=$HERE/corpus max_len=4096 ;;
	image_json) seeds=$HERE/corpus-$h max_len=65536 ;;
	*) seeds=$HERE/corpus-$h max_len=8192 ;;
	esac
	fuzz_run "$h" "$build/fuzz/fuzz_$h" "$seconds" "$max_len" \
		"$build/fuzz/$h" "$seeds"
done
tap_done
