#!/usr/bin/env bash
# Boot guest A and guest B (sigmig.role=agent) and wait until both agents
# answer /v1/health.  Each guest has a management NIC (QEMU user net,
# 127.0.0.1:<port> -> guest :8080) and a virtio-net link to the other guest
# through orchestrate/link-relay.sh (socat + a relay tests can cut, delay or
# corrupt).  Everything started here is stopped on exit, Ctrl-C, TERM or
# failure.  Consoles and relay logs go to build/logs/<name>-*.log.
#
# Usage: two-guests.sh [options] [-- COMMAND [ARGS...]]
#   With a COMMAND: run it once both agents are healthy, tear down, exit with
#   its status.  Without: print the URLs and keep the guests up until Ctrl-C.
#   The command sees SIGMIG_A_URL, SIGMIG_B_URL (management, from the host),
#   SIGMIG_A_LINK_URL, SIGMIG_B_LINK_URL (the agents as seen over the link),
#   SIGMIG_TOKEN, SIGMIG_LINK_DIR (for link-relay.sh set/stats/wait),
#   SIGMIG_A_CONSOLE, SIGMIG_B_CONSOLE, SIGMIG_TWO_GUESTS_NAME, and
#   SIGMIG_A_QEMU_PID, SIGMIG_B_QEMU_PID (fault tests crash or stop a guest).
# Options:
#   --kernel FILE      bzImage for both (default build/kernel/default/bzImage)
#   --kernel-b FILE    a different bzImage for guest B (e.g. the stock flavor)
#   --initrd FILE      default build/initramfs/initramfs.cpio.gz
#   --token T          bearer token for both agents (default: random)
#   --port-base N      mgmt A=N, B=N+1, link A=N+2, B=N+3 (default: a free range)
#   --boot-timeout S   bound for both agents to become healthy (default 300)
#   --name NAME        prefix of logs and state (default two-guests)
#   --append "k=v"     extra kernel command line for both guests
#   --accel auto|tcg|kvm, --quiet (no progress lines)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SIGMIG_CACHE:-/var/cache/sigmig}
LOGS="$REPO/build/logs"

kernel="$REPO/build/kernel/default/bzImage"
kernel_b=""
initrd="$REPO/build/initramfs/initramfs.cpio.gz"
token=""
port_base=""
boot_timeout=300
name=two-guests
append=""
accel=${SIGMIG_ACCEL:-auto}
quiet=0
command=()

guest_pids=()
relay_pid=""
command_pid=""
qemu_pids=()
START=$SECONDS

say() { [ "$quiet" = 1 ] || printf '[two-guests %3ds] %s\n' $((SECONDS - START)) "$*" >&2; }
die() { printf '[two-guests %3ds] ERROR: %s\n' $((SECONDS - START)) "$*" >&2; exit 1; }
usage() { sed -n '9,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--kernel) kernel=${2:?}; shift 2 ;;
		--kernel-b) kernel_b=${2:?}; shift 2 ;;
		--initrd) initrd=${2:?}; shift 2 ;;
		--token) token=${2:?}; shift 2 ;;
		--port-base) port_base=${2:?}; shift 2 ;;
		--boot-timeout) boot_timeout=${2:?}; shift 2 ;;
		--name) name=${2:?}; shift 2 ;;
		--append) append=${2?}; shift 2 ;;
		--accel) accel=${2:?}; shift 2 ;;
		--quiet) quiet=1; shift ;;
		--) shift; command=("$@"); break ;;
		-h|--help) usage ;;
		*) usage ;;
		esac
	done
	kernel_b=${kernel_b:-$kernel}
	[ -f "$kernel" ] || die "no kernel at $kernel (run orchestrate/build-kernel.sh or make kernel)"
	[ -f "$kernel_b" ] || die "no kernel at $kernel_b"
	[ -f "$initrd" ] || die "no initramfs at $initrd (run make initramfs)"
	[ -n "$token" ] || token=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
}

port_busy() {
	ss -Htan "( sport = :$1 )" 2>/dev/null | grep -q .
}

choose_ports() {
	local try p busy
	if [ -n "$port_base" ]; then
		for p in 0 1 2 3; do
			port_busy $((port_base + p)) && die "port $((port_base + p)) is in use"
		done
		return
	fi
	for try in $(seq 1 50); do
		port_base=$((20000 + (RANDOM % 5000) * 4))
		busy=0
		for p in 0 1 2 3; do
			port_busy $((port_base + p)) && busy=1
		done
		[ "$busy" = 0 ] && return
	done
	die "no free port range found"
}

