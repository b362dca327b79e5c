#!/usr/bin/env bash
# Two-guest end-to-end (TAP): boot guests A and B, migrate sigstorm with
# thousands of pending signals from A to B through the agents' APIs, and check
# the queues byte for byte, the two-phase outcome and the ledger (sigledger's
# verdict), and that the replies migrate.sh read conform to docs/openapi.yaml.
set -uo pipefail
SUITE=two-guest-e2e
# shellcheck source=orchestrate/two-guest-tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../two-guest-tap.sh"

# reply_conforms FILE METHOD PATH: one reply migrate.sh kept, against the spec.
reply_conforms() {
	local out
	if out=$(/usr/bin/python3 "$REPO/orchestrate/lib/openapi_check.py" reply "$2" "$3" 200 \
		--type application/json --body "$(dirname "$RESULT")/$1" 2>&1); then
		tap 0 "$2 $3 ($1) conforms to docs/openapi.yaml"
	else
		tap 1 "$2 $3 ($1) conforms to docs/openapi.yaml: $(head -c 300 <<<"$out")"
	fi
}

echo "TAP version 13"
guest_images 0
run_case happy -- --threads 4 --signals 3000 --after 500

[ "$CASE_RC" = 0 ] && [ -f "$RESULT" ]
tap $? "migration A -> B completes (migrate.sh rc=$CASE_RC)"
before=$(result '.pending.before.total')
[ "${before:-0}" -ge 1000 ]
tap $? "thousands of signals pending on A before the move (${before:-0})"
multi=$(result '[.pending.before.threads[] | select(. > 0)] | length')
shared=$(result '.pending.before.shared')
[ "${multi:-0}" -ge 2 ] && [ "${shared:-0}" -ge 1 ]
tap $? "both queues used: ${multi:-0} threads with private signals, ${shared:-0} process-wide"
[ "$(result '.exact_snapshot')" = true ] && [ "$(result '.held_on_b')" = true ]
tap $? "B's copy was held frozen until its queues were read (snapshot exact; held $(result '.held_seconds')s)"
queues=$(result '[.ledger.queues[] | "\(.queue) \(.result)"] | join(", ")')
[ "$(result '.ledger.queues | length > 0 and all(.result == "identical" or .result == "timers")')" = true ]
tap $? "sigledger: every queue identical byte for byte on B ($queues)"
report_dir=$(dirname "$RESULT")
python3 "$REPO/orchestrate/report/report.py" "$RESULT" --no-color --html "$report_dir/report.html" \
	>"$report_dir/report.txt" 2>&1
rc=$?
grep -E 'DIFFERENT|FAIL|^report:' "$report_dir/report.txt" | diag
[ "$rc" = 0 ] && grep -q 'PASS' "$report_dir/report.txt" && grep -q '<svg' "$report_dir/report.html"
tap $? "the report and its HTML page show the verdict PASS (report rc=$rc)"
moved=$(result '.migrate.signals')
requeued=$(result '.migrate.target_workload.restore.requeued')
[ "$(result '.migrate.target_workload.restore.verified')" = true ] &&
	[ "$moved" = "$requeued" ] && [ "$moved" = "$before" ]
tap $? "B's runtime requeued and verified every moved signal itself ($requeued of $moved; $before seen on A)"
[ -n "$(result '.workload_b.pid')" ] && [ "$(result '.pending.after.threads | length')" = 4 ]
tap $? "the restored workload runs on B with its 4 threads"
reply_conforms capabilities-b.json GET /v1/capabilities
reply_conforms before.json GET /v1/workloads/w1/signals
reply_conforms after.json GET /v1/workloads/w1/signals
reply_conforms migrate.json POST /v1/workloads/w1/migrate
reply_conforms workload-b.json GET /v1/workloads/w1
check_verdict "happy path"

# The token reached the guests in a file: never in a command line on the
# host (two-guests.sh scanned /proc every second) nor in a guest's.
scan_line=$(head -1 "$REPO/build/logs/$SUITE-happy-token-scan.log" 2>/dev/null)
[[ $scan_line =~ ^scans=([0-9]+)\ leaks=0$ ]] && [ "${BASH_REMATCH[1]}" -ge 3 ]
tap $? "the token was in no host process's command line during the run (${scan_line:-no scan log})"
tail -n +2 "$REPO/build/logs/$SUITE-happy-token-scan.log" 2>/dev/null | head -5 | diag
for g in a b; do
	console=$REPO/build/logs/$SUITE-happy-$g.console.log
	grep -q 'SIGMIG-TOKEN-CMDLINE absent' "$console" && ! grep -q 'SIGMIG-TOKEN-LEAK' "$console"
	tap $? "guest $g: the agent's token is not in /proc/cmdline"
