#!/usr/bin/env bash
# Migrate a signal-heavy workload from one sigmig agent to another, through
# the agents' HTTP APIs only, and check that no signal was lost, duplicated
# or altered.  Works with any two agents (real hosts too); by default the two
# local guests of two-guests.sh (its environment variables).
#
# Usage: migrate.sh [options]
#   --from URL          source agent, as this host reaches it ($SIGMIG_A_URL)
#   --to URL            destination agent, as this host reaches it ($SIGMIG_B_URL)
#   --target URL        destination as the SOURCE agent reaches it, the address
#                       the image is streamed to ($SIGMIG_B_LINK_URL, else --to)
#   --token T           bearer token of both agents ($SIGMIG_TOKEN)
#   --token-to T        token of the destination if different
#   --threads N         workload threads (default 4)
#   --signals N         signals to pile up pending before the move (default 4000)
#   --settle S          wait S seconds before looking at the copy on B (default 0)
#   --rt-only           pile up real-time signals only (each one queues: pending = sent)
#   --after N           signals sent to the moved process on the destination (default 1000)
#   --expect ok|rollback   rollback: a fault is injected, the original must stay
#                       on the source (default ok)
#   --fault TEXT        describes the injected fault in the result
#   --migrate-timeout-ms N  passed to the source agent (default: agent's)
#   --before-migrate CMD    run (eval) just before POST .../migrate, e.g. to arm
#                       a link fault; --during-migrate CMD runs in the background
#   --snapshot-limit N  records per queue in the before/after snapshots (default 100000)
#   --resume-at-once    let the source agent resume the copy on B right after
#                       its commit (downtime = freeze to resume); by default
#                       the copy is held frozen until its queues are read, so
#                       that "after on B" is exactly what arrived
#   --out DIR           result.json, ledgers, logs (default build/migrate/<time>)
#   --quiet             no progress on stderr
# Prints the path of result.json on stdout.  Exit status 0 when the ledger
# shows lost = duplicated = mismatched = 0 and the outcome is the expected one.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

from=${SIGMIG_A_URL:-}
to=${SIGMIG_B_URL:-}
target=${SIGMIG_B_LINK_URL:-}
token=${SIGMIG_TOKEN:-}
token_to=""
threads=4
signals=4000
after=1000
expect=ok
fault=""
migrate_timeout_ms=""
before_migrate=""
during_migrate=""
out=""
quiet=0
snapshot_limit=100000
rt_only=0
settle=0
resume_target=false
EXACT=1
START=$SECONDS

