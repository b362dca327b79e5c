#!/usr/bin/env bash
# The body of `make test`: install the Debian packages (make deps), build the
# kernel and the initramfs, run the host-side checks, boot the guest tests,
# run every extra suite in orchestrate/suites.d/*.sh, then count every TAP
# "ok"/"not ok" line of all of them and end with exactly one line
# "N passed, N failed", preceded by the time each phase took.
# Every step's output is also kept in build/logs/.  A step that fails without
# a "not ok" line of its own is counted as one synthetic failure.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=test-all
# shellcheck source=orchestrate/lib/common.sh
. "$REPO/orchestrate/lib/common.sh"
LOGS="$REPO/build/logs"
flavor=default
TAP_LOGS=()
PHASE_TIMES=()
# Bounds: a hung guest test or suite costs this much, then counts as failed.
# The slowest guest test takes ~70 s under TCG on an idle 2-core host.
TEST_TIMEOUT=${SIGMIG_TEST_TIMEOUT:-300}
SUITE_TIMEOUT=${SIGMIG_SUITE_TIMEOUT:-1800}
infra_failures=0
START=$SECONDS

usage_text() {
	cat <<'EOF'
Usage: test-all.sh [--kernel-flavor default|debug]
Environment: SIGMIG_TEST_TIMEOUT (per guest test program, default 300 s),
SIGMIG_SUITE_TIMEOUT (per suites.d script, default 1800 s).
EOF
}

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--kernel-flavor|--flavor) flavor=${2:?}; shift 2 ;;
		-h|--help) show_help ;;
		*) usage ;;
		esac
	done
}

banner() { printf '\n=== [%4ds] %s\n' $((SECONDS - START)) "$*" >&2; }

# Record an infrastructure failure as a TAP line in its own log.
infra_fail() {
	local log="$LOGS/infra.tap"
	echo "not ok - $*" | tee -a "$log"
	infra_failures=$((infra_failures + 1))
}

# run_logged NAME CMD...: run with output on the terminal and in $LOGS/NAME.log
run_logged() {
	local name=$1 rc
	shift
	"$@" 2>&1 | tee "$LOGS/$name.log"
	rc=${PIPESTATUS[0]}
	return "$rc"
}

# timed NAME CMD...: run CMD, remember how long it took for the summary.
timed() {
	local name=$1 t0=$SECONDS rc
	shift
	"$@"
	rc=$?
	PHASE_TIMES+=("$name $((SECONDS - t0))s")
	return "$rc"
}

install_deps() {
	banner "deps (Debian packages)"
	run_logged deps make --no-print-directory -C "$REPO" deps ||
		infra_fail "make deps, see build/logs/deps.log"
}

# kernel_path FLAVOR: build (or take from the cache) and print its bzImage;
# progress on the terminal and in build/logs/kernel-FLAVOR.log.
kernel_path() {
	"$REPO/orchestrate/build-kernel.sh" --flavor "$1" 2> >(tee "$LOGS/kernel-$1.log" >&2)
}

build_kernel() {
	banner "kernel ($flavor; cached unless an input changed)"
	SUITE_KERNEL=$(kernel_path "$flavor") || SUITE_KERNEL=""
	if [ ! -f "$SUITE_KERNEL" ]; then
		infra_fail "kernel build ($flavor), see build/logs/kernel-$flavor.log"
		return 1
	fi
	[ "$flavor" = default ] || return 0
	# The fault suite's B without the interface; without it that case fails.
	banner "kernel (stock 6.1 without the series, for the fault suite; cached)"
	SUITE_KERNEL_STOCK=$(kernel_path stock) || SUITE_KERNEL_STOCK=""
	if [ ! -f "$SUITE_KERNEL_STOCK" ]; then
		SUITE_KERNEL_STOCK=""
		echo "# stock kernel build failed, see build/logs/kernel-stock.log" >&2
	fi
	banner "kernel (the series without CONFIG_CHECKPOINT_RESTORE; cached)"
	NOCR_KERNEL=$(kernel_path nocr) || NOCR_KERNEL=""
	[ -f "$NOCR_KERNEL" ] || NOCR_KERNEL=""
	return 0
}

