#!/usr/bin/env bash
# Two-guest fault injection (TAP).  Each case boots fresh guests (two cases
# at a time, SIGMIG_CASES_AT_ONCE; checked in order once done), piles up
# pending signals on A, injects one fault into the migration and checks the
# two-phase outcome: the original keeps running on A (nothing committed) or,
# had B confirmed, runs on B; and the ledger shows lost = 0, duplicated = 0.
#   link-cut      the link is cut after 64 KiB of the image stream
#   corrupt       one byte of the image is altered on the wire (TCP checksum
#                 fixed), agents on plain HTTP: only the image's own CRC can
#                 notice, B refuses the image
#   corrupt-tls   the same over HTTPS (every other case's setting): TLS
#                 refuses the record, B never sees an image
#   reply-lost    B restores (held frozen, ?hold=1) but its confirmation never
#                 reaches A: A thaws the original, B's copy never resumes
#   agent-killed  B's agent dies after its held restore, before it replies
#                 (agent fault hook POST /v1/debug/fault, sigmig.faults=1);
#                 restarted, it adopts the held copy
#   delta-b-killed  B's agent dies after its held copy took the commit delta
#                 (batch 1), before it answers; restarted, it adopts the held
#                 copy: A's retry is a duplicate, then A thaws it
#   forward-b-killed  B's agent dies after taking a forwarded batch, before
#                 it replies; restarted, it adopts the copy with the
#                 numbers of the batches it took: the retry is a duplicate
#   b-crash       guest B dies (QEMU killed) once the image has crossed the
#                 link, before it can confirm: a host crash at the worst moment
#   stock-b       B runs a kernel without the interface (unpatched 6.1)
#   criu-*        engine criu (sigplain, moved by CRIU and the parasite, a
#                 sender at 100/s through the move): link-cut, corrupt (plain
#                 HTTP: the bundle's CRC), agent-killed; the drained signals
#                 go back into the original, which runs on
set -uo pipefail
SUITE=two-guest-faults
# shellcheck source=orchestrate/two-guest-tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../two-guest-tap.sh"
# migrate.sh runs it (no shell) as its --before/--during-migrate command.
HOOK="$REPO/orchestrate/lib/fault-hook.sh"
SIGNALS=3000
# A clean move of these 3000 signals takes well under a second under TCG;
# the cases whose fault leaves A waiting end when this runs out.
TIMEOUT_MS=8000
# Replies are dropped once this much went A -> B: past the TLS handshake
# (which needs B's answers), well before the end of the image.
REPLIES_DROPPED_AFTER=4096

relay_corrupted() {	# CASE: its relay flipped a byte
	[ "$(grep -o 'corrupted=[0-9]*' "$REPO/build/run/$SUITE-$1-link/stats" 2>/dev/null)" != corrupted=0 ]
	tap $? "$1: the relay altered one byte of the stream"
}

rollback_checks() {	# LABEL
	local label=$1 status
	status=$(result '.migrate_status')
	[ -f "$RESULT" ] && [ -n "$status" ] && [ "${status:0:1}" != 2 ]
	tap $? "$label: A's agent reports the move as failed (HTTP ${status:-none}: $(result '.migrate.code' | head -c 80))"
	check_verdict "$label"
}

echo "TAP version 13"
guest_images 1

start_case link-cut -- --signals "$SIGNALS" --expect rollback --fault "link cut after 64 KiB" \
	--migrate-timeout-ms "$TIMEOUT_MS" --before-migrate "$HOOK" link cut-after ab 65536 ';'

start_case corrupt --plain-http -- --signals "$SIGNALS" --expect rollback \
	--fault "one image byte flipped on the wire (plain HTTP)" \
	--migrate-timeout-ms "$TIMEOUT_MS" --before-migrate "$HOOK" link corrupt-after ab 131072 ';'

start_case corrupt-tls -- --signals "$SIGNALS" --expect rollback --fault "one image byte flipped on the wire (HTTPS)" \
	--migrate-timeout-ms "$TIMEOUT_MS" --before-migrate "$HOOK" link corrupt-after ab 131072 ';'

# B holds its restored copy frozen until A has committed and thaws it
# (POST /v1/restore?hold=1): a lost confirmation leaves the original running
# on A and a held copy on B that never delivers (migrate.sh collects its
# ledger and counts it).
start_case reply-lost -- --signals "$SIGNALS" --expect rollback --fault "B's confirmation lost on the link" \
	--migrate-timeout-ms "$TIMEOUT_MS" --before-migrate "$HOOK" link drop-reply-after ab "$REPLIES_DROPPED_AFTER" ';'

# B's agent _exit(86)s after the held restore instead of replying (armed
# through POST /v1/debug/fault, enabled by sigmig.faults=1); /init respawns
# it, the held copy is orphaned but stays frozen.
start_case agent-killed --append "sigmig.faults=1" -- --signals "$SIGNALS" --expect rollback \
	--fault "B's agent killed after receiving the image, before confirming" --migrate-timeout-ms "$TIMEOUT_MS" \
	--before-migrate "$HOOK" agent-fault restore-before-reply ';'

