#!/usr/bin/env bash
# The faults of orchestrate/suites.d/two-guest-faults.sh, run by migrate.sh
# as its --before-migrate / --during-migrate command inside two-guests.sh
# (whose SIGMIG_* variables and migrate.sh's MIGRATE_OUT it reads).
set -euo pipefail

PROG=fault-hook
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage_text() {
	cat <<EOF
Usage: fault-hook.sh link MODE [ARG...]
         link-relay.sh set \$SIGMIG_LINK_DIR MODE ARG... (cut-after ab 65536, ...)
       fault-hook.sh agent-fault POINT
         arm POINT on B's agent (POST /v1/debug/fault; needs sigmig.faults=1)
       fault-hook.sh link-when-forwarding MODE [ARG...]
         once a workload on A (\$SIGMIG_A_URL) is a forwarder (the move's
         cutover is over), link-relay.sh set \$SIGMIG_LINK_DIR MODE ARG...;
         at most 120 s of waiting
       fault-hook.sh kill-b-after-image [SECONDS]
         kill guest B's QEMU once the image crossed the link A -> B (its size:
         128 bytes per signal pending in \$MIGRATE_OUT/before.json), counted
         from the last 'link' command (else from now); at most SECONDS
         (default 30) of waiting
EOF
}

need_env() {
	local v
	for v in "$@"; do
		[ -n "${!v:-}" ] || die "\$$v is not set (run under two-guests.sh and migrate.sh)"
	done
}

link_payload_ab() {
	sed -n 's/.*payload_ab=\([0-9]*\).*/\1/p' "$SIGMIG_LINK_DIR/stats"
}

image_crossed() {	# BASE NEED
	local now
	now=$(link_payload_ab)
	CROSSED=$((now - $1))
	[ "$CROSSED" -ge "$2" ]
}

kill_b_after_image() {
	local limit=${1:-30} need base
	need_env SIGMIG_LINK_DIR SIGMIG_B_QEMU_PID MIGRATE_OUT
	need=$(jq -er '.pending_total * 128' "$MIGRATE_OUT/before.json") ||
		die "no pending_total in $MIGRATE_OUT/before.json"
	# From the link's state before the migration started: this hook starts
	# with the POST and may be slower than the image.
	if [ -f "$MIGRATE_OUT/.link-base" ]; then
		base=$(cat "$MIGRATE_OUT/.link-base")
	else
		base=$(link_payload_ab)
	fi
	CROSSED=0
	if wait_until "$limit" "the image ($need bytes) to cross the link" image_crossed "$base" "$need"; then
		kill -KILL "$SIGMIG_B_QEMU_PID"
		echo "killed guest B once the image had crossed the link ($CROSSED bytes)" >&2
	else
		kill -KILL "$SIGMIG_B_QEMU_PID"
		echo "killed guest B after only $CROSSED of $need bytes" >&2
	fi
}

forwarding_on_a() {	# AUTH
	local id
	for id in $(agent_api GET "$SIGMIG_A_URL/v1/workloads" "$1" | jq -r '.workloads[]?.id // empty'); do
		agent_api GET "$SIGMIG_A_URL/v1/workloads/$id" "$1" |
			jq -e '.state == "forwarding"' >/dev/null && return 0
	done
	return 1
}

link_when_forwarding() {
	local auth
	need_env SIGMIG_A_URL SIGMIG_LINK_DIR
	agent_token_file auth "${SIGMIG_TOKEN:-}"
	wait_until 120 "a forwarding original on A" forwarding_on_a "$auth" ||
		die "no workload on A became a forwarder"
	"$SIGMIG_REPO/orchestrate/link-relay.sh" set "$SIGMIG_LINK_DIR" "$@"
	echo "link set to '$*' while the original forwarded" >&2
}

main() {
	local body auth
	case "${1:-}" in
	link)
		[ $# -ge 2 ] || usage
		need_env SIGMIG_LINK_DIR
		"$SIGMIG_REPO/orchestrate/link-relay.sh" set "$SIGMIG_LINK_DIR" "${@:2}"
		[ -z "${MIGRATE_OUT:-}" ] || link_payload_ab >"$MIGRATE_OUT/.link-base"
		;;
	agent-fault)
		[ $# = 2 ] || usage
		need_env SIGMIG_B_URL
		agent_token_file auth "${SIGMIG_TOKEN:-}"
		body=$(jq -cn --arg p "$2" '{point: $p}')
		agent_api POST "$SIGMIG_B_URL/v1/debug/fault" "$auth" "$body" >/dev/null
		;;
	link-when-forwarding)
		[ $# -ge 2 ] || usage
		link_when_forwarding "${@:2}"
		;;
	kill-b-after-image)
		[ $# -le 2 ] || usage
		kill_b_after_image "${@:2}"
		;;
	-h|--help) show_help ;;
	*) usage ;;
	esac
}

main "$@"
