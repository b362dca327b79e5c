#!/usr/bin/env bash
# Boot one sigmig guest under QEMU and return its SIGMIG-EXIT code.
set -euo pipefail

PROG=run-guest
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
REPO=$SIGMIG_REPO
CACHE=${SIGMIG_CACHE:-/var/cache/sigmig}
KVM_PROBE_TIMEOUT=30

kernel="" initrd="" role=test guest=a append="" log="" name=""
timeout_s=1800 mgmt_port="" link="" accel=${SIGMIG_ACCEL:-auto}
memory=1024 smp=2 quiet=0
qemu_pid="" tail_pid="" probe_log=""

usage_text() {
	cat <<'EOF'
Usage: run-guest.sh --kernel BZIMAGE --initrd CPIO [options]
  --role test|agent|shell   sigmig.role (default test)
  --guest a|b               sigmig.guest: eth1 is 10.99.0.1 (a) or 10.99.0.2 (b)
  --append "k=v ..."        more kernel command line (e.g. sigmig.only=kernel)
  --log FILE                serial console log (default build/logs/guest-<name>.log)
  --name NAME               names the default log (default <role>-<guest>)
  --timeout SEC             hard limit for the whole boot (default 1800)
  --mgmt-port PORT          management NIC: user net, 127.0.0.1:PORT -> guest :8080
  --link listen=H:P|connect=H:P  guest link NIC (virtio-net on a socket netdev)
  --accel auto|tcg|kvm      default auto: KVM only if a bounded probe boots
  --memory MB, --smp N      default 1024, 2
  --quiet                   do not echo the console to stderr
Exit status: the guest's SIGMIG-EXIT code; 124 on timeout; 125 when the
guest stopped without SIGMIG-EXIT (panic, QEMU error); 143 when terminated.
EOF
}

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--kernel) kernel=${2:?}; shift 2 ;;
		--initrd) initrd=${2:?}; shift 2 ;;
		--role) role=${2:?}; shift 2 ;;
		--guest) guest=${2:?}; shift 2 ;;
		--append) append=${2?}; shift 2 ;;
		--log) log=${2:?}; shift 2 ;;
		--name) name=${2:?}; shift 2 ;;
		--timeout) timeout_s=${2:?}; shift 2 ;;
		--mgmt-port) mgmt_port=${2:?}; shift 2 ;;
		--link) link=${2:?}; shift 2 ;;
		--accel) accel=${2:?}; shift 2 ;;
		--memory) memory=${2:?}; shift 2 ;;
		--smp) smp=${2:?}; shift 2 ;;
		--quiet) quiet=1; shift ;;
		-h|--help) show_help ;;
		*) usage ;;
		esac
	done
	[ -f "$kernel" ] || die "--kernel: no such file '$kernel'" 2
	[ -f "$initrd" ] || die "--initrd: no such file '$initrd'" 2
	case "$guest" in a|b) ;; *) die "--guest must be a or b" 2 ;; esac
	case "$link" in ""|listen=*|connect=*) ;; *) die "--link must be listen=H:P or connect=H:P" 2 ;; esac
	name=${name:-$role-$guest}
	log=${log:-$REPO/build/logs/guest-$name.log}
	mkdir -p "$(dirname "$log")"
}

cleanup() {
	stop_pids "$qemu_pid" "$tail_pid"
	qemu_pid="" tail_pid=""
	[ -z "$probe_log" ] || rm -f "$probe_log"
}

# Arguments shared by the probe and the real boot.
qemu_base_args() {
	local accel_arg=$1 console_log=$2 cmdline=$3
	printf '%s\n' -accel "$accel_arg" -cpu max -smp "$smp" -m "$memory" \
		-nodefaults -nographic -no-reboot -monitor none \
		-serial "file:$console_log" \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 quiet panic=-1 $cmdline"
}

