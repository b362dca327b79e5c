#!/usr/bin/env bash
# Migrate a signal-heavy workload from one sigmig agent to another, through
# the agents' HTTP APIs only, and check that no signal was lost, duplicated
# or altered.  Works with any two agents (real hosts too); by default the two
# local guests of two-guests.sh (its environment variables).  The steps are
# in lib/migrate-steps.sh, the verdict and result.json in lib/migrate-result.sh.
set -euo pipefail

PROG=migrate
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=orchestrate/lib/migrate-api.sh
. "$SIGMIG_REPO/orchestrate/lib/migrate-api.sh"
# shellcheck source=orchestrate/lib/migrate-steps.sh
. "$SIGMIG_REPO/orchestrate/lib/migrate-steps.sh"
# shellcheck source=orchestrate/lib/migrate-result.sh
. "$SIGMIG_REPO/orchestrate/lib/migrate-result.sh"

usage_text() {
	cat <<EOF
Usage: migrate.sh [options]
  --from URL          source agent, as this host reaches it (\$SIGMIG_A_URL)
  --to URL            destination agent, as this host reaches it (\$SIGMIG_B_URL)
  --target URL        destination as the SOURCE agent reaches it, the address
                      the image is streamed to (\$SIGMIG_B_LINK_URL, else --to)
  --token-file F      file holding the bearer token of both agents (else
                      \$SIGMIG_TOKEN; --token T works too, but shows in ps)
  --token-to-file F   token of the destination if different (or --token-to T)
  --threads N         workload threads (default 4)
  --signals N         signals to pile up pending before the move (default 4000)
  --settle S          wait S seconds before looking at the copy on B (default 0)
  --rt-only           pile up real-time signals only (each one queues: pending = sent)
  --requeue-with M    how the copy on B queues the records: auto (default),
                      write (one write() per queue) or sigqueueinfo (one
                      rt_(tg)sigqueueinfo() per record)
  --after N           signals sent to the moved process on the destination (default 1000)
  --live-senders R    two more senders on the source, R sends/s each, every send
                      kind, standard and real-time signals, started before the
                      freeze and sending through the move without a pause (to
                      the original's pid: ESRCH once it is gone); the queues are
                      then not compared with the snapshot (it is not the image)
  --live-seconds S    the longest the live senders send (default 60); each
                      ends 1 s after its first ESRCH (the original is gone)
  --expect ok|rollback   rollback: a fault is injected, the original must stay
                      on the source (default ok)
  --fault TEXT        describes the injected fault in the result
  --migrate-timeout-ms N  passed to the source agent (default: agent's)
  --before-migrate CMD [ARG...] ';'
                      run CMD just before POST .../migrate (e.g. to arm a link
                      fault); the words up to a lone ';' are the command, run
                      as is (no shell), with MIGRATE_OUT (the --out directory)
                      and the caller's environment
  --during-migrate CMD [ARG...] ';'   the same, in the background during the call
  --after-migrate CMD [ARG...] ';'    the same, once the call answered, before
                      the spool (if the migration left one) is replayed
  --forward-ms MS     the original forwards what reaches it for MS after the
                      cutover (0: it exits at the cutover; default: the agent's)
  --engine criu       move sigplain, a program that does not link the runtime,
                      with CRIU and the parasite (docs/api.md): no freeze, pile
                      up or snapshots (it handles every signal at once); the
                      senders send with payloads only (sigqueue, tgsigqueue:
                      it runs in a PID namespace of its own, where the kernel
                      shows them as si_pid 0), the ledgers tell the verdict
  --gated             engine criu: sigplain --gate, which takes no signal until
                      its gate signal (SIGRTMAX): the warm-up and --signals
                      pile up in its threads' queues and the process's and
                      move with it; the gate is sent to the live copy after
                      the move (or to the original after a rollback)
  --snapshot-limit N  records per queue in the before/after snapshots (default 100000, the agent's maximum)
  --resume-at-once    let the source agent resume the copy on B right after
                      its commit (downtime = freeze to resume); by default
                      the copy is held frozen until its queues are read, so
                      that "after on B" is exactly what arrived
  --out DIR           result.json, ledgers, logs (default build/migrate/<time>)
  --quiet             no progress on stderr
Prints the path of result.json on stdout.  Exit status 0 when sigledger's
verdict (result.json .ledger.verdict) is PASS: nothing lost, duplicated or
altered, every queue identical, the outcome the expected one.
EOF
}

from=${SIGMIG_A_URL:-}
to=${SIGMIG_B_URL:-}
target=${SIGMIG_B_LINK_URL:-}
token=${SIGMIG_TOKEN:-}
token_to=${SIGMIG_TOKEN_TO:-}
threads=4 signals=4000 after=1000 expect=ok fault="" migrate_timeout_ms=""
forward_ms="" out="" engine=runtime gated=0 snapshot_limit=100000 rt_only=0 requeue_with="" settle=0 resume_target=false live_rate=0 live_seconds=60
BEFORE_HOOK=() DURING_HOOK=() AFTER_HOOK=() HOOK=() HOOK_WORDS=0

# hook_words ARGS...: the words after --before/--during-migrate up to ';'
# into HOOK, their number (with the ';') into HOOK_WORDS.
hook_words() {
	HOOK=()
	HOOK_WORDS=1
	while [ $# -gt 0 ] && [ "$1" != ';' ]; do
		HOOK+=("$1")
		HOOK_WORDS=$((HOOK_WORDS + 1))
		shift
	done
	if [ $# = 0 ] || [ ${#HOOK[@]} = 0 ]; then
		die "a --before/--during-migrate command ends with a lone ';'"
	fi
}

read_token() {	# FILE -> its first line
	local tok
	[ -r "$1" ] || die "cannot read the token file $1"
	IFS= read -r tok <"$1" || true
	printf '%s' "$tok"
}

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--from) from=${2:?}; shift 2 ;;
		--to) to=${2:?}; shift 2 ;;
		--target) target=${2:?}; shift 2 ;;
		--token) token=${2?}; shift 2 ;;
		--token-to) token_to=${2?}; shift 2 ;;
		--token-file) token=$(read_token "${2:?}"); shift 2 ;;
		--token-to-file) token_to=$(read_token "${2:?}"); shift 2 ;;
		--threads) threads=${2:?}; shift 2 ;;
		--signals) signals=${2:?}; shift 2 ;;
		--after) after=${2:?}; shift 2 ;;
		--rt-only) rt_only=1; shift ;;
		--requeue-with) requeue_with=${2:?}; shift 2 ;;
		--live-senders) live_rate=${2:?}; shift 2 ;;
		--live-seconds) live_seconds=${2:?}; shift 2 ;;
		--settle) settle=${2:?}; shift 2 ;;
		--expect) expect=${2:?}; shift 2 ;;
		--fault) fault=${2?}; shift 2 ;;
		--migrate-timeout-ms) migrate_timeout_ms=${2:?}; shift 2 ;;
		--before-migrate) hook_words "${@:2}"; BEFORE_HOOK=("${HOOK[@]}"); shift $((HOOK_WORDS + 1)) ;;
		--during-migrate) hook_words "${@:2}"; DURING_HOOK=("${HOOK[@]}"); shift $((HOOK_WORDS + 1)) ;;
		--after-migrate) hook_words "${@:2}"; AFTER_HOOK=("${HOOK[@]}"); shift $((HOOK_WORDS + 1)) ;;
		--forward-ms) forward_ms=${2:?}; shift 2 ;;
		--out) out=${2:?}; shift 2 ;;
		--snapshot-limit) snapshot_limit=${2:?}; shift 2 ;;
		--engine) engine=${2:?}; shift 2 ;;
		--gated) gated=1; shift ;;
		--resume-at-once) resume_target=true; shift ;;
		--quiet) SIGMIG_QUIET=1; shift ;;
		-h|--help) show_help ;;
		*) usage ;;
		esac
	done
	if [ -z "$from" ] || [ -z "$to" ]; then
		die "--from and --to are required (or run under two-guests.sh)"
	fi
	from=${from%/} to=${to%/}
	target=${target:-$to}
	target=${target%/}
	token_to=${token_to:-$token}
	case "$expect" in ok|rollback) ;; *) die "--expect ok|rollback" ;; esac
	case "$engine" in runtime|criu) ;; *) die "--engine runtime|criu" ;; esac
	[ "$gated" = 0 ] || [ "$engine" = criu ] || die "--gated: with --engine criu only"
	[[ $threads =~ ^[1-9][0-9]*$ ]] || die "--threads: a positive number"
	[[ $signals =~ ^[1-9][0-9]*$ ]] || die "--signals: a positive number"
	[[ $after =~ ^[0-9]+$ ]] || die "--after: a number"
	if ! [[ $snapshot_limit =~ ^[0-9]{1,6}$ ]] || [ "$snapshot_limit" -gt 100000 ]; then
		die "--snapshot-limit: a number up to 100000 (the agent's maximum)"
	fi
	[[ $live_rate =~ ^[0-9]+$ ]] || die "--live-senders: a number of sends per second"
	[[ $live_seconds =~ ^[1-9][0-9]*$ ]] || die "--live-seconds: a positive number"
	[[ $forward_ms =~ ^[0-9]*$ ]] || die "--forward-ms: a number of milliseconds"
	out=${out:-$SIGMIG_REPO/build/migrate/$(date +%Y%m%d-%H%M%S)-$$}
	mkdir -p "$out"
	# A reused directory must not lend a failed run the files of an older one.
	rm -f "$out"/*.json "$out"/*.txt "$out"/*.log "$out"/.*.json "$out"/.link-base
}

main() {
	parse_args "$@"
	need_cmds curl jq make
	agent_token_file AUTH_A "$token"
	agent_token_file AUTH_B "$token_to"
	FAILURES=() SENDERS=() LIVE_SENDERS=() STRAY_B="" HELD=0 EXACT=1 MIGRATED=0 MIGRATE_STATUS="" PID_B=""
	say "source $from, destination $to (the source streams to $target)"
	preflight
	start_on_a
	start_live_senders
	if [ "$engine" = runtime ]; then
		pile_up
		snapshot_before
	elif [ "$gated" = 1 ]; then
		pile_up_gated
	fi
	if migrate_call; then
		MIGRATED=1
	fi
	[ ${#AFTER_HOOK[@]} = 0 ] || run_hook after "${AFTER_HOOK[@]}" || die "the --after-migrate command failed"
	[ "$MIGRATED" = 0 ] || replay_spool
	if [ "$MIGRATED" = 1 ]; then
		[ "$expect" = ok ] || FAILURES+=("the move succeeded although a fault was injected ($fault)")
		after_ok
	elif [ "$expect" = ok ]; then
		die "the migration failed: $(head -c 400 "$out/migrate.json")"
	else
		say "the move failed as expected: $(jq -r '"\(.code): \(.detail)"' "$out/migrate.json" 2>/dev/null)"
		after_rollback
	fi
	wait_live_senders
	drain_and_collect
	check_ledger
	write_result
	verdict
}

main "$@"
