#!/usr/bin/env bash
# The guest-to-guest link: QEMU of guest A and of guest B each connect a
# "-netdev socket" to a socat TCP listener on 127.0.0.1; socat bridges both to
# link-relay (orchestrate/link-relay.c), which forwards the frames and applies
# the fault written in the control file, so tests can cut, delay or corrupt
# the link while the guests run.
#
# Usage:
#   link-relay.sh run --dir DIR --port-a PORT --port-b PORT
#        foreground; Ctrl-C/TERM stops socat and the relay (nothing left behind)
#   link-relay.sh set DIR pass|cut|delay MS|cut-after ab|ba BYTES|
#                         corrupt-after ab|ba BYTES|drop-reply-after ab|ba BYTES
#   link-relay.sh stats DIR            one line of key=value counters
#   link-relay.sh wait DIR KEY VALUE [TIMEOUT]   until stats has KEY=VALUE
#   link-relay.sh build                compile the relay (cached), print its path
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC="$REPO/orchestrate/link-relay.c"
BIN="$REPO/build/relay/link-relay"
pids=()

say() { echo "[link-relay] $*" >&2; }
die() { say "ERROR: $*"; exit 2; }
usage() { sed -n '8,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

build_relay() {
	if [ ! -x "$BIN" ] || [ "$SRC" -nt "$BIN" ]; then
		mkdir -p "$(dirname "$BIN")"
		cc -O2 -Wall -Wextra -Werror -o "$BIN.tmp" "$SRC"
		mv "$BIN.tmp" "$BIN"
	fi
	echo "$BIN"
}

port_listening() {
	ss -Hltn "sport = :$1" 2>/dev/null | grep -q LISTEN
}

stop_children() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		timeout 5 tail --pid="$pid" -f /dev/null 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
	done
	pids=()
}

cmd_run() {
	local dir="" port_a="" port_b="" bin p deadline
	while [ $# -gt 0 ]; do
		case "$1" in
		--dir) dir=${2:?}; shift 2 ;;
		--port-a) port_a=${2:?}; shift 2 ;;
		--port-b) port_b=${2:?}; shift 2 ;;
		*) usage ;;
		esac
	done
	[ -n "$dir" ] && [ -n "$port_a" ] && [ -n "$port_b" ] || usage
	command -v socat >/dev/null || die "socat is required (apt-get install socat)"
	bin=$(build_relay)
	mkdir -p "$dir"
	echo pass >"$dir/control"
	trap 'stop_children' EXIT
	trap 'stop_children; exit 143' INT TERM
	"$bin" "$dir/a.sock" "$dir/b.sock" "$dir/control" "$dir/stats" &
	pids+=($!)
	deadline=$((SECONDS + 10))
	until [ -S "$dir/a.sock" ] && [ -S "$dir/b.sock" ]; do
		[ "$SECONDS" -lt "$deadline" ] || die "relay sockets did not appear in $dir"
		sleep 0.1
	done
	for p in "a $port_a" "b $port_b"; do
		set -- $p
		socat -b 65536 TCP-LISTEN:"$2",bind=127.0.0.1,reuseaddr,nodelay \
			UNIX-CONNECT:"$dir/$1.sock" &
		pids+=($!)
	done
	deadline=$((SECONDS + 10))
	until port_listening "$port_a" && port_listening "$port_b"; do
		[ "$SECONDS" -lt "$deadline" ] || die "socat not listening on $port_a/$port_b"
		sleep 0.1
	done
	say "listening on 127.0.0.1:$port_a (guest a) and 127.0.0.1:$port_b (guest b)"
	touch "$dir/ready"
	# The link lives as long as all three processes do.
	wait -n "${pids[@]}" || true
	say "link closed"
}

cmd_set() {
	local dir=${1:?}
	shift
	[ $# -ge 1 ] || usage
	case "$1" in
	pass|cut) [ $# = 1 ] || usage ;;
	delay) [ $# = 2 ] || usage ;;
	cut-after|corrupt-after|drop-reply-after)
		[ $# = 3 ] && [[ $2 =~ ^(ab|ba)$ ]] && [[ $3 =~ ^[0-9]+$ ]] || usage ;;
	*) usage ;;
	esac
	# New mtime even within the same second: write a fresh file.
	echo "$*" >"$dir/control.new"
	mv "$dir/control.new" "$dir/control"
	touch "$dir/control"
}

cmd_stats() {
	cat "${1:?}/stats"
}

cmd_wait() {
	local dir=${1:?} key=${2:?} value=${3:?} timeout_s=${4:-60} deadline
	deadline=$((SECONDS + timeout_s))
	until grep -qE "(^| )$key=$value( |$)" "$dir/stats" 2>/dev/null; do
		[ "$SECONDS" -lt "$deadline" ] || { say "timeout waiting for $key=$value: $(cat "$dir/stats")"; return 1; }
		sleep 0.1
	done
}

main() {
	local cmd=${1:-}
	[ $# -gt 0 ] && shift
	case "$cmd" in
	run) cmd_run "$@" ;;
	set) cmd_set "$@" ;;
	stats) cmd_stats "$@" ;;
	wait) cmd_wait "$@" ;;
	build) build_relay ;;
	*) usage ;;
	esac
}

main "$@"