# Children of run-guest.sh that are QEMU: a safety net if run-guest.sh
# itself dies without cleaning up.
remember_qemu_pids() {
	local pid child
	for pid in "${guest_pids[@]}"; do
		for child in $(pgrep -P "$pid" 2>/dev/null || true); do
			[ "$(cat "/proc/$child/comm" 2>/dev/null)" = qemu-system-x86 ] && qemu_pids+=("$child")
		done
	done
	return 0
}

stop_pid() {
	local pid=$1
	kill -TERM "$pid" 2>/dev/null || return 0
	timeout 15 tail --pid="$pid" -f /dev/null 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
}

teardown() {
	local rc=$? pid stoppers
	trap - EXIT INT TERM
	[ ${#guest_pids[@]} -gt 0 ] || [ -n "$relay_pid" ] || exit "$rc"
	say "tearing down (QEMU A and B, link relay)"
	remember_qemu_pids
	[ -z "$command_pid" ] || stop_pid "$command_pid"
	stoppers=()
	for pid in "${guest_pids[@]}"; do
		stop_pid "$pid" &
		stoppers+=($!)
	done
	wait "${stoppers[@]}" 2>/dev/null || true
	for pid in "${qemu_pids[@]}"; do stop_pid "$pid"; done
	[ -z "$relay_pid" ] || stop_pid "$relay_pid"
	guest_pids=() relay_pid=""
	rm -f "$STATE"
	exit "$rc"
}

start_relay() {
	LINK_DIR="$REPO/build/run/$name-link"
	rm -rf "$LINK_DIR"
	mkdir -p "$LINK_DIR"
	"$REPO/orchestrate/link-relay.sh" run --dir "$LINK_DIR" \
		--port-a $((port_base + 2)) --port-b $((port_base + 3)) \
		>"$LOGS/$name-relay.log" 2>&1 &
	relay_pid=$!
	local deadline=$((SECONDS + 30))
	until [ -f "$LINK_DIR/ready" ]; do
		kill -0 "$relay_pid" 2>/dev/null || die "link relay failed: $(tail -3 "$LOGS/$name-relay.log")"
		[ "$SECONDS" -lt "$deadline" ] || die "link relay not ready after 30s"
		sleep 0.1
	done
}

# no_timer_check: on a loaded host, TCG can be too slow for the kernel's
# IO-APIC timer check, which then panics ("IO-APIC + timer doesn't work").
start_guest() {
	local g=$1 bz=$2 mgmt=$3 link=$4
	"$REPO/orchestrate/run-guest.sh" --kernel "$bz" --initrd "$initrd" \
		--role agent --guest "$g" --name "$name-$g" --quiet \
		--log "$LOGS/$name-$g.console.log" \
		--timeout 86400 --accel "$accel" \
		--mgmt-port "$mgmt" --link "connect=127.0.0.1:$link" \
		--append "sigmig.token=$token no_timer_check $append" \
		>"$LOGS/$name-$g.run-guest.log" 2>&1 &
	guest_pids+=($!)
}

healthy() {
	curl -fsS -m 3 -o /dev/null "$1/v1/health" 2>/dev/null
}

console_state() {
	local log=$1
	if grep -q 'SIGMIG-AGENT-MISSING' "$log" 2>/dev/null; then
		echo "no agent in the initramfs"
	elif grep -q 'SIGMIG-AGENT-START' "$log" 2>/dev/null; then
		echo "agent starting"
	elif grep -q 'SIGMIG-BOOT' "$log" 2>/dev/null; then
		echo "userspace up"
	else
		echo "booting kernel"
	fi
}

# Until the agent says it listens, the forwarded port accepts and then
# hangs (QEMU's user net): ask only then, or every 10 s in case its log
# level hides the line.
worth_asking() {	# CONSOLE POLLS
	grep -q 'listening on' "$1" 2>/dev/null || [ $(($2 % 50)) = 0 ]
}

# Previous boot durations make the progress line say roughly how long is left.
expected_boot_seconds() {
	cat "$CACHE/two-guests-boot-seconds" 2>/dev/null || echo 60
}

wait_healthy() {
	local deadline=$((SECONDS + boot_timeout)) begin=$SECONDS expect ok_a=0 ok_b=0 last=-10 i polls=0
	expect=$(expected_boot_seconds)
	say "waiting for both agents (bounded to ${boot_timeout}s; usually ~${expect}s under TCG)"
	while :; do
		polls=$((polls + 1))
		[ "$ok_a" = 1 ] || ! worth_asking "$A_CONSOLE" "$polls" || ! healthy "$A_URL" ||
			{ ok_a=1; say "agent A healthy after $((SECONDS - begin))s"; }
		[ "$ok_b" = 1 ] || ! worth_asking "$B_CONSOLE" "$polls" || ! healthy "$B_URL" ||
			{ ok_b=1; say "agent B healthy after $((SECONDS - begin))s"; }
		[ "$ok_a" = 1 ] && [ "$ok_b" = 1 ] && break
		for i in 0 1; do
			kill -0 "${guest_pids[$i]}" 2>/dev/null ||
				die "guest $([ "$i" = 0 ] && echo A || echo B) stopped: $(tail -2 "$LOGS/$name-$([ "$i" = 0 ] && echo a || echo b).run-guest.log" | tr '\n' ' ')"
		done
		if [ "$SECONDS" -ge "$deadline" ]; then
			die "agents not healthy after ${boot_timeout}s (A: $(console_state "$A_CONSOLE"), B: $(console_state "$B_CONSOLE")); consoles in $LOGS/$name-{a,b}.console.log"
		fi
		if [ $((SECONDS - last)) -ge 10 ]; then
			last=$SECONDS
			say "  ${last}s: A $(console_state "$A_CONSOLE"), B $(console_state "$B_CONSOLE"); ~$((expect > SECONDS - begin ? expect - SECONDS + begin : 0))s left"
		fi
		sleep 0.2
	done
	mkdir -p "$CACHE" 2>/dev/null && echo $((SECONDS - begin)) >"$CACHE/two-guests-boot-seconds" 2>/dev/null || true
}

qemu_of() {	# run-guest.sh pid -> its QEMU child
	local child
	for child in $(pgrep -P "$1" 2>/dev/null || true); do
		[ "$(cat "/proc/$child/comm" 2>/dev/null)" = qemu-system-x86 ] && { echo "$child"; return; }
	done
}

write_state() {
	STATE="$REPO/build/run/$name.env"
	cat >"$STATE" <<-EOF
	SIGMIG_A_URL=$A_URL
	SIGMIG_B_URL=$B_URL
	SIGMIG_A_LINK_URL=http://10.99.0.1:8080
	SIGMIG_B_LINK_URL=http://10.99.0.2:8080
	SIGMIG_TOKEN=$token
	SIGMIG_LINK_DIR=$LINK_DIR
	SIGMIG_A_CONSOLE=$A_CONSOLE
	SIGMIG_B_CONSOLE=$B_CONSOLE
	SIGMIG_TWO_GUESTS_NAME=$name
	SIGMIG_A_QEMU_PID=$(qemu_of "${guest_pids[0]}")
	SIGMIG_B_QEMU_PID=$(qemu_of "${guest_pids[1]}")
	EOF
}

main() {
	parse_args "$@"
	command -v curl >/dev/null || die "curl is required"
	mkdir -p "$LOGS" "$REPO/build/run"
	STATE="$REPO/build/run/$name.env"
	trap teardown EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	choose_ports
	A_URL="http://127.0.0.1:$port_base"
	B_URL="http://127.0.0.1:$((port_base + 1))"
	A_CONSOLE="$LOGS/$name-a.console.log"
	B_CONSOLE="$LOGS/$name-b.console.log"
	say "link relay on 127.0.0.1:$((port_base + 2))/$((port_base + 3)) (log $LOGS/$name-relay.log)"
	start_relay
	say "booting guest A ($A_URL) and guest B ($B_URL$([ "$kernel_b" = "$kernel" ] || echo ", kernel $(basename "$(dirname "$kernel_b")")"))"
	start_guest a "$kernel" "$port_base" $((port_base + 2))
	start_guest b "$kernel_b" $((port_base + 1)) $((port_base + 3))
	wait_healthy
	write_state
	export SIGMIG_A_URL="$A_URL" SIGMIG_B_URL="$B_URL" SIGMIG_TOKEN="$token"
	export SIGMIG_A_LINK_URL=http://10.99.0.1:8080 SIGMIG_B_LINK_URL=http://10.99.0.2:8080
	export SIGMIG_LINK_DIR="$LINK_DIR" SIGMIG_A_CONSOLE="$A_CONSOLE" SIGMIG_B_CONSOLE="$B_CONSOLE"
	export SIGMIG_TWO_GUESTS_NAME="$name"
	SIGMIG_A_QEMU_PID=$(qemu_of "${guest_pids[0]}") SIGMIG_B_QEMU_PID=$(qemu_of "${guest_pids[1]}")
	export SIGMIG_A_QEMU_PID SIGMIG_B_QEMU_PID
	if [ ${#command[@]} -gt 0 ]; then
		local rc=0
		# In the background so that INT/TERM interrupt the wait at once.
		"${command[@]}" &
		command_pid=$!
		wait "$command_pid" || rc=$?
		command_pid=""
		exit "$rc"
	fi
	say "both agents up: A=$A_URL B=$B_URL token=$token"
	say "environment in $STATE (source it in another shell); Ctrl-C to stop"
	while kill -0 "${guest_pids[0]}" 2>/dev/null && kill -0 "${guest_pids[1]}" 2>/dev/null; do
		sleep 2
	done
	die "a guest stopped"
}

main "$@"
