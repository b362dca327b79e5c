#!/usr/bin/env bash
# Downtime (freeze to resume) of a migration A -> B for 1k, 10k, 100k and
# 1M pending signals, each run next to the time the same number of bytes
# takes to cross the same guest link alone (linkbench, TCP, A -> B, started
# through the agents), several runs, with every phase of the downtime.
# Writes a Markdown report to docs/downtime-bench.md (or --output).
set -euo pipefail

PROG=downtime-bench
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
REPO=$SIGMIG_REPO
LOGS="$REPO/build/logs"
OUT="$REPO/build/downtime-bench"
counts="1000 10000 100000 1000000"
runs=3
requeue_with=auto
output="$REPO/docs/downtime-bench.md"
inside=0
AUTH=""	# the agents' bearer token in a header file (agent_token_file)

usage_text() {
	cat <<'EOF'
Usage: downtime-bench.sh [--counts "1000 10000 100000 1000000"] [--runs N]
                         [--requeue-with auto|write|sigqueueinfo] [--output FILE]
  Boots two guests (two-guests.sh) and re-enters itself inside them with
  --inside, which measures with the guests of the calling two-guests.sh.
  Each of the N runs (default 3) migrates once per count and times the bare
  link for that image right after.
Environment: SIGMIG_BENCH_KERNEL, SIGMIG_BENCH_INITRD (prebuilt images).
EOF
}

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--counts) counts=${2:?}; shift 2 ;;
		--runs) runs=${2:?}; shift 2 ;;
		--requeue-with) requeue_with=${2:?}; shift 2 ;;
		--output) output=${2:?}; shift 2 ;;
		--inside) inside=1; shift ;;
		-h|--help) show_help ;;
		*) usage ;;
		esac
	done
}

# The guest image plus a second cpio archive holding linkbench (the kernel
# unpacks concatenated archives in order).
build_images() {
	local ovl="$OUT/overlay"
	# SIGMIG_BENCH_KERNEL: a prebuilt bzImage (e.g. while the cache is busy).
	KERNEL=${SIGMIG_BENCH_KERNEL:-$("$REPO/orchestrate/build-kernel.sh" --flavor default 2>>"$LOGS/downtime-bench-build.log")}
	if [ -n "${SIGMIG_BENCH_INITRD:-}" ]; then
		cp "$SIGMIG_BENCH_INITRD" "$OUT/base.cpio.gz"
	else
		"$REPO/orchestrate/build-initramfs.sh" --output "$OUT/base.cpio.gz" >/dev/null 2>>"$LOGS/downtime-bench-build.log"
	fi
	rm -rf "$ovl"
	mkdir -p "$ovl/sigmig/bin"
	# dynamic: GnuTLS is in the guest image already (the agent's libmicrohttpd)
	cc -O2 -Wall -Wextra -Werror -o "$ovl/sigmig/bin/linkbench" \
		"$REPO/orchestrate/bench/linkbench.c" -lgnutls
	(cd "$ovl" && find . -mindepth 1 | cpio -o -H newc -R 0:0 --quiet | gzip -n) >"$OUT/overlay.cpio.gz"
	cat "$OUT/base.cpio.gz" "$OUT/overlay.cpio.gz" >"$OUT/initramfs.cpio.gz"
}

api() {	# METHOD URL PATH [JSON]
	AGENT_API_TIMEOUT=600 agent_api "$1" "$2$3" "$AUTH" "${4:-}"
}

start_program() {	# URL PROGRAM ARGS-JSON -> id
	api POST "$1" /v1/workloads "$(jq -cn --arg p "$2" --argjson a "$3" '{program: $p, args: $a, control: false}')" |
		jq -r .id
}

# An error reply (404 once the agent forgot it) counts as gone.
workload_gone() {	# URL ID
	local body
	body=$(api GET "$1" "/v1/workloads/$2" 2>/dev/null) || return 0
	case "$(jq -r '.state // "?"' <<<"$body")" in
	exited|failed|stopped) return 0 ;;
	esac
	return 1
}

wait_gone() {	# URL ID
	wait_until 300 "workload $2 at $1 to end" workload_gone "$1" "$2"
}

# BYTES over the link, A -> B: plain TCP, or with "tls" over a TLS session
# made with the agents' own certificates (the handshake not counted: a
# migration makes it before the freeze). Prints ms.
link_time_once() {	# BYTES [tls]
	local bytes=$1 recv send port=$((9000 + RANDOM % 1000))
	local recv_args="[\"recv\",\"$port\"]"
	local send_args="[\"send\",\"10.99.0.2\",\"$port\",\"$bytes\"]"
	if [ "${2:-}" = tls ]; then
		recv_args="[\"recv-tls\",\"$port\",\"/sigmig/tls/agent.pem\",\"/sigmig/tls/agent.key\"]"
		send_args="[\"send-tls\",\"10.99.0.2\",\"$port\",\"$bytes\",\"/sigmig/tls/ca.pem\"]"
	fi
	recv=$(start_program "$SIGMIG_B_URL" linkbench "$recv_args")
	sleep 1
	send=$(start_program "$SIGMIG_A_URL" linkbench "$send_args")
	wait_gone "$SIGMIG_A_URL" "$send" || die "linkbench send did not finish"
	wait_gone "$SIGMIG_B_URL" "$recv" || true
	api GET "$SIGMIG_A_URL" "/v1/workloads/$send/log" | grep '"role":"send"' | jq -r '.ns / 1e6'
}

