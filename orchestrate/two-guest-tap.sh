# shellcheck shell=bash
# shellcheck disable=SC2034 # KERNEL_STOCK is for the sourcing suite
# Shared by orchestrate/suites.d/two-guest*.sh (sourced, not run): TAP output,
# the guest images, and one "boot two guests, migrate, check" case.
PROG=${SUITE:-two-guest-tap}
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
REPO=$SIGMIG_REPO
LOGS="$REPO/build/logs"
# shellcheck source=orchestrate/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/tap.sh"

# KERNEL, KERNEL_STOCK (if asked) and INITRD, built or taken from the cache.
guest_images() {
	local want_stock=${1:-0} built
	mkdir -p "$LOGS"
	# Prebuilt images: make test builds them once for suites that run at
	# the same time (two initramfs builds at once would share build dirs).
	if [ -n "${SIGMIG_SUITE_KERNEL:-}" ] && [ -n "${SIGMIG_SUITE_INITRD:-}" ]; then
		KERNEL=$SIGMIG_SUITE_KERNEL
		KERNEL_STOCK=${SIGMIG_SUITE_KERNEL_STOCK:-}
		built=$SIGMIG_SUITE_INITRD
	else
		KERNEL=$("$REPO/orchestrate/build-kernel.sh" --flavor default 2>>"$LOGS/$SUITE-build.log") ||
			{ tap 1 "guest kernel builds (see $LOGS/$SUITE-build.log)"; tap_done; exit 1; }
		if [ "$want_stock" = 1 ]; then
			KERNEL_STOCK=$("$REPO/orchestrate/build-kernel.sh" --flavor stock 2>>"$LOGS/$SUITE-build.log") ||
				KERNEL_STOCK=""
		fi
		built="$REPO/build/initramfs/initramfs-$SUITE.cpio.gz"
		"$REPO/orchestrate/build-initramfs.sh" --output "$built" >/dev/null 2>>"$LOGS/$SUITE-build.log" ||
			{ tap 1 "guest initramfs builds (see $LOGS/$SUITE-build.log)"; tap_done; exit 1; }
	fi
	# Not "| grep -q": with pipefail, cpio's SIGPIPE would fail the test.
	gzip -dc "$built" | cpio -t --quiet 2>/dev/null | grep -c '^sigmig/bin/sigmig-agent$' >/dev/null ||
		tap_skip_all "no sigmig-agent in the initramfs yet (agent/ not built)"
	# Every case boots two guests: an uncompressed archive spares each boot
	# the kernel's gunzip of ~50 MB under TCG (about a second).
	INITRD="$REPO/build/initramfs/initramfs-$SUITE.cpio"
	gzip -dc "$built" >"$INITRD" ||
		{ tap 1 "guest initramfs unpacks (see $built)"; tap_done; exit 1; }
}

# jq over the case's result.json; prints the value.
result() { jq -r "$1" "$RESULT" 2>/dev/null; }

# run_case NAME [two-guests options...] -- [migrate.sh options...]
# Sets RESULT (result.json) and CASE_RC (migrate.sh's exit status), also
# kept in the case's directory (rc, case.log) for use_case.
run_case() {
	local name=$1 tg=() mig=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do tg+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	mig=("$@")
	local out="$REPO/build/suites/$SUITE/$name"
	rm -rf "$out"
	mkdir -p "$out"
	RESULT="$out/result.json"
	CASE_RC=0
	timeout -k 10 900 "$REPO/orchestrate/two-guests.sh" --quiet --name "$SUITE-$name" \
		--kernel "$KERNEL" --initrd "$INITRD" "${tg[@]}" -- \
		"$REPO/orchestrate/migrate.sh" --out "$out" "${mig[@]}" \
		>"$out/stdout" 2>"$out/stderr" || CASE_RC=$?
	echo "$CASE_RC" >"$out/rc"
	{
		echo "# case $name: migrate.sh rc=$CASE_RC, log $out/stderr"
		[ "$CASE_RC" = 0 ] || tail -8 "$out/stderr" | diag
	} | tee "$out/case.log"
}

# start_case: run_case in the background, at most CASES_AT_ONCE at a time
# (each boots its own pair of guests and spends most of its time waiting
# for boots and fault timeouts); use_case NAME waits for that case, prints
# its lines and sets RESULT and CASE_RC.
CASES_AT_ONCE=${SIGMIG_CASES_AT_ONCE:-2}
declare -A CASE_PIDS=()
CASES_HOOKED=0

# Cases still running when the suite ends (killed, or a case never used):
# TERM their timeout, which passes it on to two-guests.sh, which stops its
# guests and relay.
stop_cases() {
	local pid children
	for pid in "${CASE_PIDS[@]}"; do
		kill -0 "$pid" 2>/dev/null || continue
		mapfile -t children < <(pgrep -P "$pid")
		stop_pids -t 20 "${children[@]}" "$pid"
	done
}

start_case() {
	if [ "$CASES_HOOKED" = 0 ]; then
		on_exit stop_cases
		CASES_HOOKED=1
	fi
	while [ "$(jobs -rp | wc -l)" -ge "$CASES_AT_ONCE" ]; do
		wait -n 2>/dev/null || true
	done
	run_case "$@" >/dev/null &
	CASE_PIDS[$1]=$!
}

use_case() {
	local out="$REPO/build/suites/$SUITE/$1"
	wait "${CASE_PIDS[$1]}" 2>/dev/null || true
	unset "CASE_PIDS[$1]"
	RESULT="$out/result.json"
	CASE_RC=$(cat "$out/rc" 2>/dev/null || echo 255)
	cat "$out/case.log" 2>/dev/null || echo "# case $1: no result (see $out)"
}

# The check every case ends with: the one verdict of the migration,
# sigledger's (ledger, queues, outcome), as migrate.sh stored it.
check_verdict() {
	local label=$1
	if [ ! -f "$RESULT" ]; then
		tap 1 "$label: a result was produced"
		return
	fi
	[ "$(result '.ledger.verdict.pass')" = true ]
	tap $? "$label: verdict $(result 'if .ledger.verdict.pass then "PASS" else "FAIL" end') ($(result '.ledger |
		if .verdict then "sent \(.sent), lost \(.lost), duplicated \(.duplicated), mismatched \(.mismatched)"
			+ (.verdict.reasons | if length > 0 then ": " + join("; ") else "" end)
		else .error end' | head -c 300))"
}