# The image guest-test.sh boots; --keep-going leaves a component whose
# install-guest fails out and lists it in <image>.failures (counted below).
build_initramfs() {
	banner "initramfs"
	run_logged initramfs "$REPO/orchestrate/build-initramfs.sh" --keep-going \
		--output "$REPO/build/initramfs/initramfs-$(guest_name).cpio.gz" ||
		{ infra_fail "initramfs build, see build/logs/initramfs.log"; return 1; }
}

guest_name() {
	if [ "$flavor" = default ]; then echo test; else echo "test-$flavor"; fi
}

host_checks() {
	banner "host-side checks"
	run_logged host-check "$REPO/orchestrate/host-check.sh"
	TAP_LOGS+=("$LOGS/host-check.log")
}

# The host checks (compiling, sanitizers, fuzzing: one core) run beside the
# guest tests (QEMU TCG), which leave the other core mostly to them; their
# output goes to the log only and is summed up when both are done.
HOST_PID=""
GUEST_PIDS=()
SUITE_PIDS=()
SUITE_KERNEL=""
SUITE_KERNEL_STOCK=""
host_checks_start() {
	banner "host-side checks, in the background (build/logs/host-check.log)"
	HOST_T0=$SECONDS
	"$REPO/orchestrate/host-check.sh" >"$LOGS/host-check.log" 2>&1 &
	HOST_PID=$!
	TAP_LOGS+=("$LOGS/host-check.log")
}

host_checks_wait() {
	local rc=0
	[ -n "$HOST_PID" ] || return 0
	wait "$HOST_PID" || rc=$?
	HOST_PID=""
	PHASE_TIMES+=("host $((SECONDS - HOST_T0))s (beside the guest)")
	banner "host-side checks done (rc=$rc): $(count_lines '^ok\b' "$LOGS/host-check.log") ok, $(count_lines '^not ok\b' "$LOGS/host-check.log") not ok"
	tr -d '\r' <"$LOGS/host-check.log" | grep -E '^not ok\b' | sed 's/^/  /' >&2
	if [ "$rc" != 0 ] && ! log_has "$LOGS/host-check.log" '^not ok'; then
		infra_fail "host checks exited with rc=$rc, see build/logs/host-check.log"
	fi
	return 0
}

stop_background() {
	local pid
	for pid in $HOST_PID "${GUEST_PIDS[@]}" "${SUITE_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
}

# Two guests at once, each running part of the guest tests: much of their
# time is bounded by the clock (stress runs, timer tests' sleeps), not CPU.
# The agent's tests (hundreds of curl and jq runs under TCG) take about as
# long as all the others together.
GUEST_SPLIT=${SIGMIG_GUEST_SPLIT:-agent}

