# shellcheck shell=bash
# shellcheck disable=SC2034 # SIGMIG_REPO and AGENT_STATUS are for the sourcing script
# The helpers every host-side script of sigmig shares: messages, usage,
# bounded waits, cleanup on exit, the short runtime directory and the one
# HTTP client of the agent API.  Source it after setting PROG:
#
#   PROG=migrate
#   . "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
#
# Scripts define usage_text() (a heredoc) for usage.

: "${PROG:=${0##*/}}"
SIGMIG_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SIGMIG_QUIET=${SIGMIG_QUIET:-0}
START=${START:-$SECONDS}
# shellcheck source=orchestrate/lib/ports.sh
. "$SIGMIG_REPO/orchestrate/lib/ports.sh"
# shellcheck source=orchestrate/lib/tls.sh
. "$SIGMIG_REPO/orchestrate/lib/tls.sh"

say() {
	[ "$SIGMIG_QUIET" = 1 ] && return 0
	printf '[%s %4ds] %s\n' "$PROG" $((SECONDS - START)) "$*" >&2
}

warn() { printf '[%s %4ds] WARNING: %s\n' "$PROG" $((SECONDS - START)) "$*" >&2; }

# die MESSAGE [STATUS]: the message goes to stderr even under --quiet.
die() {
	printf '[%s %4ds] ERROR: %s\n' "$PROG" $((SECONDS - START)) "$1" >&2
	exit "${2:-1}"
}

# usage: the script's usage_text on stderr, exit 2; show_help: on stdout, exit 0.
usage() {
	usage_text >&2
	exit 2
}

show_help() {
	usage_text
	exit 0
}

need_cmds() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || die "$c is required (make deps installs it)"
	done
}

# wait_until SECONDS DESCRIPTION CMD...: poll CMD every 0.2 s until it
# succeeds; non-zero (and a message naming DESCRIPTION) after SECONDS.
# log_has FILE ERE: a line of FILE (carriage returns dropped: guest consoles)
# matches. grep reads it whole: with pipefail, `tr | grep -q` fails at random
# on a long log, grep -q exiting at the first match and tr dying of SIGPIPE.
log_has() {
	[ "$(tr -d '\r' 2>/dev/null <"$1" | grep -acE -- "$2")" -gt 0 ]
}

wait_until() {
	local limit=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + limit))
	until "$@"; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			warn "$what: not after ${limit}s"
			return 1
		fi
		sleep 0.2
	done
}