# Kill B's QEMU as soon as the whole image went A -> B (its size is known
# from the snapshot: 128 bytes per pending signal plus headers).
# B's replies are dropped on the link as well, so that the crash always
# lands before A hears a confirmation: a restore on B takes ~100 ms and would
# otherwise race the kill (a B that confirmed and then died takes the only
# copy with it, which is the commit's job to rule out, not this test's).
start_case b-crash -- --signals "$SIGNALS" --expect rollback --fault "guest B killed after receiving the image" \
	--migrate-timeout-ms "$TIMEOUT_MS" \
	--before-migrate "$HOOK" link drop-reply-after ab "$REPLIES_DROPPED_AFTER" ';' --during-migrate "$HOOK" kill-b-after-image ';'

# B's agent _exit(86)s once it has taken forwarded batch 2 or a later one,
# before answering; /init starts it again a second later. A posts the same
# batch again (within the lease, or from its spool by replay): the copy,
# adopted by the new agent with the batch numbers it took, must answer it
# as a duplicate and take the rest, once each.
start_case forward-b-killed --append "sigmig.faults=1" -- --signals "$SIGNALS" --live-senders 300 \
	--live-seconds 90 --forward-ms 4000 --migrate-timeout-ms "$TIMEOUT_MS" \
	--fault "B's agent killed after taking a forwarded batch, before answering" \
	--before-migrate "$HOOK" agent-fault batch-before-reply ';'

# The same for batch 1, the commit delta (senders keep sending through the
# move, so there is one): B's held copy took it and its agent died; A retries
# it for timeout_ms, the restarted agent answers duplicate, A thaws the copy.
start_case delta-b-killed --append "sigmig.faults=1" -- --signals "$SIGNALS" --live-senders 300 \
	--live-seconds 90 --forward-ms 2000 --migrate-timeout-ms "$TIMEOUT_MS" \
	--fault "B's agent killed after taking the commit delta, before answering" \
	--before-migrate "$HOOK" agent-fault delta-before-reply ';'

# The original forwards what keeps reaching it after the cutover; the link
# is cut as it starts forwarding. What B cannot take stays in A's spool;
# with the link back, POST /v1/workloads/{id}/replay on A (migrate.sh does
# it) must make the ledger whole: nothing lost, nothing twice.
start_case forward-cut -- --signals "$SIGNALS" --live-senders 300 --live-seconds 90 \
	--forward-ms 3000 --migrate-timeout-ms "$TIMEOUT_MS" --fault "link cut while the original forwards" \
	--during-migrate "$HOOK" link-when-forwarding cut ';' --after-migrate "$HOOK" link pass ';'

# Engine criu: the original waits drained and frozen while the move runs;
# a fault puts the drained records back in front of what arrived since.
CRIU_ARGS=(--engine criu --threads 3 --live-senders 100 --live-seconds 60 --expect rollback
	--migrate-timeout-ms "$TIMEOUT_MS")
start_case criu-link-cut -- "${CRIU_ARGS[@]}" --fault "link cut after 32 KiB (engine criu)" \
	--before-migrate "$HOOK" link cut-after ab 32768 ';'
start_case criu-corrupt --plain-http -- "${CRIU_ARGS[@]}" \
	--fault "one bundle byte flipped on the wire (engine criu, plain HTTP)" \
	--before-migrate "$HOOK" link corrupt-after ab 32768 ';'
start_case criu-agent-killed --append "sigmig.faults=1" -- "${CRIU_ARGS[@]}" \
	--fault "B's agent killed after its held CRIU restore, before confirming (engine criu)" \
	--before-migrate "$HOOK" agent-fault restore-before-reply ';'

[ -z "${KERNEL_STOCK:-}" ] ||
	start_case stock-b --kernel-b "$KERNEL_STOCK" -- --signals "$SIGNALS" --expect rollback \
		--fault "B's kernel lacks the interface" --migrate-timeout-ms "$TIMEOUT_MS"

use_case link-cut
rollback_checks "link cut mid-stream"

use_case corrupt
relay_corrupted corrupt
rollback_checks "corrupted image"
[ "$(result '.migrate.code')" = target_rejected ]
tap $? "corrupted image over plain HTTP: B refused it ($(result '.migrate.code'): $(result '.migrate.detail' | head -c 100))"

use_case corrupt-tls
relay_corrupted corrupt-tls
rollback_checks "corrupted TLS record"
code=$(result '.migrate.code')
[ -n "$code" ] && [ "$code" != target_rejected ]
tap $? "corrupted TLS record: the connection failed before B saw an image ($code: $(result '.migrate.detail' | head -c 100))"

use_case reply-lost
rollback_checks "B's confirmation lost"
result '.migrate.detail' | grep -q 'receive timed out'
tap $? "B's confirmation lost: A sent the whole image, then timed out waiting ($(result '.migrate.detail' | head -c 90))"

# b_console CASE PATTERN: guest B's console (its agent's log) has PATTERN
b_console() {
	grep -q -- "$2" "$REPO/build/logs/$SUITE-$1-b.console.log" 2>/dev/null
}