guest_tests() {
	local name base part rc i keepalive follow
	local parts=("--only $GUEST_SPLIT" "--skip $GUEST_SPLIT") logs=()
	name=$(guest_name)
	base="$LOGS/guest-$name"
	logs=("$base-${GUEST_SPLIT//,/+}.log" "$base-no-${GUEST_SPLIT//,/+}.log")
	banner "guest tests: two QEMU TCG guests, '$GUEST_SPLIT' and the rest (consoles: ${logs[*]#"$REPO/"})"
	rm -f "${logs[@]}"
	# Progress: each program's result line as it ends; tail stops with keepalive.
	sleep 86400 &
	keepalive=$!
	tail -q -n +1 -F --pid="$keepalive" "${logs[@]}" 2>/dev/null | tr -d '\r' |
		grep --line-buffered -aE '^(SIGMIG-RESULT|not ok)' &
	follow=$!
	for part in "${parts[@]}"; do
		# shellcheck disable=SC2086 # "--only LIST" is two words
		"$REPO/orchestrate/guest-test.sh" --kernel-flavor "$flavor" --no-build --quiet \
			--initrd "$REPO/build/initramfs/initramfs-$name.cpio.gz" $part \
			--test-timeout "$TEST_TIMEOUT" >>"$LOGS/guest-runs.log" 2>&1 &
		GUEST_PIDS+=($!)
	done
	for i in 0 1; do
		rc=0
		wait "${GUEST_PIDS[$i]}" || rc=$?
		TAP_LOGS+=("${logs[$i]}")
		if ! log_has "${logs[$i]}" '^SIGMIG-EXIT [0-9]'; then
			infra_fail "guest (${parts[$i]}) produced no SIGMIG-EXIT (rc=$rc), see ${logs[$i]}"
		elif [ "$rc" != 0 ] && ! log_has "${logs[$i]}" '^not ok'; then
			infra_fail "guest (${parts[$i]}) exited with rc=$rc"
		fi
	done
	GUEST_PIDS=()
	kill "$keepalive" 2>/dev/null
	wait "$follow" 2>/dev/null
	[ -s "$REPO/build/initramfs/initramfs-$name.cpio.gz.failures" ] &&
		TAP_LOGS+=("$REPO/build/initramfs/initramfs-$name.cpio.gz.failures")
	return 0
}

# The series on a kernel built without CONFIG_CHECKPOINT_RESTORE: the
# interface must be absent there and PTRACE_PEEKSIGINFO intact.
NOCR_ONLY=kernel:cr_gate,upstream:peeksiginfo
NOCR_KERNEL=""

nocr_tests() {
	local log="$LOGS/guest-test-nocr-${NOCR_ONLY//,/+}.log" rc=0
	[ "$flavor" = default ] || return 0
	if [ -z "$NOCR_KERNEL" ]; then
		infra_fail "kernel build (nocr), see build/logs/kernel-nocr.log"
		return 0
	fi
	banner "guest tests on the kernel without checkpoint/restore (console: ${log#"$REPO/"})"
	rm -f "$log"
	"$REPO/orchestrate/guest-test.sh" --kernel-flavor nocr --no-build --quiet \
		--initrd "$REPO/build/initramfs/initramfs-$(guest_name).cpio.gz" --only "$NOCR_ONLY" \
		--test-timeout "$TEST_TIMEOUT" >>"$LOGS/guest-runs.log" 2>&1 || rc=$?
	TAP_LOGS+=("$log")
	tr -d '\r' <"$log" 2>/dev/null | grep -aE '^(SIGMIG-RESULT|not ok)' >&2
	if ! log_has "$log" '^SIGMIG-EXIT [0-9]'; then
		infra_fail "guest on the nocr kernel produced no SIGMIG-EXIT (rc=$rc), see $log"
	elif [ "$rc" != 0 ] && ! log_has "$log" '^not ok'; then
		infra_fail "guest on the nocr kernel exited with rc=$rc"
	fi
	return 0
}