say() { [ "$quiet" = 1 ] || printf '[migrate %3ds] %s\n' $((SECONDS - START)) "$*" >&2; }
die() { printf '[migrate %3ds] ERROR: %s\n' $((SECONDS - START)) "$*" >&2; exit 1; }
usage() { sed -n '7,34p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--from) from=${2:?}; shift 2 ;;
		--to) to=${2:?}; shift 2 ;;
		--target) target=${2:?}; shift 2 ;;
		--token) token=${2?}; shift 2 ;;
		--token-to) token_to=${2?}; shift 2 ;;
		--threads) threads=${2:?}; shift 2 ;;
		--signals) signals=${2:?}; shift 2 ;;
		--after) after=${2:?}; shift 2 ;;
		--rt-only) rt_only=1; shift ;;
		--settle) settle=${2:?}; shift 2 ;;
		--expect) expect=${2:?}; shift 2 ;;
		--fault) fault=${2?}; shift 2 ;;
		--migrate-timeout-ms) migrate_timeout_ms=${2:?}; shift 2 ;;
		--before-migrate) before_migrate=${2?}; shift 2 ;;
		--during-migrate) during_migrate=${2?}; shift 2 ;;
		--out) out=${2:?}; shift 2 ;;
		--snapshot-limit) snapshot_limit=${2:?}; shift 2 ;;
		--resume-at-once) resume_target=true; shift ;;
		--quiet) quiet=1; shift ;;
		-h|--help) usage ;;
		*) usage ;;
		esac
	done
	[ -n "$from" ] && [ -n "$to" ] || die "--from and --to are required (or run under two-guests.sh)"
	from=${from%/} to=${to%/}
	target=${target:-$to}
	target=${target%/}
	token_to=${token_to:-$token}
	case "$expect" in ok|rollback) ;; *) die "--expect ok|rollback" ;; esac
	[[ $threads =~ ^[0-9]+$ ]] && [ "$threads" -ge 1 ] || die "--threads: a positive number"
	[[ $signals =~ ^[0-9]+$ ]] && [ "$signals" -ge 1 ] || die "--signals: a positive number"
	[[ $after =~ ^[0-9]+$ ]] || die "--after: a number"
	out=${out:-$REPO/build/migrate/$(date +%Y%m%d-%H%M%S)-$$}
	mkdir -p "$out"
	# A reused directory must not lend a failed run the files of an older one.
	rm -f "$out"/*.json "$out"/*.txt "$out"/*.log "$out"/.body
}

# ---------------------------------------------------------------- HTTP

# api METHOD BASE PATH TOKEN [JSON|@FILE] -> body on stdout; non-zero (and the
# problem's code and detail on stderr) when the status is not 2xx.
api() {
	local method=$1 base=$2 path=$3 tok=$4 data=${5:-} body status
	local args=(-sS -m "${API_TIMEOUT:-60}" -X "$method" -o "$out/.body" -w '%{http_code}')
	[ -z "$tok" ] || args+=(-H "Authorization: Bearer $tok")
	if [ -n "$data" ]; then
		if [ "${data:0:1}" = @ ]; then
			args+=(-H 'Content-Type: application/octet-stream' --data-binary "$data")
		else
			args+=(-H 'Content-Type: application/json' --data-binary "$data")
		fi
	fi
	status=$(curl "${args[@]}" "$base$path") || { echo "curl failed: $method $base$path" >&2; return 1; }
	body=$(cat "$out/.body")
	LAST_STATUS=$status
	printf '%s' "$body"
	if [ "${status:0:1}" != 2 ]; then
		echo "$method $base$path -> HTTP $status: $(jq -r '"\(.code // "?"): \(.detail // .title // "")"' <<<"$body" 2>/dev/null || echo "$body")" >&2
		return 1
	fi
}

api_a() { api "$1" "$from" "$2" "$token" "${3:-}"; }
api_b() { api "$1" "$to" "$2" "$token_to" "${3:-}"; }

# ---------------------------------------------------------------- steps

preflight() {
	local h
	for h in a b; do
		"api_$h" GET /v1/health >/dev/null || die "agent $h ($([ $h = a ] && echo "$from" || echo "$to")) is not healthy"
		"api_$h" GET /v1/capabilities >"$out/capabilities-$h.json" || die "GET /v1/capabilities on $h failed"
	done
	say "A: $(caps_line a)"
	say "B: $(caps_line b)"
	jq -e "$JQ_DEFS"' has_interface' "$out/capabilities-a.json" >/dev/null ||
		die "the source kernel lacks the pending-signal interface: nothing to migrate from"
}

caps_line() {
	jqr '"kernel \(kernel_release), interface \(has_interface), agent \(.agent_version // .version // "?")"' \
		"$out/capabilities-$1.json"
}

# ------------------------------------------------------------ JSON helpers

JQ_DEFS='
def recs: if type == "array" then . elif type == "object" then (.signals // .pending // .records // .entries // []) else [] end;
def thread_queue: (.private // .pending // .signals // .queue // .records);
def has_interface: (.migration // .signalfd.sfd_raw // .interface // false);
def kernel_release: (if (.kernel | type) == "object" then .kernel.release else (.kernel_release // .kernel) end // "?");
def qcount: if type == "object" and (.count | type) == "number" then .count else (recs | length) end;
def pending_total: if (.pending_total? | type) == "number" then .pending_total
	else ([.threads[]? | thread_queue | qcount] | add // 0) + ((.shared // .process // .group) | qcount) end;
'

jqr() { jq -r "$JQ_DEFS $1" "${@:2}"; }

pending_of() {	# URL TOKEN ID -> total pending signals
	api GET "$1" "/v1/workloads/$3/signals?limit=1" "$2" | jqr 'pending_total'
}

workload_field() {	# URL TOKEN ID JQ-EXPR
	api GET "$1" "/v1/workloads/$3" "$2" | jqr "$4"
}

start_workload() {	# URL TOKEN JSON -> id
	local reply
	reply=$(api POST "$1" /v1/workloads "$2" "$3") || return 1
	jq -r '.id' <<<"$reply"
}

wait_exited() {	# URL TOKEN ID TIMEOUT
	local deadline=$((SECONDS + $4)) state
	while :; do
		state=$(workload_field "$1" "$2" "$3" '.state // "?"' 2>/dev/null || echo gone)
		case "$state" in exited|gone|failed|stopped) return 0 ;; esac
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.5
	done
}

fetch_file() {	# URL TOKEN ID WHICH DEST
	api GET "$1" "/v1/workloads/$3/$4" "$2" >"$5"
}

# --------------------------------------------------------------- the flow

storm_args() {
	jq -cn --argjson t "$threads" '{program: "sigstorm", control: true,
		args: ["--threads", ($t | tostring), "--sigpending", "1048576"]}'
}

# A sender with a fixed count: it ends by itself, which is how it "pauses".
# Its log goes to its stdout, which the agent keeps as the workload's log
# (/proc/self/fd/1: the guest's devtmpfs has no /dev/stdout link).
sender_args() {	# PID COUNT SEED [RATE [RT_ONLY]]
	jq -cn --arg pid "$1" --arg n "$2" --arg seed "$3" --arg rate "${4:-0}" --arg rt "${5:-0}" '{program: "sigsend", control: false,
		args: (["--pid", $pid, "--log", "/proc/self/fd/1", "--count", $n, "--seed", $seed]
		       + (if $rate != "0" then ["--rate", $rate] else [] end)
		       + (if $rt == "1" then ["--kinds", "sigqueue,tgsigqueue", "--std-percent", "0"] else [] end))}'
}

# sigledger tells senders apart by pid only, and two guests booted alike hand
# out the same pids: before a sender starts on another host, advance that
# host's pids past every sender pid used so far (integration finding 9).
skip_sender_pids() {	# BASE TOKEN
	local max=0 p id tries=0
	for p in "${SENDER_PIDS[@]}"; do [ "$p" -gt "$max" ] && max=$p; done
	while [ "$tries" -lt 200 ]; do
		id=$(start_workload "$1" "$2" '{"program":"sigsend","control":false,"args":["--help"]}') || return 0
		p=$(workload_field "$1" "$2" "$id" '.pid')
		api DELETE "$1" "/v1/workloads/$id" "$2" >/dev/null 2>&1 || true
		[ "$p" -lt "$max" ] || return 0
		tries=$((tries + 1))
	done
}

run_sender() {	# BASE TOKEN HOST PID COUNT SEED RATE [RT_ONLY] -> waits for it, records its id
	local id pid
	[ "$3" = a ] || skip_sender_pids "$1" "$2"
	id=$(start_workload "$1" "$2" "$(sender_args "$4" "$5" "$6" "$7" "${8:-0}")") || die "cannot start sigsend on $3"
	pid=$(workload_field "$1" "$2" "$id" '.pid')
	case " ${SENDER_PIDS[*]} " in
	*" $pid "*) FAILURES+=("sender pid $pid used on both hosts: sigledger cannot tell them apart") ;;
	esac
	SENDER_PIDS+=("$pid")
	SENDERS+=("$3:$id")
	wait_exited "$1" "$2" "$id" 900 || die "sigsend $id on $3 did not finish within 900s"
}

start_on_a() {
	STORM_A=$(start_workload "$from" "$token" "$(storm_args)") || die "cannot start sigstorm on A"
	PID_A=$(workload_field "$from" "$token" "$STORM_A" '.pid')
	say "sigstorm started on A: workload $STORM_A, pid $PID_A, $threads threads"
	# Some traffic while it runs: these signals are delivered on A.
	run_sender "$from" "$token" a "$PID_A" 300 1 0
	say "warm-up: 300 signals sent while it runs (delivered on A)"
}

pile_up() {
	local pending
	api_a POST "/v1/workloads/$STORM_A/freeze" >"$out/freeze-pile.json" ||
		die "cannot freeze the workload on A"
	say "workload frozen on A (all threads park with every signal blocked): signals now pile up"
	run_sender "$from" "$token" a "$PID_A" "$signals" 2 0 "$rt_only"
	pending=$(pending_of "$from" "$token" "$STORM_A")
	say "$signals sent to the frozen workload: $pending pending on A (standard signals coalesce)"
	[ "$pending" -gt 0 ] || die "nothing pending on A"
}

snapshot_before() {
	api_a GET "/v1/workloads/$STORM_A/signals?limit=$snapshot_limit" >"$out/before.json" || die "GET signals on A failed"
	say "snapshot before: $(jqr '[.threads[]? | thread_queue | qcount] | map(tostring) | join(" + ")' "$out/before.json") private + $(jqr '(.shared // .process // .group) | qcount' "$out/before.json") process-wide"
}

migrate_call() {
	local body rc=0 begin=$SECONDS
	body=$(jq -cn --arg t "$target" --arg k "$token_to" --arg ms "$migrate_timeout_ms" \
		--argjson resume "$resume_target" \
		'{target: $t, resume_target: $resume} + (if $k != "" then {token: $k} else {} end)
		 + (if $ms != "" then {timeout_ms: ($ms | tonumber)} else {} end)')
	[ -z "$before_migrate" ] || eval "$before_migrate"
	[ -z "$during_migrate" ] || { eval "$during_migrate" & DURING_PID=$!; }
	say "POST $from/v1/workloads/$STORM_A/migrate -> $target"
	API_TIMEOUT=600 api_a POST "/v1/workloads/$STORM_A/migrate" "$body" >"$out/migrate.json" || rc=$?
	MIGRATE_STATUS=$LAST_STATUS
	[ -z "${DURING_PID:-}" ] || wait "$DURING_PID" 2>/dev/null || true
	say "migrate answered HTTP $MIGRATE_STATUS after $((SECONDS - begin))s"
	return "$rc"
}

after_ok() {
	HOLD_START=$EPOCHREALTIME
	STORM_B=$(jq -r '.target_workload.id // .workload.id // .restored.id // .target.workload.id // .target.id // empty' "$out/migrate.json")
	[ -n "$STORM_B" ] || die "the migrate reply names no workload on B: $(head -c 300 "$out/migrate.json")"
	PID_B=$(workload_field "$to" "$token_to" "$STORM_B" '.pid')
	[ "$settle" = 0 ] || { say "letting the copy on B settle for ${settle}s"; sleep "$settle"; }
	local try got=0
	for try in 1 2 3 4 5; do
		# A copy busy consuming thousands of signals may not park in
		# time for the peek (integration finding 4): try again.
		if api_b GET "/v1/workloads/$STORM_B/signals?limit=$snapshot_limit" >"$out/after.json"; then
			got=1
			break
		fi
		sleep 1
	done
	[ "$got" = 1 ] || FAILURES+=("GET signals on B failed $try times")
	api_b GET "/v1/workloads/$STORM_B" >"$out/workload-b.json" || true
	if [ "$(jq -r .state "$out/workload-b.json")" = frozen ]; then
		HELD=1
		api_b POST "/v1/workloads/$STORM_B/thaw" >/dev/null || die "cannot thaw the copy on B"
		HELD_SECONDS=$(awk -v a="$HOLD_START" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
		say "the copy on B was held frozen ${HELD_SECONDS}s for the snapshot; thawed"
	else
		EXACT=0
	fi
	say "on B: workload $STORM_B, pid $PID_B, state $(jq -r '.state' "$out/workload-b.json"), $(jqr 'pending_total' "$out/after.json") pending"
	if api_a GET "/v1/workloads/$STORM_A" >"$out/original-a.json" 2>/dev/null; then
		local st
		st=$(jq -r '.state' "$out/original-a.json")
		case "$st" in migrated|exited|committed|stopped|gone) ;; *) FAILURES+=("the original on A is still '$st' after a confirmed move") ;; esac
	fi
	if [ "$after" -gt 0 ]; then
		run_sender "$to" "$token_to" b "$PID_B" "$after" 3 0
		say "$after more signals sent to the moved process on B"
	fi
	LIVE_URL=$to LIVE_TOKEN=$token_to LIVE_ID=$STORM_B
}

after_rollback() {
	local st
	st=$(workload_field "$from" "$token" "$STORM_A" '.state' 2>/dev/null || echo gone)
	say "original on A after the failed move: $st"
	[ "$st" = running ] || FAILURES+=("the original on A is '$st', not running, after the failed move")
	api_b GET /v1/workloads >"$out/workloads-b.json" 2>/dev/null || true
	STRAY_B=$(jq -r '[(.workloads // .)[]? | select(.program == "sigstorm" and .restored == true
		and (.state == "running" or .state == "frozen"))][0].id // empty' "$out/workloads-b.json" 2>/dev/null)
	# A copy held frozen since its restore (?hold=1) never resumed: not a
	# second copy; its ledger is still collected and checked below.
	if [ -n "$STRAY_B" ] && [ "$(jq -r --arg id "$STRAY_B" '[(.workloads // .)[]? | select(.id == $id)][0].held // false' "$out/workloads-b.json")" = true ]; then
		say "B holds its restored copy $STRAY_B frozen (never resumed): not a second copy"
	elif [ -n "$STRAY_B" ]; then
		FAILURES+=("B kept a restored copy ($STRAY_B) running although A thawed the original: two copies")
	fi
	cp "$out/before.json" "$out/after-a.json"
	if [ "$after" -gt 0 ]; then
		run_sender "$from" "$token" a "$PID_A" "$after" 3 0
		say "$after more signals sent to the original, still on A"
	fi
	LIVE_URL=$from LIVE_TOKEN=$token LIVE_ID=$STORM_A
}

# Signals a sender put there (the workload's own timers, SIGCHLD, SIGIO and
# mq_notify keep coming and are checked as local signals).
sent_pending_of() {	# URL TOKEN ID
	api GET "$1" "/v1/workloads/$3/signals?limit=1000000" "$2" |
		jqr '[(.threads[]? | thread_queue | recs[]), ((.shared // .process // .group) | recs[])]
		     | map(select(.code_name == "SI_USER" or .code_name == "SI_QUEUE" or .code_name == "SI_TKILL")) | length'
}

# Let the live copy consume what senders left pending, freeze it so that
# its ledger is final, fetch every file, then stop it.  Pending signals are
# read only while it is frozen: few control round trips on a running
# workload (see integration finding 4).
drain_and_collect() {
	local tries=0 pending spec host id url tok n=0
	while :; do
		sleep 2
		api POST "$LIVE_URL" "/v1/workloads/$LIVE_ID/freeze" "$LIVE_TOKEN" >/dev/null ||
			{ FAILURES+=("cannot freeze the live copy to read its final ledger"); break; }
		pending=$(sent_pending_of "$LIVE_URL" "$LIVE_TOKEN" "$LIVE_ID") || pending=unknown
		[ "$pending" = 0 ] && break
		tries=$((tries + 1))
		if [ "$tries" -ge 15 ]; then
			FAILURES+=("$pending sent signals still pending on the live copy after 30s")
			break
		fi
		api POST "$LIVE_URL" "/v1/workloads/$LIVE_ID/thaw" "$LIVE_TOKEN" >/dev/null || true
	done
	say "every sent signal consumed on the live copy, now frozen; collecting the ledgers"
	fetch_file "$LIVE_URL" "$LIVE_TOKEN" "$LIVE_ID" ledger "$out/ledger-live.txt" ||
		FAILURES+=("cannot fetch the live copy's ledger")
	if [ "$LIVE_ID" != "$STORM_A" ] || [ "$LIVE_URL" != "$from" ]; then
		fetch_file "$from" "$token" "$STORM_A" ledger "$out/ledger-a.txt" ||
			FAILURES+=("cannot fetch the original's ledger from A")
	fi
	for spec in "${SENDERS[@]}"; do
		host=${spec%%:*} id=${spec#*:}
		if [ "$host" = a ]; then url=$from tok=$token; else url=$to tok=$token_to; fi
		n=$((n + 1))
		fetch_file "$url" "$tok" "$id" log "$out/sender-$n-$host.log" ||
			FAILURES+=("cannot fetch sender log $id from $host")
	done
	if [ -n "${STRAY_B:-}" ]; then
		# Its deliveries count too: the ledger shows what two copies did.
		api_b POST "/v1/workloads/$STRAY_B/freeze" >/dev/null || true
		fetch_file "$to" "$token_to" "$STRAY_B" ledger "$out/ledger-b-stray.txt" || true
		api_b DELETE "/v1/workloads/$STRAY_B" >/dev/null || true
	fi
	api DELETE "$LIVE_URL" "/v1/workloads/$LIVE_ID" "$LIVE_TOKEN" >"$out/stop-live.json" || true
}

SIGLEDGER=""
host_sigledger() {
	SIGLEDGER="$REPO/workloads/build/sigledger"
	if [ ! -x "$SIGLEDGER" ]; then
		make -s -C "$REPO/workloads" build/sigledger >&2 || die "cannot build sigledger on this host"
	fi
}

check_ledger() {
	local args=() f
	host_sigledger
	for f in "$out"/sender-*.log; do [ -f "$f" ] && args+=(--log "$f"); done
	for f in "$out"/ledger-*.txt; do [ -s "$f" ] && args+=(--ledger "$f"); done
	"$SIGLEDGER" --json "${args[@]}" >"$out/ledger.json" 2>"$out/ledger.err" || true
	jq -e . "$out/ledger.json" >/dev/null 2>&1 || {
		FAILURES+=("sigledger gave no verdict: $(head -c 300 "$out/ledger.err")")
		echo '{}' >"$out/ledger.json"
	}
	say "ledger: $(jq -c '{sent, delivered, lost, duplicated, mismatched}' "$out/ledger.json")"
}

# Deliveries per host, from the ledgers' D lines (the verdict counts both).
ledger_extra() {
	local a=0 b=0
	if [ ! -f "$out/ledger-a.txt" ]; then
		a=$(grep -c '^D ' "$out/ledger-live.txt" 2>/dev/null || true)
	else
		a=$(grep -c '^D ' "$out/ledger-a.txt" 2>/dev/null || true)
		b=$(grep -c '^D ' "$out/ledger-live.txt" 2>/dev/null || true)
	fi
	jq -cn --argjson a "${a:-0}" --argjson b "${b:-0}" --argjson m "$MIGRATED" \
		'{delivered_a: $a, delivered_b: $b, migrated: $m}'
}

# Every file the result embeds must be JSON, even after a failure.
json_or_empty() {
	local f
	for f in "$@"; do
		jq -e . "$f" >/dev/null 2>&1 && continue
		jq -cn --arg text "$(head -c 2000 "$f" 2>/dev/null)" '{unparsed: $text}' >"$f"
	done
}

write_result() {
	local failures_json
	json_or_empty "$out/capabilities-a.json" "$out/capabilities-b.json" "$out/before.json" \
		"$out/$AFTER_FILE" "$out/migrate.json" "$out/ledger.json"
	failures_json=$(printf '%s\n' "${FAILURES[@]}" | jq -R . | jq -cs 'map(select(. != ""))')
	jq -n \
		--arg from "$from" --arg to "$to" --arg target "$target" --arg expect "$expect" --arg fault "$fault" \
		--argjson threads "$threads" --argjson signals "$signals" \
		--slurpfile capa "$out/capabilities-a.json" --slurpfile capb "$out/capabilities-b.json" \
		--slurpfile before "$out/before.json" --slurpfile after "$out/$AFTER_FILE" \
		--slurpfile migrate "$out/migrate.json" --slurpfile ledger "$out/ledger.json" \
		--argjson extra "$(ledger_extra)" --argjson failures "$failures_json" \
		--arg status "$MIGRATE_STATUS" --argjson exact "$EXACT" --argjson held "$HELD" --argjson held_s "${HELD_SECONDS:-0}" --arg pid_a "$PID_A" --arg pid_b "${PID_B:-}" \
		"$JQ_DEFS"'{version: 1, expect: $expect, fault: $fault, exact_snapshot: ($exact == 1), held_on_b: ($held == 1), held_seconds: $held_s, threads: $threads, signals: $signals,
		  from: {url: $from, label: "A", kernel: ($capa[0] | kernel_release), capabilities: $capa[0]},
		  to: {url: $to, target: $target, label: "B", kernel: ($capb[0] | kernel_release), capabilities: $capb[0]},
		  workload_a: {program: "sigstorm", pid: $pid_a}, workload_b: {program: "sigstorm", pid: $pid_b},
		  before: $before[0], after: $after[0], migrate: ($migrate[0] // {}), migrate_status: $status,
		  ledger: $ledger[0], ledger_extra: $extra, failures: $failures}' >"$out/result.json.tmp"
	# Queue sizes in one place, whatever the shape of the signals replies.
	jq "$JQ_DEFS"'
		def sizes: {total: pending_total,
			threads: [.threads[]? | thread_queue | qcount],
			shared: ((.shared // .process // .group) | qcount)};
		. + {pending: {before: (.before | sizes), after: (.after | sizes)}}' \
		"$out/result.json.tmp" >"$out/result.json"
	rm -f "$out/result.json.tmp"
}

verdict() {
	local ok=1
	jq -e '(.lost // 1) == 0 and (.duplicated // 1) == 0 and (.mismatched // 1) == 0' "$out/ledger.json" >/dev/null || ok=0
	[ ${#FAILURES[@]} = 0 ] || ok=0
	if [ "$ok" = 1 ]; then
		say "verdict: PASS ($expect)"
	else
		say "verdict: FAIL: $(printf '%s; ' "${FAILURES[@]}")"
	fi
	echo "$out/result.json"
	[ "$ok" = 1 ]
}

main() {
	local migrated_ok=0
	parse_args "$@"
	command -v jq >/dev/null && command -v curl >/dev/null || die "curl and jq are required"
	FAILURES=() SENDERS=() SENDER_PIDS=() STRAY_B="" HELD=0
	say "source $from, destination $to (the source streams to $target)"
	preflight
	start_on_a
	pile_up
	snapshot_before
	MIGRATED=0
	if migrate_call; then
		migrated_ok=1
		MIGRATED=$(jq -r '.signals // 0' "$out/migrate.json")
	fi
	if [ "$expect" = ok ]; then
		[ "$migrated_ok" = 1 ] || die "the migration failed: $(head -c 400 "$out/migrate.json")"
		after_ok
		AFTER_FILE=after.json
	else
		if [ "$migrated_ok" = 1 ]; then
			FAILURES+=("the move succeeded although a fault was injected ($fault)")
			after_ok
			AFTER_FILE=after.json
		else
			say "the move failed as expected: $(jq -r '"\(.code // "?"): \(.detail // "")"' "$out/migrate.json" 2>/dev/null)"
			after_rollback
			AFTER_FILE=after-a.json
		fi
	fi
	drain_and_collect
	check_ledger
	write_result
	verdict
}

main "$@"