ms() { awk -v v="$1" 'BEGIN { printf "%.1f", v }'; }

# A move that succeeded but whose checks afterwards did not finish (at 1M
# the copy on B is still consuming its signals when migrate.sh looks at
# it): its downtime is still measured; the ledger is unknown ("?").
partial_result() {	# DIR
	[ -f "$1/result.json" ] && return 0
	[ -f "$1/migrate.json" ] || return 1
	jq '{migrate: ., pending: {before: {total: .signals}},
	     failures: ["migrate.sh did not finish its checks after the move"]}' \
		"$1/migrate.json" >"$1/result.json"
}

# One row per migration: count, run, then the agent's figures (the phases
# are consecutive: they add up to the downtime), the bare link for the same
# bytes right after, and the ledger's verdict.
measure() {
	local n run dir res image link tls_link
	: >"$OUT/rows.txt"
	for run in $(seq 1 "$runs"); do
		for n in $counts; do
			dir="$OUT/n$n-r$run"
			say "run $run: migration with $n signals piled up"
			"$REPO/orchestrate/migrate.sh" --quiet --resume-at-once --rt-only --settle 15 \
				--signals "$n" --after 0 --threads 4 --snapshot-limit 1 \
				--requeue-with "$requeue_with" --out "$dir" >/dev/null ||
				say "migrate.sh failed for $n (see $dir); recorded anyway"
			res="$dir/result.json"
			partial_result "$dir" || continue
			image=$(jq -r '.migrate.image_bytes // 0' "$res")
			link=$(link_time_once "$image") || link=""
			[ -n "$link" ] ||
				die "linkbench could not time $image bytes A -> B: no ratio without the link"
			tls_link=$(link_time_once "$image" tls) || tls_link=""
			[ -n "$tls_link" ] ||
				die "linkbench could not time $image bytes A -> B over TLS"
			jq -r --arg n "$n" --arg run "$run" --arg link "$link" --arg tls "$tls_link" \
				"$(cat <<-'EOF'
				.migrate.timings as $t
				| [$n, $run, .pending.before.total, .migrate.image_bytes, $t.freeze_ms, $t.dump_ms,
				   $t.transfer_ms, $t.restore_ms, $t.commit_ms, $t.resume_ms, $t.downtime_ms,
				   ([$t.freeze_ms, $t.dump_ms, $t.transfer_ms, $t.restore_ms, $t.commit_ms,
				     $t.resume_ms] | add), ($link | tonumber),
				   (.migrate.target_workload.restore.requeue // "?"),
				   (.ledger.lost // "?"), (.ledger.duplicated // "?"), (.failures | length),
				   ($tls | tonumber)] | @tsv
				EOF
			)" "$res" >>"$OUT/rows.txt"
			say "  $(tail -1 "$OUT/rows.txt")"
		done
	done
}

# For each count: the median of every column over the runs, and the spread
# (min-max) of the downtime, the links and the ratios.
summary_rows() {
	sort -t$'\t' -k1,1n -k2,2n "$OUT/rows.txt" | awk -F'\t' '
	function med(col,   i, j, k, v, a, m) {
		m = 0
		for (i = 1; i <= cnt; i++) a[++m] = val[i, col]
		for (i = 2; i <= m; i++) { v = a[i]; for (j = i - 1; j >= 1 && a[j] > v; j--) a[j + 1] = a[j]; a[j + 1] = v }
		k = int((m + 1) / 2)
		return (m % 2) ? a[k] : (a[k] + a[k + 1]) / 2
	}
	function lo(col,   i, r) { r = val[1, col]; for (i = 2; i <= cnt; i++) if (val[i, col] < r) r = val[i, col]; return r }
	function hi(col,   i, r) { r = val[1, col]; for (i = 2; i <= cnt; i++) if (val[i, col] > r) r = val[i, col]; return r }
	function flush(   c) {
		if (!cnt) return
		for (i = 1; i <= cnt; i++) {
			val[i, 19] = val[i, 13] > 0 ? val[i, 11] / val[i, 13] : 0
			val[i, 20] = val[i, 18] > 0 ? val[i, 11] / val[i, 18] : 0
		}
		printf "| %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | **%.1fx** (%.1f-%.1f) | **%.1fx** (%.1f-%.1f) |\n",
			med(3), med(4), cnt, med(5), med(6), med(7), med(8), med(9), med(10),
			med(11), lo(11), hi(11), med(13), lo(13), hi(13), med(18), lo(18), hi(18),
			med(19), lo(19), hi(19), med(20), lo(20), hi(20)
		cnt = 0
	}
	$1 != last { flush(); last = $1 }
	{ cnt++; for (c = 1; c <= NF; c++) val[cnt, c] = $c }
	END { flush() }'
}

run_rows() {
	sort -t$'\t' -k1,1n -k2,2n "$OUT/rows.txt" |
		while IFS=$'\t' read -r n run p img f d t r c rs dt sum l rq lost dup nfail tl; do
			[ "$nfail" = 0 ] || { lost="($lost)*"; dup="($dup)*"; }
			echo "| $n | $run | $p | $img | $(ms "$f") | $(ms "$d") | $(ms "$t") | $(ms "$r") | $(ms "$c") | $(ms "$rs") | $(ms "$dt") | $(ms "$sum") | $(ms "$l") | $(ms "$tl") | $rq | $lost | $dup |"
		done
}

write_doc() {
	local kernel_line results=("$OUT"/n*/result.json)
	kernel_line=$(jq -r '.from.kernel // "?"' "${results[0]}" 2>/dev/null || echo "?")
	{
		echo "# Migration downtime vs. the bare link"
		echo
		echo "Measured by \`orchestrate/downtime-bench.sh --runs $runs\` on $(date -u +%Y-%m-%d) ($(nproc) host cores,"
		echo "QEMU $(qemu-system-x86_64 --version | head -1 | awk '{print $4}') TCG, guests -smp 2 -m 1024, guest kernel $kernel_line)."
		echo "The workload (sigstorm, 4 threads) is frozen while sigsend piles N real-time signals up in"
		echo "its queues (per-thread and process-wide), then A's agent migrates it to B over the virtio-net"
		echo "link (socat relay, no fault) and resumes it there. Right after each migration, *link* is the"
		echo "time \`linkbench\` needs to push the same number of bytes (the image size) from A to B over the"
		echo "same link, TCP connect to final acknowledgement, started through the same agents: the"
		echo "two are measured side by side, run after run, so that a slow moment of the host shows in both."
		echo "The agents speak HTTPS to each other, so *tls link* is the same bytes over a TLS session"
		echo "made with the agents' certificates (GnuTLS on both ends; the handshake not counted, as a"
		echo "migration makes it before the freeze): the floor the image's transfer can reach."
		echo
		echo "## Summary (median of $runs runs, spread min-max)"
		echo
		echo "| pending | image bytes | runs | freeze ms | dump ms | transfer ms | restore ms | commit ms | resume ms | downtime ms | link ms | tls link ms | downtime / link | downtime / tls link |"
		echo "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
		summary_rows
		echo
		echo "The phases are the agent's, consecutive, and add up to the downtime (the *sum* column of"
		echo "every run below; \`migrate.sh\` fails a run where they do not): *freeze* until every thread"
		echo "is parked, *dump* until the runtime has taken every queue (the DUMP's line), *transfer* until the"
		echo "image's last byte is handed to A's TCP stack (the runtime encodes it as it goes out),"
		echo "*restore* until B answers (bytes in flight, B's restore and its byte-for-byte verification),"
		echo "*commit* the original's COMMIT, *resume* B's answer to the thaw, i.e. until the copy runs."
		echo "Medians of the phases need not add up to the median downtime."
		echo
		echo "## Every run"
		echo
		echo "| pending (asked) | run | pending | image bytes | freeze | dump | transfer | restore | commit | resume | downtime | sum | link | tls link | requeue | lost | dup |"
		echo "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--|--:|--:|"
		run_rows
		echo
		echo "(ms.) \\* the ledger could not be completed for this run (at 1M the copy on B is still"
		echo "consuming its signals when \`migrate.sh\` checks it); the migration itself had completed and"
		echo "B had verified every queue."
		echo
		echo "Reproduce: \`orchestrate/downtime-bench.sh\` (about $(( (SECONDS - START) / 60 + 1 )) minutes here); raw results in"
		echo "\`build/downtime-bench/n*-r*/result.json\`. Under TCG everything is ~10-50x slower than on"
		echo "hardware; the ratios are what carries over."
	} >"$output"
	say "wrote $output"
}

main() {
	parse_args "$@"
	mkdir -p "$OUT" "$LOGS"
	if [ "$inside" = 1 ]; then
		need_cmds curl jq
		agent_token_file AUTH "${SIGMIG_TOKEN:?--inside runs under two-guests.sh}"
		measure
		write_doc
		return
	fi
	build_images
	"$REPO/orchestrate/two-guests.sh" --name downtime-bench --kernel "$KERNEL" \
		--initrd "$OUT/initramfs.cpio.gz" -- \
		"$REPO/orchestrate/downtime-bench.sh" --inside --counts "$counts" --runs "$runs" \
		--requeue-with "$requeue_with" --output "$output"
}

main "$@"