# Every suite at once (two-guest cases spend most of their time waiting),
# from the images built above; each one's TAP is printed when it ends.
extra_suites() {
	local suite name rc i names=() pids=()
	export SIGMIG_SUITE_KERNEL=$SUITE_KERNEL SIGMIG_SUITE_KERNEL_STOCK=${SUITE_KERNEL_STOCK:-}
	SIGMIG_SUITE_INITRD="$REPO/build/initramfs/initramfs-$(guest_name).cpio.gz"
	export SIGMIG_SUITE_INITRD
	for suite in "$REPO"/orchestrate/suites.d/*.sh; do
		[ -f "$suite" ] || continue
		name=$(basename "$suite" .sh)
		timeout -k 60 "$SUITE_TIMEOUT" bash "$suite" >"$LOGS/suite-$name.log" 2>&1 &
		pids+=($!) names+=("$name")
	done
	SUITE_PIDS=("${pids[@]}")
	banner "suites, all at once: ${names[*]}"
	for i in "${!pids[@]}"; do
		name=${names[$i]}
		rc=0
		wait "${pids[$i]}" || rc=$?
		banner "suite $name (rc=$rc)"
		cat "$LOGS/suite-$name.log"
		[ "$rc" != 124 ] || echo "not ok - suite $name killed after ${SUITE_TIMEOUT}s" |
			tee -a "$LOGS/suite-$name.log"
		TAP_LOGS+=("$LOGS/suite-$name.log")
		if [ "$rc" != 0 ] && ! log_has "$LOGS/suite-$name.log" '^not ok'; then
			infra_fail "suite $name exited with rc=$rc"
		fi
	done
	SUITE_PIDS=()
}

count_lines() {
	local pattern=$1
	shift
	[ $# -gt 0 ] || { echo 0; return; }
	cat "$@" 2>/dev/null | tr -d '\r' | grep -cE "$pattern" || true
}

# Every process the tests started must be gone by now. Children inherit
# this run's lock as fd 7: one that still holds it was left behind (and
# would make the next make test wait for it). Each is named, killed, counted.
leftover_processes() {
	local fd pid lock
	lock=$(readlink -f "$LOGS/.make-test.lock")
	for fd in /proc/[0-9]*/fd/7; do
		pid=${fd#/proc/}
		pid=${pid%%/*}
		# this shell, and the subshell that runs this function
		if [ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ]; then
			continue
		fi
		[ "$(readlink "$fd" 2>/dev/null)" = "$lock" ] && echo "$pid"
	done
	return 0
}

check_leftovers() {
	local pids pid
	pids=$(leftover_processes)
	if [ -z "$pids" ]; then
		echo "ok - no process started by the tests outlived them" >>"$LOGS/infra.tap"
		return 0
	fi
	for pid in $pids; do
		[ -d "/proc/$pid" ] || continue
		echo "not ok - left behind by the tests: pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" \
			>>"$LOGS/infra.tap"
		kill -KILL "$pid" 2>/dev/null || true
	done
}

summary() {
	local passed failed skipped
	[ -f "$LOGS/infra.tap" ] && TAP_LOGS+=("$LOGS/infra.tap")
	passed=$(count_lines '^ok\b' "${TAP_LOGS[@]}")
	failed=$(count_lines '^not ok\b' "${TAP_LOGS[@]}")
	skipped=$(count_lines '^ok\b.*# *(SKIP|skip)' "${TAP_LOGS[@]}")
	banner "summary (logs in build/logs/)"
	if [ "$failed" != 0 ]; then
		echo "failures:"
		cat "${TAP_LOGS[@]}" 2>/dev/null | tr -d '\r' | grep -E '^not ok\b' | sed 's/^/  /'
	fi
	# A skipped test did not pass: it is counted apart, not in "passed".
	passed=$((passed - skipped))
	[ "$skipped" = 0 ] || echo "$skipped skipped (not counted as passed)"
	local times
	times=$(IFS=,; echo "${PHASE_TIMES[*]}")
	echo "phase times: ${times//,/, }; total $((SECONDS - START))s"
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ] && [ "$infra_failures" = 0 ] && [ "$passed" != 0 ]
}

main() {
	parse_args "$@"
	mkdir -p "$LOGS"
	# build/logs is shared: two concurrent runs would count each other's logs.
	exec 7>"$LOGS/.make-test.lock"
	flock -n 7 || { echo "waiting for another make test to finish" >&2; flock -w 7200 7; } ||
		{ echo "another make test holds $LOGS/.make-test.lock" >&2; exit 1; }
	rm -f "$LOGS/infra.tap"
	timed deps install_deps
	if timed kernel build_kernel && timed initramfs build_initramfs; then
		trap stop_background EXIT
		host_checks_start
		timed guest guest_tests
		timed nocr nocr_tests
		host_checks_wait
		timed suites extra_suites
	else
		timed host host_checks
	fi
	check_leftovers
	summary
}

main "$@"
