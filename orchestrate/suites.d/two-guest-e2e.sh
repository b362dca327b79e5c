#!/usr/bin/env bash
# Two-guest end-to-end (TAP): boot guests A and B, migrate sigstorm with
# thousands of pending signals from A to B through the agents' APIs, and check
# the queues byte for byte, the two-phase outcome and the ledger.
set -uo pipefail
SUITE=two-guest-e2e
# shellcheck source=../two-guest-tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../two-guest-tap.sh"

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
python3 "$REPO/orchestrate/report/report.py" "$RESULT" --no-color --html "$(dirname "$RESULT")/report.html" \
	>"$(dirname "$RESULT")/report.txt" 2>&1
rc=$?
[ "$(result '.exact_snapshot')" = true ] && [ "$(result '.held_on_b')" = true ]
tap $? "B's copy was held frozen until its queues were read (snapshot exact; held $(result '.held_seconds')s)"
grep -E 'DIFFERENT' "$(dirname "$RESULT")/report.txt" | diag
[ "$rc" = 0 ] && ! grep -q DIFFERENT "$(dirname "$RESULT")/report.txt"
tap $? "every queue identical byte for byte on B, as seen through both agents (report rc=$rc)"
moved=$(result '.migrate.signals')
requeued=$(result '.migrate.target_workload.restore.requeued')
[ "$(result '.migrate.target_workload.restore.verified')" = true ] &&
	[ "$moved" = "$requeued" ] && [ "$moved" = "$before" ]
tap $? "B's runtime requeued and verified every moved signal itself ($requeued of $moved; $before seen on A)"
[ -n "$(result '.workload_b.pid // empty')" ] && [ "$(result '.pending.after.threads | length')" = 4 ]
tap $? "the restored workload runs on B with its 4 threads"
check_ledger_clean "happy path"
tap_done
