#!/usr/bin/env bash
# `make migrate-demo`: everything from a fresh Debian 12 machine to a report
# on the projector.  Installs what is missing, builds what is not cached
# (showing progress and the time left for the long steps), boots guests A and
# B, migrates a workload with thousands of pending signals from A to B
# (orchestrate/migrate.sh) and prints the report; the same report is written
# as a self-contained HTML page.
set -euo pipefail

PROG=migrate-demo
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
REPO=$SIGMIG_REPO
CACHE=${SIGMIG_CACHE:-/var/cache/sigmig}
LOGS="$REPO/build/logs"
threads=4 signals="" after=1000 html="$REPO/build/migrate-demo.html" keep=0 deps=1
live_rate=300 live_seconds=60 engine=runtime
STEP=0
STEPS=6
bg_pid=""

bold() { if [ -t 2 ]; then printf '\033[1m%s\033[0m' "$*"; else printf '%s' "$*"; fi; }
step() { STEP=$((STEP + 1)); printf '\n%s\n' "$(bold "[$STEP/$STEPS] $*")" >&2; }

usage_text() {
	cat <<'EOF'
Usage: migrate-demo.sh [--threads N] [--signals N] [--after N]
                       [--live-senders R] [--html FILE] [--keep] [--no-deps]
  --threads N   workload threads (default 4)
  --signals N   signals pending at the moment of the move (default 4000;
                2000 with --engine criu)
  --after N     signals sent to the moved process on B (default 1000)
  --live-senders R  two senders keep sending R signals/s each to the
                original from before the freeze through the move (default
                300; 0: the senders pause for the move)
  --html FILE   default build/migrate-demo.html
  --keep        leave the guests running after the report (Ctrl-C stops them)
  --no-deps     do not check Debian packages
  --engine criu the second act: sigplain, a program that does not link the
                runtime, moved by CRIU and the parasite with the live
                senders sending through the move; it holds every signal
                until its gate signal (sigplain --gate), so that --signals
                are pending in its threads' queues and the process's when
                it moves, and the gate opens on B
From make: make migrate-demo ARGS="--threads 8 --signals 20000"
           make migrate-demo ARGS="--engine criu"
EOF
}

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--threads) threads=${2:?}; shift 2 ;;
		--signals) signals=${2:?}; shift 2 ;;
		--after) after=${2:?}; shift 2 ;;
		--live-senders) live_rate=${2:?}; shift 2 ;;
		--html) html=${2:?}; shift 2 ;;
		--keep) keep=1; shift ;;
		--no-deps) deps=0; shift ;;
		--engine) engine=${2:?}; shift 2 ;;
		-h|--help) show_help ;;
		*) usage ;;
		esac
	done
	# sigplain's copy holds what moved and what arrived during the move at
	# once, under its RLIMIT_SIGPENDING: the kernel's default, half its
	# thread limit, a few thousand in a 1 GiB guest
	if [ -z "$signals" ]; then
		signals=4000
		[ "$engine" = runtime ] || signals=2000
	fi
}

stop_background() { stop_pids "$bg_pid"; }

fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# run_with_progress LABEL EXPECTED_S PROGRESS_FN LOG CMD...: run CMD in the
# background, print a progress line every 15 s (PROGRESS_FN prints a
# percentage or nothing), fail with the log's tail.  CMD gets eight times
# its expected duration, and at least half an hour: a cold machine on a slow
# mirror is slow, a hung step must still end the demo.
run_with_progress() {
	local label=$1 expected=$2 progress_fn=$3 log=$4 begin=$SECONDS pct rc=0 elapsed left limit
	shift 4
	limit=$((expected * 8 > 1800 ? expected * 8 : 1800))
	timeout -k 30 "$limit" "$@" >"$log" 2>&1 &
	bg_pid=$!
	while kill -0 "$bg_pid" 2>/dev/null; do
		sleep 1
		elapsed=$((SECONDS - begin))
		[ $((elapsed % 15)) = 0 ] || continue
		pct=$($progress_fn 2>/dev/null || true)
		if [ -n "$pct" ] && [ "$pct" -gt 0 ]; then
			left=$((elapsed * (100 - pct) / pct))
		else
			left=$((expected > elapsed ? expected - elapsed : 0))
		fi
		say "$label: $(fmt_time "$elapsed") elapsed${pct:+, $pct% done}, about $(fmt_time "$left") left ($(last_status "$log"))"
	done
	wait "$bg_pid" || rc=$?
	bg_pid=""
	if [ "$rc" != 0 ]; then
		tail -15 "$log" | sed 's/^/    /' >&2
		[ "$rc" != 124 ] || die "$label did not finish in ${limit}s, full log: $log"
		die "$label failed (rc=$rc), full log: $log"
	fi
}