use_case agent-killed
rollback_checks "B's agent killed before confirming"
b_console agent-killed "adopted from its record, held"
tap $? "agent-killed: B's restarted agent adopted the held copy (it can be thawed or ended through the API)"

use_case delta-b-killed
[ "$CASE_RC" = 0 ] && [ "$(result '.migrate_status')" = 200 ]
tap $? "delta-b-killed: the move completes (migrate.sh rc=$CASE_RC)"
b_console delta-b-killed "fault delta-before-reply: .*exiting 86"
tap $? "delta-b-killed: B's agent died after its held copy took the commit delta, before answering"
b_console delta-b-killed "adopted from its record, held"
tap $? "delta-b-killed: B's restarted agent adopted the held copy"
check_verdict "B's agent killed after taking the commit delta"

use_case forward-b-killed
[ "$CASE_RC" = 0 ] && [ "$(result '.migrate_status')" = 200 ]
tap $? "forward-b-killed: the move completes (migrate.sh rc=$CASE_RC)"
b_console forward-b-killed "fault batch-before-reply: .*exiting 86"
tap $? "forward-b-killed: B's agent died after taking a forwarded batch, before answering"
b_console forward-b-killed "adopted from its record"
tap $? "forward-b-killed: B's restarted agent adopted the copy"
b_console forward-b-killed "batch [0-9]* of .* taken last"
tap $? "forward-b-killed: with the number of the last batch it took ($(grep -o 'batch [0-9]* of [^ ]* taken last' \
	"$REPO/build/logs/$SUITE-forward-b-killed-b.console.log" 2>/dev/null | head -1))"
check_verdict "B's agent killed while the original forwarded"

use_case b-crash
grep -q 'killed guest B once the image had crossed the link' "$REPO/build/suites/$SUITE/b-crash/stderr" 2>/dev/null
tap $? "b-crash: guest B was killed after the image crossed the link"
rollback_checks "guest B crashed before confirming"

use_case forward-cut
[ "$CASE_RC" = 0 ] && [ "$(result '.migrate_status')" = 200 ]
tap $? "forward-cut: the move completes (migrate.sh rc=$CASE_RC)"
grep -q "link set to 'cut' while the original forwarded" "$REPO/build/suites/$SUITE/forward-cut/stderr" 2>/dev/null
tap $? "forward-cut: the link was cut while the original forwarded"
spooled=$(result '.migrate.forward.spooled // 0')
code=$(result '.migrate.problem.code // "none"')
[ "${spooled:-0}" -gt 0 ] || [ "$code" = commit_delta_spooled ]
tap $? "forward-cut: what B could not take was kept in A's spool ($spooled forwarded signals, problem $code)"
jq -e '.forward.spool == [] and .forward.spooled == 0' "$(dirname "$RESULT")/replay.json" >/dev/null 2>&1
tap $? "forward-cut: the replay through A's API emptied the spool ($(result '.ledger_extra.replayed') forwarded signals replayed)"
check_verdict "link cut while forwarding"

use_case criu-link-cut
rollback_checks "engine criu, link cut mid-stream"
result '.migrate.detail' | grep -q 'got its signals back and keeps running'
tap $? "engine criu, link cut: the original got its drained signals back ($(result '.migrate.code'))"

use_case criu-corrupt
relay_corrupted criu-corrupt
rollback_checks "engine criu, corrupted bundle"
result '.migrate.detail' | grep -q 'CRC-32C mismatch'
tap $? "engine criu, corrupted bundle: B's CRC check refused it ($(result '.migrate.detail' | head -c 120))"

use_case criu-agent-killed
rollback_checks "engine criu, B's agent killed before confirming"
b_console criu-agent-killed "adopted from its record, held"
tap $? "engine criu, agent-killed: B's restarted agent adopted the held copy"

if [ -n "${KERNEL_STOCK:-}" ]; then
	use_case stock-b
	[ "$(result '.to.capabilities.migration')" = false ]
	tap $? "stock B: its agent reports the interface as missing"
	rollback_checks "B without the interface"
else
	tap 1 "stock kernel (build-kernel.sh --flavor stock) builds"
fi

# A boot that never reaches two healthy agents (no TCG boot takes 1 s) is
# reported with both consoles' last lines, tried once more on fresh ports,
# then fails with nothing left running.
stuck=$REPO/build/suites/$SUITE/stuck-boot
mkdir -p "$stuck"
"$REPO/orchestrate/two-guests.sh" --kernel "$KERNEL" --initrd "$INITRD" --name "$SUITE-stuck-boot" \
	--boot-timeout 1 -- true >"$stuck/stdout" 2>"$stuck/stderr"
rc=$?
[ "$rc" != 0 ] && grep -q 'boot try 1: guest A' "$stuck/stderr" && grep -q 'boot try 2: guest B' "$stuck/stderr" &&
	grep -q '^  B| ' "$stuck/stderr" && grep -q 'after two boots' "$stuck/stderr"
tap $? "stuck boot: both tries reported with their consoles, then a failure (rc=$rc)"
! pgrep -f -- "$SUITE-stuck-boot" >/dev/null
tap $? "stuck boot: no guest or relay left running"
tap_done
