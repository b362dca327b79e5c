#!/usr/bin/env bash
# Boot guest A and guest B (sigmig.role=agent) and wait until both agents
# answer /v1/health.  Each guest has a management NIC (QEMU user net,
# 127.0.0.1:<port> -> guest :8080) and a virtio-net link to the other guest
# through orchestrate/link-relay.sh (socat + a relay tests can cut, delay or
# corrupt).  Everything started here is stopped on exit, Ctrl-C, TERM or
# failure.  Consoles and relay logs go to build/logs/<name>-*.log.
set -euo pipefail

PROG=two-guests
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
REPO=$SIGMIG_REPO
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
command=()

guest_pids=()
relay_pid=""
command_pid=""
scan_pid=""
qemu_pids=()
STATE=""
SIGMIG_CA_FILE=""	# the run's CA (HTTPS), for agent_api/agent_healthy
scheme=https

usage_text() {
	cat <<'EOF'
Usage: two-guests.sh [options] [-- COMMAND [ARGS...]]
  With a COMMAND: run it once both agents are healthy, tear down, exit with
  its status.  Without: print the URLs and keep the guests up until Ctrl-C.
  The command sees SIGMIG_A_URL, SIGMIG_B_URL (management, from the host),
  SIGMIG_A_LINK_URL, SIGMIG_B_LINK_URL (the agents as seen over the link),
  SIGMIG_TOKEN, SIGMIG_CA_FILE (the run's CA: the agents serve HTTPS),
  SIGMIG_LINK_DIR (for link-relay.sh set/stats/wait),
  SIGMIG_A_CONSOLE, SIGMIG_B_CONSOLE, SIGMIG_TWO_GUESTS_NAME, and
  SIGMIG_A_QEMU_PID, SIGMIG_B_QEMU_PID (fault tests crash or stop a guest).
Options:
  --kernel FILE      bzImage for both (default build/kernel/default/bzImage)
  --kernel-b FILE    a different bzImage for guest B (e.g. the stock flavor)
  --initrd FILE      default build/initramfs/initramfs.cpio.gz
  --token-file F     the bearer token for both agents, first line of F
                     (default: random; on the command line ps would show it)
  --port-base N      mgmt A=N, B=N+1, link A=N+2, B=N+3 (default: a free range)
  --boot-timeout S   bound for both agents to become healthy (default 300)
  --name NAME        prefix of logs and state (default two-guests)
  --append "k=v"     extra kernel command line for both guests
  --plain-http       the agents speak clear HTTP (default: HTTPS with a
                     certificate and CA made for the run)
  --accel auto|tcg|kvm, --quiet (no progress lines)
EOF
}

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--kernel) kernel=${2:?}; shift 2 ;;
		--kernel-b) kernel_b=${2:?}; shift 2 ;;
		--initrd) initrd=${2:?}; shift 2 ;;
		--token-file) read -r token <"${2:?}" || die "--token-file $2: cannot read a line"; shift 2 ;;
		--port-base) port_base=${2:?}; shift 2 ;;
		--boot-timeout) boot_timeout=${2:?}; shift 2 ;;
		--name) name=${2:?}; shift 2 ;;
		--append) append=${2?}; shift 2 ;;
		--accel) accel=${2:?}; shift 2 ;;
		--quiet) SIGMIG_QUIET=1; shift ;;
		--plain-http) scheme=http; shift ;;
		--) shift; command=("$@"); break ;;
		-h|--help) show_help ;;
		*) usage ;;
		esac
	done
	kernel_b=${kernel_b:-$kernel}
	[ -f "$kernel" ] || die "no kernel at $kernel (run orchestrate/build-kernel.sh or make kernel)"
	[ -f "$kernel_b" ] || die "no kernel at $kernel_b"
	[ -f "$initrd" ] || die "no initramfs at $initrd (run make initramfs)"
	[ -n "$token" ] || token=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
}

choose_ports() {
	local p
	if [ -n "$port_base" ]; then
		for p in 0 1 2 3; do
			port_busy $((port_base + p)) && die "port $((port_base + p)) is in use"
		done
		return
	fi
	port_base=$(free_port_base 4) || die "no 4 free ports found"
}