no_progress() { :; }

# The last progress line of a step's log, without its timestamp prefix.
last_status() {
	grep -E '^\[' "$1" 2>/dev/null | tail -1 | sed 's/^\[[^]]*\] *//' | cut -c1-80
}

missing_packages() {
	make -s -C "$REPO" -n deps >/dev/null 2>&1 || return 0
	# The Makefile's list is the reference; ask dpkg which are missing.
	local p pkgs
	read -ra pkgs <<<"$(sed -n '/^DEB_PACKAGES/,/^$/p' "$REPO/Makefile" | sed 's/DEB_PACKAGES *:=//; s/\\//g' | tr '\n' ' ')"
	for p in "${pkgs[@]}"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || echo "$p"
	done
}

apt_progress() {
	local total done_n
	total=$(wc -w <"$LOGS/demo-missing.txt")
	done_n=$(grep -c '^Setting up ' "$LOGS/demo-deps.log" 2>/dev/null || true)
	[ "$total" -gt 0 ] && echo $((done_n * 100 / (total + 1) < 99 ? done_n * 100 / (total + 1) : 99))
}

step_deps() {
	step "Debian packages"
	if [ "$deps" = 0 ]; then
		say "skipped (--no-deps)"
		return
	fi
	missing_packages >"$LOGS/demo-missing.txt"
	if [ ! -s "$LOGS/demo-missing.txt" ]; then
		say "all present"
		return
	fi
	say "installing: $(tr '\n' ' ' <"$LOGS/demo-missing.txt")"
	say "first time: usually 2-6 minutes, depending on the mirror (log: $LOGS/demo-deps.log)"
	run_with_progress "apt-get" 300 apt_progress "$LOGS/demo-deps.log" make -s -C "$REPO" deps
	say "packages installed"
}

KERNEL_OBJS_FILE="$CACHE/kernel-objects.count"

kernel_progress() {
	local have want
	# Only a compile in progress has a meaningful percentage.
	grep -q 'building bzImage' "$LOGS/kernel-$1.log" 2>/dev/null || return 0
	want=$(cat "$KERNEL_OBJS_FILE" 2>/dev/null || echo 1100)
	have=$(find "$CACHE/build/$1" -name '*.o' 2>/dev/null | wc -l)
	[ "$want" -gt 0 ] && echo $((have * 100 / want < 99 ? have * 100 / want : 99))
}
kernel_progress_default() { kernel_progress default; }
kernel_progress_stock() { kernel_progress stock; }

step_kernel() {
	local flavor=${1:-default}
	step "Guest kernel ($flavor: linux-source-6.1 + kernel/patches)"
	if "$REPO/orchestrate/build-kernel.sh" --flavor "$flavor" --print-tree >/dev/null 2>&1 &&
	   [ -f "$CACHE/build/$flavor/sigmig-inputs.sha256" ]; then
		say "checking the cache (builds only if an input changed; a cold build takes ~7 min on 2 cores)"
	else
		say "the kernel inputs changed (or were never built): up to ~7-10 min on 2 cores"
	fi
	run_with_progress "kernel build" 480 "kernel_progress_$flavor" "$LOGS/kernel-$flavor.log" \
		"$REPO/orchestrate/build-kernel.sh" --flavor "$flavor"
	if find "$CACHE/build/$flavor" -name '*.o' 2>/dev/null | wc -l >"$KERNEL_OBJS_FILE.tmp"; then
		mv "$KERNEL_OBJS_FILE.tmp" "$KERNEL_OBJS_FILE" || true
	fi
	KERNEL=$(tail -1 "$LOGS/kernel-$flavor.log")
	[ -f "$KERNEL" ] || die "no bzImage reported by build-kernel.sh (see $LOGS/kernel-$flavor.log)"
	say "$(grep -E 'cached bzImage|built ' "$LOGS/kernel-$flavor.log" | tail -1 | sed 's/^\[[^]]*\] //')"
}

# The first source of the guest userspace newer than FILE, if any.
newer_inputs() {
	find "$REPO/kernel/selftests" "$REPO/kernel/bench" "$REPO/kernel/stress" "$REPO/kernel/Makefile" \
		"$REPO/workloads" "$REPO/agent" "$REPO/orchestrate/guest" \
		"$REPO/orchestrate/build-initramfs.sh" "$REPO/kernel/patches" \
		-path '*/build' -prune -o -newer "$1" -print -quit 2>/dev/null
}

