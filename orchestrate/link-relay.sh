#!/usr/bin/env bash
# The guest-to-guest link: QEMU of guest A and of guest B each connect a
# "-netdev socket" to a socat TCP listener on 127.0.0.1; socat bridges both to
# link-relay (orchestrate/link-relay.c), which forwards the frames and applies
# the fault written in the control file, so tests can cut, delay or corrupt
# the link while the guests run.
set -euo pipefail

PROG=link-relay
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
SRC="$SIGMIG_REPO/orchestrate/link-relay.c"
BIN="$SIGMIG_REPO/build/relay/link-relay"
pids=()

usage_text() {
	cat <<'EOF'
Usage:
  link-relay.sh run --dir DIR --port-a PORT --port-b PORT
       foreground; Ctrl-C/TERM stops socat and the relay (nothing left behind)
  link-relay.sh set DIR pass|cut|delay MS|cut-after ab|ba BYTES|
                        corrupt-after ab|ba BYTES|drop-reply-after ab|ba BYTES
  link-relay.sh stats DIR            one line of key=value counters
  link-relay.sh wait DIR KEY VALUE [TIMEOUT]   until stats has KEY=VALUE
  link-relay.sh build                compile the relay (cached), print its path
DIR holds the control and stats files; the relay's UNIX sockets live in a
private runtime directory of bounded length, whatever DIR's depth.
EOF
}

build_relay() {
	if [ ! -x "$BIN" ] || [ "$SRC" -nt "$BIN" ]; then
		mkdir -p "$(dirname "$BIN")"
		cc -O2 -Wall -Wextra -Werror -o "$BIN.tmp" "$SRC"
		mv "$BIN.tmp" "$BIN"
	fi
	echo "$BIN"
}

ports_listening() {
	local p
	for p in "$@"; do
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q LISTEN || return 1
	done
}

# relay_listening DIR: both sockets exist; dies if the relay exited.
relay_listening() {
	[ -S "$1/a.sock" ] && [ -S "$1/b.sock" ] && return 0
	kill -0 "${pids[0]}" 2>/dev/null || die "the relay exited before listening"
	return 1
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
	local dir="" port_a="" port_b="" bin sockets
	while [ $# -gt 0 ]; do
		case "$1" in
		--dir) dir=${2:?}; shift 2 ;;
		--port-a) port_a=${2:?}; shift 2 ;;
		--port-b) port_b=${2:?}; shift 2 ;;
		*) usage ;;
		esac
	done
	if [ -z "$dir" ] || [ -z "$port_a" ] || [ -z "$port_b" ]; then
		usage
	fi
	need_cmds socat ss
	bin=$(build_relay)
	mkdir -p "$dir"
	echo pass >"$dir/control"
	on_exit stop_children
	runtime_dir sockets relay
	"$bin" "$sockets/a.sock" "$sockets/b.sock" "$dir/control" "$dir/stats" &
	pids+=($!)
	wait_until 10 "relay sockets in $sockets" relay_listening "$sockets" ||
		die "the relay did not start (its message above says why)"
	socat -b 65536 TCP-LISTEN:"$port_a",bind=127.0.0.1,reuseaddr,nodelay \
		UNIX-CONNECT:"$sockets/a.sock" &
	pids+=($!)
	socat -b 65536 TCP-LISTEN:"$port_b",bind=127.0.0.1,reuseaddr,nodelay \
		UNIX-CONNECT:"$sockets/b.sock" &
	pids+=($!)
	wait_until 10 "socat listening on $port_a/$port_b" \
		ports_listening "$port_a" "$port_b" || die "socat did not start"
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
		[ $# = 3 ] || usage
		[[ $2 =~ ^(ab|ba)$ ]] || usage
		[[ $3 =~ ^[0-9]+$ ]] || usage ;;
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
	local dir=${1:?} key=${2:?} value=${3:?} timeout_s=${4:-60}
	wait_until "$timeout_s" "$key=$value in $dir/stats" \
		grep -qE "(^| )$key=$value( |\$)" "$dir/stats" ||
		{ say "stats: $(cat "$dir/stats" 2>/dev/null)"; return 1; }
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