# KVM is used only if a guest actually boots under it within the bound: on
# nested machines /dev/kvm exists but guests hang at "Booting from ROM".
kvm_works() {
	local boot_id cache_file answer=no
	[ -w /dev/kvm ] || return 1
	boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
	cache_file="$CACHE/kvm-probe.$boot_id"
	if [ -f "$cache_file" ]; then
		[ "$(cat "$cache_file")" = yes ]
		return
	fi
	probe_log=$(mktemp)
	say "probing KVM (bounded to ${KVM_PROBE_TIMEOUT}s)"
	mapfile -t args < <(qemu_base_args kvm "$probe_log" "sigmig.role=probe")
	timeout -k 5 "$KVM_PROBE_TIMEOUT" qemu-system-x86_64 "${args[@]}" \
		</dev/null >/dev/null 2>&1 || true
	grep -q 'SIGMIG-BOOT' "$probe_log" && answer=yes
	rm -f "$probe_log"
	probe_log=""
	mkdir -p "$CACHE" && echo "$answer" >"$cache_file"
	say "KVM usable: $answer"
	[ "$answer" = yes ]
}

# Sets accel_arg.  Not in a command substitution: the probe's exit hook
# (cleanup) must see its log.
choose_accel() {
	case "$accel" in
	tcg|kvm) accel_arg=$accel ;;
	auto) if kvm_works; then accel_arg=kvm; else accel_arg=tcg; fi ;;
	*) die "--accel must be auto, tcg or kvm" 2 ;;
	esac
}

nic_args() {
	if [ -n "$mgmt_port" ]; then
		printf '%s\n' -netdev "user,id=mgmt,net=10.0.2.0/24,hostfwd=tcp:127.0.0.1:$mgmt_port-:8080" \
			-device "virtio-net-pci,netdev=mgmt,mac=52:54:00:12:34:56,romfile="
	fi
	if [ -n "$link" ]; then
		local mac=52:54:00:99:00:01
		[ "$guest" = b ] && mac=52:54:00:99:00:02
		printf '%s\n' -netdev "socket,id=link,$link" \
			-device "virtio-net-pci,netdev=link,mac=$mac,romfile="
	fi
}

qemu_gone() {
	! kill -0 "$qemu_pid" 2>/dev/null
}

guest_exit_code() {
	tr -d '\r' <"$log" | sed -n 's/^SIGMIG-EXIT \([0-9][0-9]*\)$/\1/p' | tail -1
}

main() {
	local accel_arg cmdline code
	parse_args "$@"
	on_exit cleanup
	choose_accel
	cmdline="sigmig.role=$role sigmig.guest=$guest $append"
	mapfile -t args < <(qemu_base_args "$accel_arg" "$log" "$cmdline"; nic_args)
	: >"$log"
	say "booting $name ($accel_arg, -smp $smp, -m $memory, timeout ${timeout_s}s), console: $log"
	qemu-system-x86_64 "${args[@]}" </dev/null >"$log.qemu" 2>&1 &
	qemu_pid=$!
	if [ "$quiet" = 0 ]; then
		tail -n +1 -f --pid="$qemu_pid" "$log" >&2 &
		tail_pid=$!
	fi
	if ! wait_until "$timeout_s" "guest $name to stop" qemu_gone; then
		say "TIMEOUT: guest $name still running after ${timeout_s}s"
		cleanup
		return 124
	fi
	wait "$qemu_pid" || say "QEMU exited with $?: $(tail -3 "$log.qemu" | tr '\n' ' ')"
	qemu_pid=""
	[ -n "$tail_pid" ] && { timeout 5 tail --pid="$tail_pid" -f /dev/null || true; }
	code=$(guest_exit_code)
	if [ -z "$code" ]; then
		say "guest $name stopped without SIGMIG-EXIT (panic or QEMU error); see $log"
		return 125
	fi
	say "guest $name: SIGMIG-EXIT $code"
	return "$code"
}

main "$@"
