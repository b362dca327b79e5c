#!/usr/bin/env bash
# Host-side checks (no patched kernel needed), as TAP on stdout: `make -C
# <component> check` for every component whose Makefile has that target,
# then orchestrate/check-patches.sh.  A step that fails without printing a
# "not ok" line gets a synthetic one, so the failure is counted.
# Exit status: non-zero if any step failed.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
default_components="kernel kernel/stress workloads agent orchestrate"
# kernel/stress is checked on its own until kernel/Makefile recurses into it.
grep -qs 'stress' "$REPO/kernel/Makefile" && default_components="kernel workloads agent orchestrate"
COMPONENTS=${SIGMIG_COMPONENTS:-$default_components}
failed=0
# Each fuzzer (image reader as is and with its CRC recomputed; the agent's
# requests, restore query, peer replies, image JSON) runs this long in make
# test; `make -C workloads check FUZZ_SECONDS=600` for a longer campaign.
export FUZZ_SECONDS=${SIGMIG_FUZZ_SECONDS:-20}

run_step() {
	local label=$1 out rc
	shift
	echo "# SIGMIG-HOST $label"
	out=$(mktemp)
	"$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	if [ "$rc" != 0 ]; then
		failed=$((failed + 1))
		[ "$(tr -d '\r' <"$out" | grep -c '^not ok')" -gt 0 ] ||
			echo "not ok - $label exited with rc=$rc"
	fi
	rm -f "$out"
}

# make's database, not "make -n": a broken prerequisite must not hide the target.
has_check_target() {
	[ -f "$1/Makefile" ] && { make -C "$1" -qp 2>/dev/null || true; } | grep -q '^check:'
}

for c in $COMPONENTS; do
	if has_check_target "$REPO/$c"; then
		run_step "make -C $c check" make --no-print-directory -C "$REPO/$c" check
	else
		echo "# SIGMIG-HOST $c: no check target yet"
	fi
done
run_step "check-patches" "$REPO/orchestrate/check-patches.sh"
[ "$failed" = 0 ]
