#!/usr/bin/env bash
# Downtime (freeze to resume) of a migration A -> B for 1k, 10k and 100k
# pending signals, next to the time the same number of bytes takes to cross
# the same guest link alone (linkbench, TCP, A -> B, started through the
# agents).  Writes a Markdown table to docs/downtime-bench.md (or --output).
set -euo pipefail

PROG=downtime-bench
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
REPO=$SIGMIG_REPO
LOGS="$REPO/build/logs"
OUT="$REPO/build/downtime-bench"
counts="1000 10000 100000"
runs=1
output="$REPO/docs/downtime-bench.md"
inside=0
AUTH=""	# the agents' bearer token in a header file (agent_token_file)

usage_text() {
	cat <<'EOF'
Usage: downtime-bench.sh [--counts "1000 10000 100000"] [--runs N] [--output FILE]
  Boots two guests (two-guests.sh) and re-enters itself inside them with
  --inside, which measures with the guests of the calling two-guests.sh.
Environment: SIGMIG_BENCH_KERNEL, SIGMIG_BENCH_INITRD (prebuilt images).
EOF
}

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--counts) counts=${2:?}; shift 2 ;;
		--runs) runs=${2:?}; shift 2 ;;
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
	cc -O2 -Wall -Wextra -Werror -static -o "$ovl/sigmig/bin/linkbench" "$REPO/orchestrate/bench/linkbench.c"
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

# Prints the best of three linkbench times (ms) for BYTES from A to B.
link_time() {
	local best="" t
	for _ in 1 2 3; do
		t=$(link_time_once "$1") || continue
		[ -n "$best" ] && awk -v a="$t" -v b="$best" 'BEGIN { exit !(a >= b) }' || best=$t
	done
	echo "${best:-0}"
}

link_time_once() {
	local bytes=$1 recv send port=$((9000 + RANDOM % 1000))
	recv=$(start_program "$SIGMIG_B_URL" linkbench "[\"recv\",\"$port\"]")
	sleep 1
	send=$(start_program "$SIGMIG_A_URL" linkbench "[\"send\",\"10.99.0.2\",\"$port\",\"$bytes\"]")
	wait_gone "$SIGMIG_A_URL" "$send" || die "linkbench send did not finish"
	wait_gone "$SIGMIG_B_URL" "$recv" || true
	api GET "$SIGMIG_A_URL" "/v1/workloads/$send/log" | grep '"role":"send"' | jq -r '.ns / 1e6'
}

ms() { awk -v v="$1" 'BEGIN { printf "%.1f", v }'; }

measure() {
	local n run dir res image link
	: >"$OUT/rows.txt"
	for n in $counts; do
		for run in $(seq 1 "$runs"); do
			dir="$OUT/n$n-r$run"
			say "migration with $n signals piled up (run $run)"
			res=$("$REPO/orchestrate/migrate.sh" --quiet --resume-at-once --rt-only --settle 15 --signals "$n" --after 0 --threads 4 --snapshot-limit 1 --out "$dir") ||
				say "migrate.sh failed for $n (see $dir); recorded anyway"
			res="$dir/result.json"
			[ -f "$res" ] || continue
			image=$(jq -r '.migrate.image_size // .migrate.image_bytes // .migrate.timings.image_bytes // 0' "$res")
			link=$(link_time "$image" || echo 0)
			jq -r --arg link "${link:-0}" --arg image "$image" "$(cat <<-'EOF'
				def t(p): (.migrate.timings // .migrate) as $m
					| ($m[p + "_ms"] // (($m[p + "_ns"] // 0) / 1e6));
				[.pending.before.total, ($image | tonumber), t("freeze"), t("dump"), t("transfer"),
				 t("restore"), t("commit"), (t("downtime") // t("total")), ($link | tonumber),
				 (.ledger.lost // "?"), (.ledger.duplicated // "?"), (.failures | length)] | @tsv
				EOF
			)" "$res" >>"$OUT/rows.txt"
			say "  $(tail -1 "$OUT/rows.txt")"
		done
	done
}

write_doc() {
	local kernel_line results=("$OUT"/n*/result.json)
	kernel_line=$(jq -r '.from.kernel // "?"' "${results[0]}" 2>/dev/null || echo "?")
	{
		echo "# Migration downtime vs. the bare link"
		echo
		echo "Measured by \`orchestrate/downtime-bench.sh\` on $(date -u +%Y-%m-%d) ($(nproc) host cores,"
		echo "QEMU $(qemu-system-x86_64 --version | head -1 | awk '{print $4}') TCG, guests -smp 2 -m 1024, guest kernel $kernel_line)."
		echo "The workload (sigstorm, 4 threads) is frozen while sigsend piles N signals up in its"
		echo "queues (per-thread and process-wide; standard signals coalesce, so \"pending\" can be below N),"
		echo "then A's agent migrates it to B over the virtio-net link (socat relay, no fault)."
		echo "*Downtime* is the agents' own measurement from freeze to resume on B; *link alone* is the"
		echo "time \`linkbench\` needs to push the same number of bytes (the image size) from A to B over"
		echo "the same link, TCP connect to final acknowledgement, started through the same agents."
		echo
		echo "| pending | image bytes | freeze ms | dump ms | transfer ms | restore ms | commit ms | downtime ms | link alone ms | lost | dup |"
		echo "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
		while IFS=$'\t' read -r p img f d t r c dt l lost dup nfail; do
			[ "$nfail" = 0 ] || { lost="($lost)*"; dup="($dup)*"; }
			echo "| $p | $img | $(ms "$f") | $(ms "$d") | $(ms "$t") | $(ms "$r") | $(ms "$c") | $(ms "$dt") | $(ms "$l") | $lost | $dup |"
		done <"$OUT/rows.txt"
		echo
		echo "\* the ledger could not be completed for this run (the copy on B stopped answering its control"
		echo "socket while consuming the moved signals, so unconsumed signals count as lost)."
		echo "The migration itself had completed and B had verified every queue."
		echo
		echo "Reading the table: A's agent ends *transfer* when the last byte of the image has been"
		echo "handed to its TCP stack, so bytes still in flight are counted in *restore* (which ends when"
		echo "B's answer arrives); compare *transfer + restore* with *link alone* (best of three"
		echo "linkbench runs) to see what the agents and the runtime add to moving the bytes. *dump* and"
		echo "*restore* grow linearly with the number of records (one 128-byte pread per batch on A,"
		echo "one rt_sigqueueinfo + re-read per record on B). Under TCG everything is ~10-50x slower"
		echo "than on hardware; the ratios are what carries over."
		echo
		echo "Reproduce: \`orchestrate/downtime-bench.sh\` (about $(( (SECONDS - START) / 60 + 1 )) minutes here); raw results in"
		echo "\`build/downtime-bench/n*/result.json\`."
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
		"$REPO/orchestrate/downtime-bench.sh" --inside --counts "$counts" --runs "$runs" --output "$output"
}

main "$@"
