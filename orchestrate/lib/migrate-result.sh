# shellcheck shell=bash
# shellcheck disable=SC2154 # migrate.sh's options and state (sourced by it)
# The verdict and result.json of migrate.sh, sourced by it. The verdict is
# sigledger's (workloads/sigledger.c): the ledgers against the sender logs,
# the queues before and after the move byte for byte, and the outcome checks
# this script made (--fail). The report, the suites and this script's exit
# status all read it from result.json (.ledger.verdict); none decides again.

host_sigledger() {
	SIGLEDGER="$SIGMIG_REPO/workloads/build/sigledger"
	# Always through make: an older build would not know --before or --id.
	make -s -C "$SIGMIG_REPO/workloads" build/sigledger >&2 || die "cannot build sigledger on this host"
}

# PID:FROM_NS:TO_NS of the original's exit window, from the migrate reply's
# commit.exit_window (read from the text: jq would round the nanoseconds);
# nothing when the original was sealed before its last read, since a send
# in that window then failed (ESRCH) and none is excused.
exit_window_arg() {
	local from to
	jq -e '.commit.exit_window.sealed == true' "$out/migrate.json" >/dev/null 2>&1 && return 0
	from=$(grep -o '"from_ns": *[0-9]*' "$out/migrate.json" | grep -o '[0-9]*$') || return 0
	to=$(grep -o '"to_ns": *[0-9]*' "$out/migrate.json" | grep -o '[0-9]*$') || return 0
	printf '%s:%s:%s\n' "$PID_A" "$from" "$to"
}

# The queues are compared when the copy on B was held until they were read
# (else B ran in between, and B's runtime verified them itself). Sends that
# reached the original between its COMMIT's read of the queues and its exit
# being reaped are counted apart (exit_window) only on a kernel without
# SFD_IOC_SEAL, which leaves that window open (docs/design.md).
check_ledger() {
	local args=() f reason window=""
	host_sigledger
	[ "$MIGRATED" = 0 ] || window=$(exit_window_arg)
	[ -z "$window" ] || args+=(--exit-window "$window")
	[ "${engine:-runtime}" = runtime ] || args+=(--pid-namespace)
	# Senders on B (sender-N-b.log) stamp B's clock, as the restored ledger does.
	for f in "$out"/sender-*.log; do
		case $f in
		*-b.log) args+=(--target-log "$f") ;;
		*) [ -f "$f" ] && args+=(--log "$f") ;;
		esac
	done
	for f in "$out"/ledger-*.txt; do [ -s "$f" ] && args+=(--ledger "$f"); done
	if [ "$expect" = ok ] && [ "$MIGRATED" = 1 ] && [ "$EXACT" = 1 ]; then
		queue_snapshot "$out/before.json" "$out/queues-before.txt"
		queue_snapshot "$out/after.json" "$out/queues-after.txt"
		args+=(--before "$out/queues-before.txt" --after "$out/queues-after.txt")
	fi
	for reason in "${FAILURES[@]}"; do args+=(--fail "$reason"); done
	"$SIGLEDGER" --json "${args[@]}" >"$out/ledger.json" 2>"$out/ledger.err" || true
	if ! jq -e '.verdict.pass | type == "boolean"' "$out/ledger.json" >/dev/null 2>&1; then
		# No verdict: result.json says why, and everyone reading it fails.
		jq -cn --arg e "sigledger gave no verdict: $(head -c 300 "$out/ledger.err")" '{error: $e}' \
			>"$out/ledger.json"
		warn "$(jq -r .error "$out/ledger.json")"
		return
	fi
	say "ledger: $(jq -c '{sent, delivered, lost, duplicated, mismatched, exit_window}' "$out/ledger.json")"
}

# Deliveries per host, from the ledgers' D lines (the verdict counts both).
ledger_extra() {
	local a=0 b=0 moved=0
	if [ ! -f "$out/ledger-a.txt" ]; then
		a=$(grep -c '^D ' "$out/ledger-live.txt" 2>/dev/null || true)
	else
		a=$(grep -c '^D ' "$out/ledger-a.txt" 2>/dev/null || true)
		b=$(grep -c '^D ' "$out/ledger-live.txt" 2>/dev/null || true)
	fi
	[ "$MIGRATED" = 0 ] || moved=$(jqf "$out/migrate.json" 'must(.signals)')
	jq -cn --argjson a "${a:-0}" --argjson b "${b:-0}" --argjson m "$moved" \
		--argjson esrch "${LIVE_ESRCH:-0}" --argjson replayed "${REPLAYED:-0}" \
		'{delivered_a: $a, delivered_b: $b, migrated: $m, live_esrch: $esrch,
		  replayed: $replayed}'
}