# on_exit CMD [ARG...]: run the command when the script exits, in reverse
# order of registration, whatever the exit path.  Stored as words, run
# without eval: what a hook removes or stops is fixed when it is registered.
SIGMIG_EXIT_HOOKS=()
sigmig_run_exit_hooks() {
	local i rc=$? hook
	local -a argv
	trap - EXIT
	# A second Ctrl-C or TERM must not cut the cleanup short.
	trap '' INT TERM
	for ((i = ${#SIGMIG_EXIT_HOOKS[@]} - 1; i >= 0; i--)); do
		hook=${SIGMIG_EXIT_HOOKS[i]}
		IFS=$'\x1f' read -r -a argv <<<"$hook"
		"${argv[@]}" || true
	done
	exit "$rc"
}
on_exit() {
	local IFS=$'\x1f'
	SIGMIG_EXIT_HOOKS+=("$*")
	trap sigmig_run_exit_hooks EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# stop_pids [-t SECONDS] PID...: TERM every PID at once, give them SECONDS
# (default 10) in all to exit, then KILL what is left.  Empty arguments are
# skipped, so an exit hook can name a pid variable that may be unset.
stop_pids() {
	local limit=10 pid left deadline
	if [ "${1:-}" = -t ]; then
		limit=$2
		shift 2
	fi
	for pid in "$@"; do
		[ -z "$pid" ] || kill -TERM "$pid" 2>/dev/null || true
	done
	deadline=$((SECONDS + limit))
	for pid in "$@"; do
		[ -n "$pid" ] || continue
		left=$((deadline - SECONDS))
		[ "$left" -gt 0 ] || left=1
		timeout "$left" tail --pid="$pid" -f /dev/null 2>/dev/null ||
			kill -KILL "$pid" 2>/dev/null || true
	done
}

# sleep_stoppable SECONDS: a sleep for loops that run in the background and
# are ended with stop_pids.  A plain sleep would outlive the loop's TERM by up
# to SECONDS, holding the caller's descriptors (make test counts it as left
# behind); this one is killed with the loop.
sleep_stoppable() {
	trap 'kill $(jobs -p) 2>/dev/null; exit 143' TERM
	sleep "$1" &
	wait $!
}

# runtime_dir VAR NAME: set VAR to a new private directory for UNIX sockets
# and pid files, whose path length does not depend on where the checkout
# lives (sun_path holds 108 bytes): under $XDG_RUNTIME_DIR or /tmp, removed
# on exit.  Not for a command substitution: its exit hook would run at once.
runtime_dir() {
	local base=${XDG_RUNTIME_DIR:-/tmp} dir
	[ "${#base}" -le 40 ] || base=/tmp
	dir=$(mktemp -d "$base/sigmig-$2.XXXXXX") || die "cannot create a runtime directory under $base"
	on_exit rm -rf "$dir"
	printf -v "$1" '%s' "$dir"
}

# ---------------------------------------------------------------- agent API
# The one HTTP client of the agent API in shell.  The token never appears on
# a command line (ps, /proc/*/cmdline): it is passed to curl in a header file.
#
# agent_token_file VAR TOKEN: set VAR to a private file holding the header
# "Authorization: Bearer TOKEN", removed on exit (empty TOKEN: VAR empty).
agent_token_file() {
	local f=""
	if [ -n "$2" ]; then
		f=$(mktemp "${TMPDIR:-/tmp}/sigmig-auth.XXXXXX")
		chmod 600 "$f"
		printf 'Authorization: Bearer %s\n' "$2" >"$f"
		on_exit rm -f "$f"
	fi
	printf -v "$1" '%s' "$f"
}

# agent_api METHOD URL AUTHFILE [JSON|@FILE]: the reply body on stdout (an
# @FILE body is sent as $AGENT_API_TYPE, default application/octet-stream:
# a JSON body holding a secret goes in a file, off the command line); the
# status in $AGENT_STATUS (set in the caller only when not in a subshell,
# so it is also written to $AGENT_STATUS_FILE when that is set).  Non-zero,
# with the problem's code and detail on stderr, when the status is not 2xx.
agent_api() {
	local method=$1 url=$2 auth=$3 data=${4:-} body status
	local args=(-sS -m "${AGENT_API_TIMEOUT:-60}" -X "$method" -w '\n%{http_code}')
	[ -z "$auth" ] || args+=(-H "@$auth")
	[ -z "${SIGMIG_CA_FILE:-}" ] || args+=(--cacert "$SIGMIG_CA_FILE")
	if [ -n "$data" ]; then
		if [ "${data:0:1}" = @ ]; then
			args+=(-H "Content-Type: ${AGENT_API_TYPE:-application/octet-stream}" --data-binary "$data")
		else
			args+=(-H 'Content-Type: application/json' --data-binary "$data")
		fi
	fi
	body=$(curl "${args[@]}" "$url") || { echo "curl failed: $method $url" >&2; return 1; }
	status=${body##*$'\n'}
	body=${body%$'\n'*}
	AGENT_STATUS=$status
	[ -z "${AGENT_STATUS_FILE:-}" ] || printf '%s\n' "$status" >"$AGENT_STATUS_FILE"
	printf '%s' "$body"
	if [ "${status:0:1}" != 2 ]; then
		printf '%s %s -> HTTP %s: %s\n' "$method" "$url" "$status" \
			"$(jq -r '"\(.code): \(.detail // .title)"' <<<"$body" 2>/dev/null || printf '%s' "$body")" >&2
		return 1
	fi
}

# agent_health URL: the status of GET /v1/health within 3 s ("000" and
# curl's complaint when there is none).
agent_health() {
	curl -sS -m 3 ${SIGMIG_CA_FILE:+--cacert "$SIGMIG_CA_FILE"} -o /dev/null \
		-w '%{http_code}' "$1/v1/health" 2>&1 | tr '\n' ' '
}

# agent_healthy URL: the agent answers GET /v1/health within 3 s.
agent_healthy() {
	[ "$(agent_health "$1")" = 200 ]
}