done

# Senders that do not stop for the move: two on A, every send kind, standard
# and real-time, from before the freeze until after the original is gone
# (their sends then fail with ESRCH). What reaches A's queues after the DUMP
# must reach B with the commit, what reaches them after the cutover with the
# forwarder (the agent's default lease): the verdict counts every
# successful send. They send for 30 s: the move (freeze to the end of the
# lease) must fall inside, and under make test's load (every suite at
# once) it once took 20 s from their start, past an earlier 15 s bound.
run_case live -- --threads 4 --signals 2000 --after 300 --live-senders 1000 --live-seconds 90
[ "$CASE_RC" = 0 ] && [ -f "$RESULT" ]
tap $? "live senders: migration A -> B completes (migrate.sh rc=$CASE_RC)"
esrch=$(result '.ledger_extra.live_esrch')
[ "${esrch:-0}" -gt 0 ]
tap $? "live senders: still sending after the original was gone (${esrch:-0} sends failed with ESRCH)"
carried=$(result '.migrate.carried_at_commit')
[ "${carried:-0}" -gt 0 ]
tap $? "live senders: what reached A after the DUMP went to B with the commit ($carried signals carried)"
counted=$(awk '$1 == "sigmig_agent_signals_carried_total" { print $2 }' "$(dirname "$RESULT")/metrics-a.txt" 2>/dev/null)
[ -n "$counted" ] && [ "$counted" = "$carried" ]
tap $? "live senders: A's /metrics counts them (sigmig_agent_signals_carried_total ${counted:-missing}, want $carried)"
forwarded=$(result '.migrate.forward.forwarded')
[ "${forwarded:-0}" -gt 0 ] && [ "$(result '.migrate.forward.spooled')" = 0 ]
tap $? "live senders: what reached the original after the cutover was forwarded to B ($forwarded signals in $(result '.migrate.forward.batches') batches, none spooled)"
counted=$(awk '$1 == "sigmig_agent_signals_forwarded_total" { print $2 }' "$(dirname "$RESULT")/metrics-a.txt" 2>/dev/null)
[ -n "$counted" ] && [ "$counted" = "$forwarded" ]
tap $? "live senders: A's /metrics counts them (sigmig_agent_signals_forwarded_total ${counted:-missing}, want $forwarded)"
window=$(result '.migrate.commit.exit_window.ms // "none"')
diag <<<"the forwarder's exit window (its last drain to reaped): $window ms, $(result '.ledger.exit_window') sends excused in it"
[ "$(result '.migrate.commit.exit_window.sealed')" = true ]
tap $? "live senders: the forwarder was sealed before its last drain (SFD_IOC_SEAL): a later send failed with ESRCH, none was accepted and dropped, none excused"
check_verdict "live senders through the move"

# A program that does not link the runtime (sigplain: threads, a POSIX
# timer, a handler per delivery) moved by CRIU and the parasite, engine
# criu, from guest A to guest B, with live senders through the move. The
# target matches the commit delta with what CRIU queued by content. Gated
# (sigplain --gate takes no signal before its gate signal), it has
# thousands pending in its threads' queues and the process's when it
# moves; the gate opens on B. The senders are fast enough that what B's
# copy holds at once (moved + delta) passes the guests' RLIMIT_SIGPENDING,
# which CRIU gives the copy as the original had it: the delta's requeue
# raises it for the write and puts it back.
run_case criu -- --engine criu --gated --threads 3 --signals 2000 --after 300 \
	--live-senders 400 --live-seconds 90
[ "$CASE_RC" = 0 ] && [ -f "$RESULT" ]
tap $? "engine criu: sigplain moves A -> B (migrate.sh rc=$CASE_RC)"
[ "$(result '.migrate.engine')" = criu ] && [ "$(result '.migrate.target_workload.restore.engine')" = criu ]
tap $? "engine criu: CRIU restored it on B, the parasite requeued $(result '.migrate.target_workload.restore.signals') drained records and verified them"
moved=$(result '.migrate.target_workload.restore.signals')
queues=$(result '.migrate.target_workload.restore.queues | "\([.private[]] | map(tostring) | join(" + ")) private + \(.shared) process-wide"')
[ "${moved:-0}" -ge 1000 ] && [ "$(result '.migrate.signals')" = "$moved" ] &&
	[ "$(result '.migrate.target_workload.restore.queues | ([.private[] | select(. > 0)] | length >= 2) and .shared > 0')" = true ]
