# shellcheck shell=bash
# shellcheck disable=SC2016,SC2034,SC2154 # migrate.sh's options and state (sourced by it); jq's own $variables
# The steps of migrate.sh, sourced by it: start the workload and its senders
# on A, pile signals up, snapshot, migrate, look at both sides, let the live
# copy drain and collect every ledger and sender log.

preflight() {
	local h url
	for h in a b; do
		if [ "$h" = a ]; then url=$from; else url=$to; fi
		api_to "$h" GET /v1/health "$out/health-$h.json" || die "agent $h ($url) is not healthy"
		api_to "$h" GET /v1/capabilities "$out/capabilities-$h.json" ||
			die "GET /v1/capabilities on $h failed"
	done
	say "A: $(caps_line a)"
	say "B: $(caps_line b)"
	[ "$(jqf "$out/capabilities-a.json" 'must(.migration)')" = true ] ||
		die "the source kernel lacks the pending-signal interface: nothing to migrate from"
}

# --requeue-with reaches B's restore: the agent restores with the
# original's arguments.
storm_args() {
	jq -cn --argjson t "$threads" --arg rq "$requeue_with" '{program: "sigstorm", control: true,
		args: (["--threads", ($t | tostring), "--sigpending", "1048576"] +
		       (if $rq == "" then [] else ["--requeue-with", $rq] end))}'
}

# A sender with a fixed count: it ends by itself, which is how it "pauses".
# Its log goes to its stdout, which the agent keeps as the workload's log
# (/proc/self/fd/1: the guest's devtmpfs has no /dev/stdout link). Each
# sender has its own --id, which its payloads carry: sigledger tells the
# senders of both hosts apart by it (their pids may be the same).
sender_args() {	# PID COUNT ID [RT_ONLY]
	jq -cn --arg pid "$1" --arg n "$2" --arg id "$3" --arg rt "${4:-0}" '{program: "sigsend", control: false,
		args: (["--pid", $pid, "--log", "/proc/self/fd/1", "--count", $n, "--seed", $id, "--id", $id]
		       + (if $rt == "1" then ["--kinds", "sigqueue,tgsigqueue", "--std-percent", "0"] else [] end))}'
}

# send_and_wait HOST ARGS_JSON SECONDS: a sender whose log the verdict reads
send_and_wait() {
	start_workload "$1" "$2" || die "cannot start sigsend on $1"
	SENDERS+=("$1:$WL_ID")
	wait_exited "$1" "$WL_ID" "$3" || die "sigsend $WL_ID on $1 did not finish within ${3}s"
}

run_sender() {	# HOST PID COUNT [RT_ONLY]: waits for it to end
	send_and_wait "$1" "$(sender_args "$2" "$3" $((${#SENDERS[@]} + 1)) "${4:-0}")" 900
}

# A sender that keeps sending at (at most) --live-senders per second, every
# kind, standard and real-time signals, thread-directed and process-wide,
# until LIVE_LINGER_MS after its first ESRCH (the original is gone, forwarder
# and all) or --live-seconds, whichever comes first. It ends by itself: its
# log stays readable through the API, which a DELETE would not leave; and a
# move that takes longer than planned is still sent through.
LIVE_LINGER_MS=1000
live_sender_args() {	# PID ID
	local kinds=kill,sigqueue,tgkill,tgsigqueue
	[ "$engine" = runtime ] || kinds=sigqueue,tgsigqueue
	jq -cn --arg pid "$1" --arg id "$2" --arg rate "$live_rate" --arg kinds "$kinds" \
		--arg s "$live_seconds" --arg linger "$LIVE_LINGER_MS" '{program: "sigsend", control: false,
		args: ["--pid", $pid, "--log", "/proc/self/fd/1", "--seconds", $s,
		       "--linger-ms", $linger, "--rate", $rate,
		       "--kinds", $kinds, "--std-percent", "30",
		       "--seed", $id, "--id", $id]}'
}