qemu_of() {	# run-guest.sh pid -> its QEMU child
	local child
	for child in $(pgrep -P "$1" 2>/dev/null || true); do
		[ "$(cat "/proc/$child/comm" 2>/dev/null)" = qemu-system-x86 ] && { echo "$child"; return; }
	done
	return 0
}

# The QEMU children of run-guest.sh: a safety net if run-guest.sh itself
# dies without cleaning up.
remember_qemu_pids() {
	local pid q
	for pid in "${guest_pids[@]}"; do
		q=$(qemu_of "$pid")
		[ -z "$q" ] || qemu_pids+=("$q")
	done
}

# Both guests and the relay (it takes one connection per side, so a new
# boot needs a new one). Both guests at once: each run-guest.sh stops its
# own QEMU; the QEMUs themselves are the safety net.
stop_guests() {
	remember_qemu_pids
	stop_pids -t 15 "${guest_pids[@]}"
	stop_pids -t 15 "${qemu_pids[@]}" "$relay_pid"
	guest_pids=() qemu_pids=() relay_pid=""
}

teardown() {
	[ ${#guest_pids[@]} -gt 0 ] || [ -n "$relay_pid" ] || [ -n "$scan_pid" ] || return 0
	say "tearing down (QEMU A and B, link relay)"
	stop_pids -t 15 "$command_pid"
	stop_guests
	stop_pids -t 15 "$scan_pid"
	scan_pid=""
	[ -z "$STATE" ] || rm -f "$STATE"
}

relay_ready() {
	[ -f "$LINK_DIR/ready" ] && return 0
	kill -0 "$relay_pid" 2>/dev/null || die "link relay failed: $(tail -3 "$LOGS/$name-relay.log")"
	return 1
}

start_relay() {
	LINK_DIR="$REPO/build/run/$name-link"
	rm -rf "$LINK_DIR"
	mkdir -p "$LINK_DIR"
	"$REPO/orchestrate/link-relay.sh" run --dir "$LINK_DIR" \
		--port-a $((port_base + 2)) --port-b $((port_base + 3)) \
		>"$LOGS/$name-relay.log" 2>&1 &
	relay_pid=$!
	wait_until 30 "the link relay" relay_ready || die "link relay not ready after 30s"
}

# The token reaches the guests in a second initramfs appended to the built
# one (the kernel unpacks concatenated archives in order), as the file
# /sigmig/token: on QEMU's -append it would show in the host's ps and in the
# guests' /proc/cmdline. The copy holds the token: private, removed on exit.
# The agents serve HTTPS with a certificate made for this run (for the
# management address and both link addresses) and verify each other with
# its CA; the key travels with the token, the host keeps the CA
# (SIGMIG_CA_FILE) for its own calls.
make_token_initrd() {
	local tok_dir	# not "dir": runtime_dir has a local of that name
	local files=(sigmig/token)
	runtime_dir tok_dir token
	mkdir -p "$tok_dir/root/sigmig/tls"
	(umask 077 && printf '%s\n' "$token" >"$tok_dir/root/sigmig/token")
	if [ "$scheme" = https ]; then
		make_pki "$tok_dir/pki" 127.0.0.1 10.99.0.1 10.99.0.2 ||
			die "cannot make the run's certificates (openssl)"
		cp "$tok_dir/pki/agent.pem" "$tok_dir/pki/agent.key" "$tok_dir/pki/ca.pem" \
			"$tok_dir/root/sigmig/tls/"
		files+=(sigmig/tls sigmig/tls/agent.pem sigmig/tls/agent.key sigmig/tls/ca.pem)
		SIGMIG_CA_FILE=$tok_dir/pki/ca.pem
	fi
	(cd "$tok_dir/root" && printf '%s\n' "${files[@]}" | cpio -o -H newc --quiet) |
		gzip -n >"$tok_dir/token.cpio.gz"
	rm -rf "$tok_dir/root"
	run_initrd=$tok_dir/initramfs.cpio.gz
	(umask 077 && cat "$initrd" "$tok_dir/token.cpio.gz" >"$run_initrd")
}

# While the guests run, no process's command line may hold the token (ps
# shows every command line to every user): all of /proc is scanned every
# second, with builtins only (a grep for the token would itself carry it).
# $LOGS/$name-token-scan.log says "scans=N leaks=M", then one line per leak.
cmdlines_with_token() {
	local f args
	for f in /proc/[0-9]*/cmdline; do
		mapfile -d '' args 2>/dev/null <"$f" || continue
		[[ "${args[*]}" != *"$token"* ]] || printf '%s %s\n' "${f//[!0-9]/}" "${args[0]}"
	done
}

scan_token() {
	local out=$LOGS/$name-token-scan.log scans=0 leaks=0 hits
	: >"$out.leaks"
	while :; do
		hits=$(cmdlines_with_token)
		scans=$((scans + 1))
		if [ -n "$hits" ]; then
			leaks=$((leaks + $(wc -l <<<"$hits")))
			printf 'leak: pid %s\n' "$hits" >>"$out.leaks"
		fi
		{ echo "scans=$scans leaks=$leaks"; cat "$out.leaks"; } >"$out.tmp"
		mv "$out.tmp" "$out"
		sleep_stoppable 1
	done
}

# no_timer_check: on a loaded host, TCG can be too slow for the kernel's
# IO-APIC timer check, which then panics ("IO-APIC + timer doesn't work").
start_guest() {
	local g=$1 bz=$2 mgmt=$3 link=$4
	"$REPO/orchestrate/run-guest.sh" --kernel "$bz" --initrd "$run_initrd" \
		--role agent --guest "$g" --name "$name-$g" --quiet \
		--log "$LOGS/$name-$g.console.log" \
		--timeout 86400 --accel "$accel" \
		--mgmt-port "$mgmt" --link "connect=127.0.0.1:$link" \
		--append "no_timer_check $append" \
		>"$LOGS/$name-$g.run-guest.log" 2>&1 &
	guest_pids+=($!)
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

# One poll of both agents for wait_until, on wait_healthy's variables: true
# once both answered; a progress line every 10 s; dies if a guest stopped.
agents_healthy() {
	local i
	polls=$((polls + 1))
	[ "$ok_a" = 1 ] || ! worth_asking "$A_CONSOLE" "$polls" || ! agent_healthy "$A_URL" ||
		{ ok_a=1; say "agent A healthy after $((SECONDS - begin))s"; }
	[ "$ok_b" = 1 ] || ! worth_asking "$B_CONSOLE" "$polls" || ! agent_healthy "$B_URL" ||
		{ ok_b=1; say "agent B healthy after $((SECONDS - begin))s"; }
	[ "$ok_a" = 1 ] && [ "$ok_b" = 1 ] && return 0
	for i in 0 1; do
		kill -0 "${guest_pids[$i]}" 2>/dev/null ||
			die "guest $([ "$i" = 0 ] && echo A || echo B) stopped: $(tail -2 "$LOGS/$name-$([ "$i" = 0 ] && echo a || echo b).run-guest.log" | tr '\n' ' ')"
	done
	if [ $((SECONDS - last)) -ge 10 ]; then
		last=$SECONDS
		say "  ${last}s: A $(console_state "$A_CONSOLE"), B $(console_state "$B_CONSOLE"); ~$((expect > SECONDS - begin ? expect - SECONDS + begin : 0))s left"
	fi
	return 1
}

wait_healthy() {
	local begin=$SECONDS expect ok_a=0 ok_b=0 last=-10 polls=0
	expect=$(expected_boot_seconds)
	say "waiting for both agents (bounded to ${boot_timeout}s; usually ~${expect}s under TCG)"
	wait_until "$boot_timeout" "both agents healthy" agents_healthy || return 1
	if mkdir -p "$CACHE" 2>/dev/null; then
		echo $((SECONDS - begin)) >"$CACHE/two-guests-boot-seconds" 2>/dev/null || true
	fi
}

# What a boot that did not come up leaves for the reader: each guest's
# state, the last lines of its console and the agent's health answer.
# Printed, not only logged: CI keeps what the scripts print, not build/.
report_unhealthy() {	# TRY
	local g url console
	for g in a b; do
		console=$LOGS/$name-$g.console.log
		url=$A_URL
		[ "$g" = a ] || url=$B_URL
		warn "boot try $1: guest ${g^^} ($url): $(console_state "$console"); health: $(agent_health "$url")"
		tail -n 15 "$console" 2>/dev/null | sed "s/^/  ${g^^}| /" >&2 || true
	done
}


# The relay and both guests, until both agents answer. A boot that does
# not get there is reported and tried once more from scratch, on fresh
# ports (CI once saw both agents of one pair start and never answer for
# 300 s while the pair booted beside it came up): the tests judge
# migrations, and one stuck boot must not hide them. Two stuck boots fail.
boot_guests() {
	local try g
	for try in 1 2; do
		[ "$try" = 1 ] || choose_ports
		A_URL="$scheme://127.0.0.1:$port_base"
		B_URL="$scheme://127.0.0.1:$((port_base + 1))"
		say "link relay on 127.0.0.1:$((port_base + 2))/$((port_base + 3)) (log $LOGS/$name-relay.log)"
		start_relay
		say "booting guest A ($A_URL) and guest B ($B_URL$([ "$kernel_b" = "$kernel" ] || echo ", kernel $(basename "$(dirname "$kernel_b")")"))"
		start_guest a "$kernel" "$port_base" $((port_base + 2))
		start_guest b "$kernel_b" $((port_base + 1)) $((port_base + 3))
		wait_healthy && return 0
		report_unhealthy "$try"
		stop_guests
		for g in a b; do
			mv -f "$LOGS/$name-$g.console.log" "$LOGS/$name-$g.console.try$try.log" 2>/dev/null || true
		done
		port_base=""
	done
	die "agents not healthy after two boots of ${boot_timeout}s each; consoles in $LOGS/$name-{a,b}.console.try{1,2}.log"
}

# The command's environment, as shell assignments another shell can source
# (set -a): it holds the token, so only the owner may read it.
write_state() {
	install -m 600 /dev/null "$STATE"
	{
		printf '%s=%q\n' SIGMIG_A_URL "$A_URL" SIGMIG_B_URL "$B_URL" \
			SIGMIG_A_LINK_URL "$scheme://10.99.0.1:8080" SIGMIG_B_LINK_URL "$scheme://10.99.0.2:8080" \
			SIGMIG_TOKEN "$token" SIGMIG_CA_FILE "$SIGMIG_CA_FILE" SIGMIG_LINK_DIR "$LINK_DIR" \
			SIGMIG_A_CONSOLE "$A_CONSOLE" SIGMIG_B_CONSOLE "$B_CONSOLE" \
			SIGMIG_TWO_GUESTS_NAME "$name" \
			SIGMIG_A_QEMU_PID "$(qemu_of "${guest_pids[0]}")" \
			SIGMIG_B_QEMU_PID "$(qemu_of "${guest_pids[1]}")"
	} >"$STATE"
}

main() {
	local rc=0
	parse_args "$@"
	need_cmds curl ss
	mkdir -p "$LOGS" "$REPO/build/run"
	STATE="$REPO/build/run/$name.env"
	on_exit teardown
	choose_ports
	A_CONSOLE="$LOGS/$name-a.console.log"
	B_CONSOLE="$LOGS/$name-b.console.log"
	make_token_initrd
	scan_token &
	scan_pid=$!
	boot_guests
	write_state
	set -a
	# shellcheck source=/dev/null # written just above by write_state
	. "$STATE"
	set +a
	if [ ${#command[@]} -gt 0 ]; then
		# In the background so that INT/TERM interrupt the wait at once.
		"${command[@]}" &
		command_pid=$!
		wait "$command_pid" || rc=$?
		# A signal may end the wait without its trap running (seen under
		# bash 5.2): a command still running is left to teardown.
		kill -0 "$command_pid" 2>/dev/null || command_pid=""
		return "$rc"
	fi
	say "both agents up: A=$A_URL B=$B_URL (token: SIGMIG_TOKEN in $STATE)"
	say "environment in $STATE (source it in another shell); Ctrl-C to stop"
	wait -n "${guest_pids[@]}" || true
	die "a guest stopped"
}

main "$@"