tap $? "engine criu: thousands pending in both queues moved ($moved = $queues; the source drained $(result '.migrate.signals'))"
esrch=$(result '.ledger_extra.live_esrch')
[ "${esrch:-0}" -gt 0 ]
tap $? "engine criu: the senders still sent after the original was gone (${esrch:-0} sends failed with ESRCH)"
[ "$(result '.migrate.commit.exit_window.sealed')" = true ] &&
	[ -n "$(result '.migrate.commit.already_held // empty')" ]
tap $? "engine criu: the original sealed before the delta's drain; of the delta, B held $(result '.migrate.commit.already_held') already (CRIU's), matched by content"
diag <<<"engine criu: $(result '.migrate | {delta_drained, carried_at_commit, already_held: .commit.already_held, image_bytes, downtime_ms: .timings.downtime_ms, exit_window_ms: .commit.exit_window.ms}' | tr -d '\n')"
check_verdict "engine criu, live senders through the move"

# The tutorial as a reader pastes it: every sh block of docs/tutorial.md
# from its section 1 to the one before "Between real hosts", except the
# first (two-guests.sh itself, which runs them), in one bash with
# errexit and pipefail, where curl fails on any non-2xx. Run where a
# checkout would be (build/run/two-guests.env, orchestrate/), so that the
# docs and the agent cannot drift apart.
tutorial_script() {
	echo 'set -euo pipefail'
	echo 'curl() { command curl --fail-with-body "$@"; }'
	awk '/^## 8\./ { exit } /^```sh$/ { n++; inside = 1; next }
		/^```/ { inside = 0 } inside && n > 1' "$REPO/docs/tutorial.md"
}
tut=$REPO/build/suites/$SUITE/tutorial
rm -rf "$tut"
mkdir -p "$tut/build/run"
ln -s "$REPO/orchestrate" "$tut/orchestrate"
tutorial_script >"$tut/tutorial.sh"
# shellcheck disable=SC2016 # $1 is bash -c's argument
(cd "$tut" && timeout -k 10 900 "$REPO/orchestrate/two-guests.sh" --quiet --name "$SUITE-tutorial" \
	--kernel "$KERNEL" --initrd "$INITRD" -- bash -c 'cp "$1" build/run/two-guests.env && exec bash tutorial.sh' \
	_ "$REPO/build/run/$SUITE-tutorial.env" >"$tut/stdout" 2>"$tut/stderr")
rc=$?
[ "$rc" = 0 ]
tap_output $? "docs/tutorial.md: its $(grep -c '^curl\|curl -s' "$tut/tutorial.sh") curl commands run as written against the guests, every reply 2xx (rc=$rc)" \
	"$(tail -n 15 "$tut/stderr"; tail -n 5 "$tut/stdout")"
grep -q '"state": "migrated"' "$tut/stdout" && grep -q '"migrated_to"' "$tut/stdout"
tap $? "docs/tutorial.md: the workload on A says it migrated, as the tutorial shows"
# docs/api.md's transcripts: every "$ " command of the page, in document
# order and in one shell, against two fresh guests, with the test's setup
# (the guests' URLs, CA and token) in place of the page's; each output must
# have the documented shape (lib/doc_examples.py: JSON key paths and types,
# status and problem codes, headers, text lines). A failure names the
# example by its line in api.md.
apidoc=$REPO/build/suites/$SUITE/api-doc
(cd "$REPO" && timeout -k 10 900 "$REPO/orchestrate/two-guests.sh" --quiet --name "$SUITE-api-doc" \
	--kernel "$KERNEL" --initrd "$INITRD" -- "$REPO/orchestrate/lib/doc-examples.sh" \
	"$REPO/docs/api.md" "$apidoc" >"$apidoc.stdout" 2>"$apidoc.stderr")
rc=$?
[ "$rc" = 0 ]
tap_output $? "docs/api.md: its $(grep -c '^ok ' "$apidoc.stdout") of $(grep -c '^ok \|^FAIL ' "$apidoc.stdout") transcripts run in order against the guests, with the documented output (rc=$rc)" \
	"$(grep -v '^ok ' "$apidoc.stdout" | head -n 40; tail -n 10 "$apidoc.stderr")"
tap_done