step_initramfs() {
	step "Guest initramfs (busybox + workloads + agent)"
	INITRD="$REPO/build/initramfs/initramfs-demo.cpio.gz"
	if [ -f "$INITRD" ] && [ -z "$(newer_inputs "$INITRD")" ]; then
		say "cached: no source of the guest userspace changed since $(date -r "$INITRD" +%H:%M:%S)"
		return
	fi
	run_with_progress "initramfs" 60 no_progress "$LOGS/demo-initramfs.log" \
		"$REPO/orchestrate/build-initramfs.sh" --output "$INITRD"
	# Not "| grep -q": with pipefail, cpio's SIGPIPE would fail the test.
	gzip -dc "$INITRD" | cpio -t --quiet 2>/dev/null | grep -c '^sigmig/bin/sigmig-agent$' >/dev/null ||
		die "the initramfs has no sigmig-agent (did agent/ build? see $LOGS/demo-initramfs.log)"
	say "$(tail -2 "$LOGS/demo-initramfs.log" | head -1 | sed 's/^\[[^]]*\] //')"
}

# Runs inside two-guests.sh, with SIGMIG_* set.
# The second act's report: the move and sigledger's verdict over the
# ledgers (there are no queue snapshots to draw).
criu_summary() {	# RESULT
	jq -r '"  sigplain (no sigmig runtime), pid \(.workload_a.pid) on A -> pid \(.workload_b.pid) on B, moved by CRIU + the parasite",
		"  drained before CRIU: \(.migrate.signals) records (\(.migrate.target_workload.restore.queues | "\([.private[]] | map(tostring) | join(" + ")) in the threads'"'"' queues, \(.shared) process-wide")), requeued on B by the parasite, verified byte for byte",
		"  at the cutover \(.migrate.delta_drained), of which \(.migrate.carried_at_commit) went to B (\(.migrate.commit.already_held) CRIU had carried already)",
		"  downtime \(.migrate.timings.downtime_ms | floor) ms (parasite drain \(.migrate.timings.drain_ms | floor), CRIU dump \(.migrate.timings.criu_dump_ms | floor), transfer \(.migrate.timings.transfer_ms | floor), restore on B \(.migrate.timings.restore_ms | floor), commit \(.migrate.timings.commit_ms | floor), resume \(.migrate.timings.resume_ms | floor))",
		"  senders: \(.ledger.sent) sends succeeded, \(.ledger.delivered) delivered, lost \(.ledger.lost), duplicated \(.ledger.duplicated), mismatched \(.ledger.mismatched); \(.ledger_extra.live_esrch) later sends failed with ESRCH",
		"  verdict: \(if .ledger.verdict.pass then "PASS" else "FAIL: " + (.ledger.verdict.reasons | join("; ")) end)"' \
		"$1" >&2
}

run_migration() {
	local result rc=0
	step "Migration: A -> B with $signals pending signals on $threads threads"
	local live=() gate=()
	[ "$live_rate" = 0 ] || live=(--live-senders "$live_rate" --live-seconds "$live_seconds")
	[ "$engine" = runtime ] || gate=(--gated)
	result=$("$REPO/orchestrate/migrate.sh" --threads "$threads" --signals "$signals" \
		--after "$after" --engine "$engine" "${gate[@]}" "${live[@]}" --out "$REPO/build/migrate-demo") || rc=$?
	result=${result:-$REPO/build/migrate-demo/result.json}
	[ -f "$result" ] || die "migration failed before producing a result (rc=$rc)"
	step "Report"
	if [ "$engine" = criu ]; then
		criu_summary "$result"
	else
		python3 "$REPO/orchestrate/report/report.py" "$result" --html "$html" || rc=$?
	fi
	printf '\n  total demo time %s\n' "$(fmt_time $((SECONDS - START)))" >&2
	if [ "$keep" = 1 ]; then
		say "guests still up: A=$SIGMIG_A_URL B=$SIGMIG_B_URL, token in build/run/$SIGMIG_TWO_GUESTS_NAME.env (Ctrl-C to stop)"
		while :; do sleep 3600; done
	fi
	return "$rc"
}

main() {
	local inside=0
	if [ "${1:-}" = --inside-guests ]; then
		inside=1
		shift
	fi
	parse_args "$@"
	mkdir -p "$LOGS"
	on_exit stop_background
	if [ "$inside" = 1 ]; then
		# Re-entered by two-guests.sh once both agents are healthy.
		STEP=${DEMO_STEP:?} START=$((SECONDS - ($(date +%s) - ${DEMO_T0:?})))
		run_migration
		return
	fi
	step_deps
	step_kernel default
	step_initramfs
	step "Boot guests A and B (QEMU, usually under 15 s)"
	DEMO_STEP=$STEP DEMO_T0=$(($(date +%s) - (SECONDS - START))) \
		"$REPO/orchestrate/two-guests.sh" --kernel "$KERNEL" --initrd "$INITRD" --name demo \
		-- "$REPO/orchestrate/migrate-demo.sh" --inside-guests "$@"
}

main "$@"
