#!/usr/bin/env bash
# make test-debug: build the debug guest kernel (kernel/config/debug.config:
# KASAN, lockdep, UBSAN, DEBUG_LIST, DEBUG_ATOMIC_SLEEP...), boot it with
# every guest-side test of the project (/sigmig/tests/*, which includes the
# stress, fuzz and leak programs of kernel/stress/), scan the console for
# kernel splats and end with "N passed, N failed".  Any splat, a guest that
# dies without reporting, or any failed test fails the run.
set -euo pipefail

PROG=test-debug
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
REPO=$SIGMIG_REPO
ORCH="$REPO/orchestrate"
LOGS="$REPO/build/logs"
only="" timeout_s=5400 test_timeout=1200 memory=2048 quiet=(--quiet)
# panic_on_warn/oops=panic turn every WARN and Oops into a stopped guest;
# loglevel=7 undoes run-guest's "quiet", which would hide the KERN_WARNING
# reports of lockdep and WARN() from the console.
DEBUG_CMDLINE="panic_on_warn=1 oops=panic loglevel=7"
declare -A took=()
guest_pid=""

usage_text() {
	cat <<'EOF'
Usage: test-debug.sh [--only COMPONENT] [--timeout SEC] [--test-timeout SEC]
                     [--memory MB] [--verbose]
  --only          run /sigmig/tests/COMPONENT only (e.g. stress)
  --timeout       limit for the whole guest boot (default 5400)
  --test-timeout  per test program (default 1200)
  --memory        guest RAM in MB (default 2048: KASAN shadow is 1/8 of it)
  --verbose       echo the guest console to stderr
Logs: build/logs/guest-test-debug[-COMPONENT].log (console),
      build/logs/test-debug-splats.txt (scan report).
EOF
}

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--only) only=${2:?}; shift 2 ;;
		--timeout) timeout_s=${2:?}; shift 2 ;;
		--test-timeout) test_timeout=${2:?}; shift 2 ;;
		--memory) memory=${2:?}; shift 2 ;;
		--verbose) quiet=(); shift ;;
		-h|--help) show_help ;;
		*) usage ;;
		esac
	done
}

build_kernel() {
	local t0=$SECONDS
	say "building the debug kernel (cached; cold about 8 min on 2 cores)"
	kernel=$("$ORCH/build-kernel.sh" --flavor debug) || die "debug kernel build failed" 2
	took[kernel]=$((SECONDS - t0))
}

build_initramfs() {
	local t0=$SECONDS
	initrd="$REPO/build/initramfs/initramfs-$name.cpio.gz"
	mkdir -p "$(dirname "$initrd")"
	say "building the initramfs (every component's guest tests)"
	"$ORCH/build-initramfs.sh" --output "$initrd" >/dev/null || die "initramfs build failed" 2
	took[initramfs]=$((SECONDS - t0))
}

stop_guest() { stop_pids "$guest_pid"; }

boot_and_test() {
	local t0=$SECONDS append="sigmig.timeout=$test_timeout $DEBUG_CMDLINE"
	[ -z "$only" ] || append+=" sigmig.only=$only"
	say "booting the debug kernel with ${memory} MB (timeout ${timeout_s}s, ${test_timeout}s per test)"
	guest_rc=0
	# In the background: INT or TERM then ends the wait at once, and the
	# exit hook stops run-guest.sh, which stops QEMU.
	on_exit stop_guest
	"$ORCH/run-guest.sh" --kernel "$kernel" --initrd "$initrd" --role test \
		--name "$name" --memory "$memory" --timeout "$timeout_s" \
		--append "$append" "${quiet[@]}" &
	guest_pid=$!
	wait "$guest_pid" || guest_rc=$?
	# A signal may end the wait without its trap running (seen under bash
	# 5.2): a guest still running is left to the exit hook.
	kill -0 "$guest_pid" 2>/dev/null || guest_pid=""
	took[guest]=$((SECONDS - t0))
	console="$LOGS/guest-$name.log"
	[ -f "$console" ] || die "no console log $console" 2
}

# Prints the TAP lines of the run: the guest's own, plus one "not ok" per
# splat and one for a guest that failed without saying which test did.
tap_lines() {
	local n
	tr -d '\r' <"$console" | grep -E '^(not )?ok\b' || true
	# The agent tests' replies, framed on the console, against the API spec.
	/usr/bin/python3 "$ORCH/lib/openapi_check.py" console "$console" || true
	n=$(grep -c '^---- splat ' "$splats" || true)
	for ((i = 1; i <= n; i++)); do
		echo "not ok - kernel splat $i on the debug kernel (see $splats)"
	done
	if [ "$guest_rc" != 0 ] && ! log_has "$console" '^not ok'; then
		case "$guest_rc" in
		124) echo "not ok - debug guest timed out after ${timeout_s}s" ;;
		125) echo "not ok - debug guest stopped without SIGMIG-EXIT (panic?)" ;;
		*) echo "not ok - debug guest exited with $guest_rc" ;;
		esac
	fi
}

summary() {
	local tap passed failed skipped
	splats="$LOGS/test-debug-splats.txt"
	splat_rc=0
	"$ORCH/scan-console.sh" "$console" >"$splats" || splat_rc=$?
	[ "$splat_rc" -le 1 ] || die "scan-console.sh failed on $console" 2
	if [ "$splat_rc" = 1 ]; then
		say "kernel splat(s) on the console:"
		cat "$splats"
	else
		say "$(cat "$splats")"
	fi
	tap=$(tap_lines)
	passed=$(grep -cE '^ok\b' <<<"$tap" || true)
	failed=$(grep -cE '^not ok\b' <<<"$tap" || true)
	skipped=$(grep -cE '^ok\b.*# *(SKIP|skip)' <<<"$tap" || true)
	tr -d '\r' <"$console" | grep -E '^SIGMIG-RESULT ' | sed 's/^/  /' >&2 || true
	if [ "$failed" != 0 ]; then
		echo "failed:"
		grep -E '^not ok\b' <<<"$tap" | sed 's/^/  /'
	fi
	echo "debug kernel: build ${took[kernel]}s, initramfs ${took[initramfs]}s, boot+tests ${took[guest]}s; console $console"
	# A skipped test did not pass: it is counted apart, not in "passed".
	passed=$((passed - skipped))
	[ "$skipped" = 0 ] || echo "$skipped skipped (not counted as passed)"
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ] && [ "$passed" != 0 ] && [ "$splat_rc" = 0 ] && [ "$guest_rc" = 0 ]
}

main() {
	parse_args "$@"
	name=test-debug
	[ -z "$only" ] || name+="-$only"
	mkdir -p "$LOGS"
	build_kernel
	build_initramfs
	boot_and_test
	summary
}

main "$@"