# Live senders start a second before the freeze and keep sending through
# the whole move: what they send after the DUMP is what the commit carries.
start_live_senders() {
	local n id
	[ "$live_rate" -gt 0 ] || return 0
	EXACT=0	# the snapshot is taken while they send: not the image
	for n in 1 2; do
		id=$((${#SENDERS[@]} + 1))
		start_workload a "$(live_sender_args "$PID_A" "$id")" || die "cannot start live sender $n on A"
		SENDERS+=("a:$WL_ID")
		LIVE_SENDERS+=("$WL_ID")
	done
	say "${#LIVE_SENDERS[@]} live senders on A, ${live_rate}/s each until ${LIVE_LINGER_MS} ms after the original is gone (at most ${live_seconds}s), no pause for the move"
	sleep 1
}

# They must still be sending when the move ends (else the case proves
# nothing): each one's last send is logged after the migrate reply.
wait_live_senders() {
	local id n=0 late
	for id in "${LIVE_SENDERS[@]}"; do
		wait_exited a "$id" $((live_seconds + 120)) || die "live sender $id on A did not end"
		n=$((n + 1))
		fetch_file a "$id" log "$out/.live-$n.log" || die "cannot fetch the log of live sender $id"
		late=$(awk '$1 == "F" && $5 == 3' "$out/.live-$n.log" | wc -l)
		LIVE_ESRCH=$((${LIVE_ESRCH:-0} + late))
	done
	[ "$live_rate" = 0 ] || [ "$MIGRATED" = 0 ] || [ "${LIVE_ESRCH:-0}" -gt 0 ] ||
		FAILURES+=("the live senders stopped before the original was gone (no ESRCH): they did not send through the move")
	[ "$live_rate" = 0 ] || say "live senders done; ${LIVE_ESRCH:-0} of their sends after the move failed with ESRCH"
}

PROGRAM_A=sigstorm
# engine criu: sigplain with a POSIX timer, pid 1 of its own PID namespace
plain_args() {
	jq -cn --argjson t "$threads" --argjson gated "$gated" '{program: "sigplain", engine: "criu",
		args: (["--threads", ($t | tostring), "--timer-us", "50000"]
		       + (if $gated == 1 then ["--gate"] else [] end))}'
}

# sigplain --gate's gate: one SIGRTMAX, a send like any other (its log and
# its delivery are in the verdict). By kill(): the kernel queues a signal
# with si_code >= 0 beyond RLIMIT_SIGPENDING, and the copy's queues may be
# full of what it holds behind the gate, where a sigqueue() would get
# EAGAIN until the gate opened, that is never.
GATE_SIGNAL=64
open_gate() {	# HOST PID
	send_and_wait "$1" "$(sender_args "$2" 1 $((${#SENDERS[@]} + 1)) | jq -c --arg sig "$GATE_SIGNAL" \
		'.args += ["--kinds", "kill", "--rt", $sig, "--std", "", "--std-percent", "0"]')" 60
	say "gate opened on $1 (SIGRTMAX to pid $2): what was held pending is delivered now"
}

start_on_a() {
	if [ "$engine" = criu ]; then
		EXACT=0 rt_only=1 PROGRAM_A=sigplain	# payloads only: see --engine
		start_workload a "$(plain_args)" || die "cannot start sigplain on A"
	else
		start_workload a "$(storm_args)" || die "cannot start sigstorm on A"
	fi
	STORM_A=$WL_ID PID_A=$WL_PID
	say "$PROGRAM_A started on A: workload $STORM_A, pid $PID_A, $threads threads"
	# Some traffic while it runs: these signals are delivered on A (held
	# pending when gated).
	run_sender a "$PID_A" 300 "$rt_only"
	if [ "$gated" = 1 ]; then
		say "warm-up: 300 signals sent while it runs, held pending behind its gate"
	else
		say "warm-up: 300 signals sent while it runs (delivered on A)"
	fi
}

# Engine criu, gated: sigplain itself keeps them pending (nothing is
# frozen); the parasite's drain is what counts them, in the move's reply.
pile_up_gated() {
	run_sender a "$PID_A" "$signals" "$rt_only"
	say "$signals more sent to sigplain behind its gate: they stay pending in its queues for the move"
}

pile_up() {
	local pending
	api_to a POST "/v1/workloads/$STORM_A/freeze" "$out/freeze-pile.json" ||
		die "cannot freeze the workload on A"
	say "workload frozen on A (all threads park with every signal blocked): signals now pile up"
	run_sender a "$PID_A" "$signals" "$rt_only"
	pending=$(pending_total a "$STORM_A")
	say "$signals sent to the frozen workload: $pending pending on A (standard signals coalesce)"
	[ "$pending" -gt 0 ] || die "nothing pending on A"
}

snapshot_before() {
	api_to a GET "/v1/workloads/$STORM_A/signals?limit=$snapshot_limit" "$out/before.json" ||
		die "GET signals on A failed"
	say "snapshot before: $(queue_sizes "$out/before.json")"
}

# run_hook PHASE WORD...: a --before-migrate/--during-migrate command, with
# MIGRATE_OUT (this run's directory) in its environment.
run_hook() {
	local phase=$1
	shift
	say "$phase hook: $*"
	MIGRATE_OUT=$out "$@"
}

migrate_call() {
	local body rc=0 begin=$SECONDS during=""
	# The target's token is in the body: a private file, not curl's command line.
	body=$(mktemp "${TMPDIR:-/tmp}/sigmig-migrate.XXXXXX")
	on_exit rm -f "$body"
	chmod 600 "$body"
	# jq reads it from its environment: in --arg it would show in ps.
	SIGMIG_JQ_TOKEN=$token_to jq -cn --arg t "$target" --arg ms "$migrate_timeout_ms" \
		--argjson resume "$resume_target" --arg fwd "$forward_ms" \
		'env.SIGMIG_JQ_TOKEN as $k
		 | {target: $t, resume_target: $resume} + (if $k != "" then {token: $k} else {} end)
		 + (if $ms != "" then {timeout_ms: ($ms | tonumber)} else {} end)
		 + (if $fwd != "" then {forward_ms: ($fwd | tonumber)} else {} end)' >"$body"
	[ ${#BEFORE_HOOK[@]} = 0 ] || run_hook before "${BEFORE_HOOK[@]}" || die "the --before-migrate command failed"
	if [ ${#DURING_HOOK[@]} != 0 ]; then
		run_hook during "${DURING_HOOK[@]}" &
		during=$!
	fi
	say "POST $from/v1/workloads/$STORM_A/migrate -> $target"
	AGENT_STATUS=""	# stays empty when no reply arrives
	AGENT_API_TIMEOUT=600 AGENT_API_TYPE=application/json \
		api_to a POST "/v1/workloads/$STORM_A/migrate" "$out/migrate.json" "@$body" || rc=$?
	MIGRATE_STATUS=$AGENT_STATUS
	if [ -n "$during" ]; then
		wait "$during" || warn "the --during-migrate command failed"
	fi
	say "migrate answered HTTP $MIGRATE_STATUS after $((SECONDS - begin))s"
	return "$rc"
}

# What the target could not take (the commit delta, forwarded batches) is
# in A's spool: replayed into B through A's API, so that nothing is lost.
replay_spool() {
	local spooled
	spooled=$(jq -r '(.forward.spooled // 0) + (if .problem.code == "commit_delta_spooled" then 1 else 0 end)' \
		"$out/migrate.json" 2>/dev/null || echo 0)
	SPOOLED=$(jq -r '.forward.spooled // 0' "$out/migrate.json" 2>/dev/null || echo 0)
	[ "${spooled:-0}" -gt 0 ] || return 0
	say "the migration left $SPOOLED forwarded signals (and $(jq -r '.problem.code // "no problem"' "$out/migrate.json")) in A's spool: replaying"
	if api_to a POST "/v1/workloads/$STORM_A/replay" "$out/replay.json"; then
		REPLAYED=$(jq -r '.forwarded' "$out/replay.json")
		say "replayed into B: $(jq -c '{forwarded, spool: .forward.spool}' "$out/replay.json")"
	else
		FAILURES+=("POST replay on A failed: $(head -c 300 "$out/replay.json")")
	fi
}

# Every phase of the agent's timings is accounted for: their sum is the
# downtime, to the rounding of the printed milliseconds.
phases_add_up() {	# MIGRATE-JSON
	jq -e '.timings | ([.freeze_ms, .dump_ms, .transfer_ms, .restore_ms, .commit_ms,
		.resume_ms] | add) as $sum | ($sum - .downtime_ms | fabs) < 0.01 and .downtime_ms > 0' \
		"$1" >/dev/null
}

# The copy on B: held frozen (resume_target false) until its queues are
# read, so that "after" is exactly what arrived; then thawed.
after_ok() {
	local hold_start=$EPOCHREALTIME st verified
	STORM_B=$(jqf "$out/migrate.json" 'must(.target_workload.id)')
	PID_B=$(jqf "$out/migrate.json" 'must(.target_workload.pid)')
	if [ "$engine" = criu ]; then
		verified=$(jqf "$out/migrate.json" 'must(.target_workload.restore.engine)')
		[ "$verified" = criu ] || FAILURES+=("B did not restore with CRIU")
	else
		verified=$(jqf "$out/migrate.json" 'must(.target_workload.restore.verified)')
		[ "$verified" = true ] || FAILURES+=("B did not verify the requeued queues")
	fi
	if [ -n "$requeue_with" ] && [ "$requeue_with" != auto ] &&
		[ "$(jq -r .target_workload.restore.requeue "$out/migrate.json")" != "$requeue_with" ]; then
		FAILURES+=("B queued the records by $(jq -r .target_workload.restore.requeue "$out/migrate.json"), not by $requeue_with as asked")
	fi
	phases_add_up "$out/migrate.json" ||
		FAILURES+=("the migrate timings do not add up to the downtime: $(jq -c .timings "$out/migrate.json")")
	[ "$settle" = 0 ] || { say "letting the copy on B settle for ${settle}s"; sleep "$settle"; }
	# A copy busy consuming thousands of signals may not park in time for
	# the peek: a few tries. (Engine criu: the parasite verified them.)
	[ "$engine" = criu ] || wait_until 10 "GET signals of $STORM_B on B" \
		api_to b GET "/v1/workloads/$STORM_B/signals?limit=$snapshot_limit" "$out/after.json" ||
		FAILURES+=("GET signals on B failed for 10s")
	api_to b GET "/v1/workloads/$STORM_B" "$out/workload-b.json" || die "GET the copy on B failed"
	st=$(jqf "$out/workload-b.json" 'must(.state)')
	if [ "$st" = frozen ]; then
		HELD=1
		api_to b POST "/v1/workloads/$STORM_B/thaw" "$out/thaw-b.json" || die "cannot thaw the copy on B"
		HELD_SECONDS=$(awk -v a="$hold_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
		say "the copy on B was held frozen ${HELD_SECONDS}s for the snapshot; thawed"
	else
		EXACT=0
	fi
	[ "$engine" = criu ] || say "on B: workload $STORM_B, pid $PID_B, state $st, $(queue_sizes "$out/after.json") pending"
	st=$(workload_state a "$STORM_A")
	[ "$st" = migrated ] || FAILURES+=("the original on A is '$st', not migrated, after a confirmed move")
	[ "$gated" = 0 ] || open_gate b "$PID_B"
	if [ "$after" -gt 0 ]; then
		run_sender b "$PID_B" "$after" "$rt_only"
		say "$after more signals sent to the moved process on B"
	fi
	LIVE=b LIVE_ID=$STORM_B
}

after_rollback() {
	local st held
	st=$(workload_state a "$STORM_A")
	say "original on A after the failed move: $st"
	[ "$st" = running ] || FAILURES+=("the original on A is '$st', not running, after the failed move")
	# B's agent may be dead (its guest crashed) or restarting (killed): a B
	# that does not answer runs no copy; one that answers is asked.
	if ! wait_until 15 "B's agent to answer" agent_healthy "$to"; then
		say "B does not answer: no copy can run there"
	elif api_to b GET /v1/workloads "$out/workloads-b.json"; then
		STRAY_B=$(jqf "$out/workloads-b.json" '[must(.workloads)[] | select(.program == $prog and .restored
			and (.state == "running" or .state == "frozen"))] | if length > 0 then .[0].id else empty end' --arg prog "$PROGRAM_A")
	else
		FAILURES+=("B answers but cannot list its workloads, to look for a second copy")
	fi
	# A copy held frozen since its restore (?hold=1) never resumed: not a
	# second copy; its ledger is still collected and checked below.
	if [ -n "$STRAY_B" ]; then
		held=$(jqf "$out/workloads-b.json" '[must(.workloads)[] | select(.id == $id)][0].held == true' \
			--arg id "$STRAY_B")
		if [ "$held" = true ]; then
			say "B holds its restored copy $STRAY_B frozen (never resumed): not a second copy"
		else
			FAILURES+=("B kept a restored copy ($STRAY_B) running although A thawed the original: two copies")
		fi
	fi
	[ "$gated" = 0 ] || open_gate a "$PID_A"
	if [ "$after" -gt 0 ]; then
		run_sender a "$PID_A" "$after" "$rt_only"
		say "$after more signals sent to the original, still on A"
	fi
	LIVE=a LIVE_ID=$STORM_A
}

# Signals a sender put there (the workload's own timers, SIGCHLD, SIGIO and
# mq_notify keep coming and are checked as local signals).
sent_pending() {	# HOST ID
	api_to "$1" GET "/v1/workloads/$2/signals?limit=100000" "$out/.drain.json" || return 1
	jqf "$out/.drain.json" '[(must(.threads)[] | must(.pending.signals)[]), must(.shared.signals)[]]
		| map(select(.code_name == "SI_USER" or .code_name == "SI_QUEUE" or .code_name == "SI_TKILL")) | length'
}

# Engine criu: sigplain's queues cannot be read without a move, but a
# handler runs for each signal at once: done when its ledger has had no new
# delivery but its timer's for 2 s (thousands held behind a gate take a
# while under TCG). The siginfo's si_code (bytes 8-11) of SI_TIMER is -2.
SENT_DELIVERIES=-1
ledger_settled() {
	local n
	sleep 2
	fetch_file "$LIVE" "$LIVE_ID" ledger "$out/.drain-ledger.txt" || return 1
	n=$(awk '$1 == "D" && substr($5, 17, 8) != "feffffff"' "$out/.drain-ledger.txt" | wc -l)
	[ "$n" = "$SENT_DELIVERIES" ] && return 0
	SENT_DELIVERIES=$n
	return 1
}

# Thaw the live copy for a while, then freeze it and look: done when no
# sent signal is pending any more (its ledger is then final).
drained() {
	local pending
	if [ "$engine" = criu ]; then	# it blocks nothing once its gate is open
		ledger_settled
		return
	fi
	api_to "$LIVE" POST "/v1/workloads/$LIVE_ID/thaw" "$out/.drain-thaw.json" 2>/dev/null || true
	sleep 2
	api_to "$LIVE" POST "/v1/workloads/$LIVE_ID/freeze" "$out/.drain-freeze.json" || return 1
	pending=$(sent_pending "$LIVE" "$LIVE_ID") || return 1
	[ "$pending" = 0 ]
}

# A file the verdict reads is whole unless its workload reached the agent's
# --max-output (docs/api.md): then lines are missing that were never
# written, and the verdict cannot be trusted either way.
output_complete() {	# HOST ID WHAT
	api_to "$1" GET "/v1/workloads/$2" "$out/.output.json" || return 0
	[ "$(jq -r '.output.limit_reached // false' "$out/.output.json")" = false ] ||
		FAILURES+=("$3 ($2 on $1) reached the agent's --max-output ($(jq -c .output "$out/.output.json")): its file lacks what came after, the verdict is incomplete")
}

# Let the live copy consume what senders left pending, freeze it so that
# its ledger is final, fetch every file, then stop it. Pending signals are
# read only while it is frozen: few control round trips on a workload busy
# consuming signals.
drain_and_collect() {
	local spec host id n=0
	if wait_until 60 "the live copy to consume every sent signal" drained; then
		say "every sent signal consumed on the live copy, now frozen; collecting the ledgers"
	else
		FAILURES+=("sent signals still pending on the live copy after 60s")
	fi
	fetch_file "$LIVE" "$LIVE_ID" ledger "$out/ledger-live.txt" ||
		FAILURES+=("cannot fetch the live copy's ledger")
	output_complete "$LIVE" "$LIVE_ID" "the live copy's ledger"
	if [ "$LIVE" != a ]; then
		fetch_file a "$STORM_A" ledger "$out/ledger-a.txt" ||
			FAILURES+=("cannot fetch the original's ledger from A")
		output_complete a "$STORM_A" "the original's ledger"
	fi
	for spec in "${SENDERS[@]}"; do
		host=${spec%%:*} id=${spec#*:}
		n=$((n + 1))
		fetch_file "$host" "$id" log "$out/sender-$n-$host.log" ||
			FAILURES+=("cannot fetch sender log $id from $host")
		output_complete "$host" "$id" "sender $n's log"
	done
	if [ -n "$STRAY_B" ]; then
		# Its deliveries count too: the ledger shows what two copies did.
		api_to b POST "/v1/workloads/$STRAY_B/freeze" "$out/.stray.json" || true
		fetch_file b "$STRAY_B" ledger "$out/ledger-b-stray.txt" ||
			FAILURES+=("cannot fetch the ledger of B's restored copy $STRAY_B")
		api_to b DELETE "/v1/workloads/$STRAY_B" "$out/.stray.json" || true
	fi
	api_to "$LIVE" DELETE "/v1/workloads/$LIVE_ID" "$out/stop-live.json" || true
	# What the source agent counted (carried signals among it), for the suites
	api_to a GET /metrics "$out/metrics-a.txt" || rm -f "$out/metrics-a.txt"
}