# A reply the result embeds that is missing or not JSON (a failed request)
# is embedded as null: the file to embed, for jq --slurpfile.
json_or_null() {	# FILE
	if [ -n "$1" ] && jq -e . "$1" >/dev/null 2>&1; then
		printf '%s\n' "$1"
	else
		echo null >"$out/.null.json"
		printf '%s\n' "$out/.null.json"
	fi
}

# result.json: what happened, with every reply it is drawn from; its
# fields are read by orchestrate/report/report.py and the suites.
write_result() {
	local failures_json after=""
	failures_json=$(printf '%s\n' "${FAILURES[@]}" | jq -R . | jq -cs 'map(select(. != ""))')
	[ "$MIGRATED" = 0 ] || after="$out/after.json"
	# Files, not arguments: a snapshot is megabytes, an argument 128 KiB at most.
	jq -cn \
		--arg from "$from" --arg to "$to" --arg target "$target" --arg expect "$expect" --arg fault "$fault" \
		--argjson threads "$threads" --argjson signals "$signals" \
		--slurpfile capa "$(json_or_null "$out/capabilities-a.json")" \
		--slurpfile capb "$(json_or_null "$out/capabilities-b.json")" \
		--slurpfile before "$(json_or_null "$out/before.json")" --slurpfile after "$(json_or_null "$after")" \
		--slurpfile migrate "$(json_or_null "$out/migrate.json")" --slurpfile ledger "$out/ledger.json" \
		--argjson extra "$(ledger_extra)" --argjson failures "$failures_json" \
		--arg status "$MIGRATE_STATUS" --argjson exact "$EXACT" --argjson held "$HELD" \
		--argjson held_s "${HELD_SECONDS:-0}" --arg pid_a "$PID_A" --arg pid_b "${PID_B:-}" \
		--arg engine "${engine:-runtime}" --arg program "${PROGRAM_A:-sigstorm}" '
		def sizes: if . == null then null else
			{total: .pending_total, threads: [.threads[].pending.count], shared: .shared.count} end;
		{version: 2, expect: $expect, fault: $fault, exact_snapshot: ($exact == 1),
		 held_on_b: ($held == 1), held_seconds: $held_s, threads: $threads, signals: $signals,
		 from: {url: $from, label: "A", kernel: $capa[0].kernel.release, capabilities: $capa[0]},
		 to: {url: $to, target: $target, label: "B", kernel: $capb[0].kernel.release, capabilities: $capb[0]},
		 engine: $engine,
		 workload_a: {program: $program, pid: $pid_a}, workload_b: {program: $program, pid: $pid_b},
		 migrate: $migrate[0], migrate_status: $status,
		 pending: {before: ($before[0] | sizes), after: ($after[0] | sizes)},
		 ledger: $ledger[0], ledger_extra: $extra, failures: $failures}' >"$out/.result-rest.json"
	# The snapshots go in as the agents wrote them: jq would round their
	# integers above 2^53 (sival words, created_ns) to doubles.
	{
		printf '{"before":'
		cat "$(json_or_null "$out/before.json")"
		printf ',"after":'
		cat "$(json_or_null "$after")"
		printf ','
		tail -c +2 "$out/.result-rest.json"
	} >"$out/result.json.tmp"
	jq -e 'type == "object"' "$out/result.json.tmp" >/dev/null || die "the result is not JSON (see $out/result.json.tmp)"
	mv "$out/result.json.tmp" "$out/result.json"
}

# The exit status: sigledger's verdict, as result.json holds it.
verdict() {
	local pass reasons
	pass=$(jq -r '.ledger.verdict.pass' "$out/result.json")
	reasons=$(jq -r 'if .ledger.verdict then .ledger.verdict.reasons | join("; ") else .ledger.error end' \
		"$out/result.json")
	echo "$out/result.json"
	if [ "$pass" = true ]; then
		say "verdict: PASS ($expect)"
		return 0
	fi
	say "verdict: FAIL: $reasons"
	return 1
}
