# shellcheck shell=bash
# Free TCP ports for the host side's listeners (the link relay, QEMU's
# socket netdevs). Sourced by common.sh, and by scripts that need only this.

# port_busy PORT: some TCP socket on this host (any state) uses PORT
port_busy() {
	ss -Htan "( sport = :$1 )" 2>/dev/null | grep -q .
}

# free_port_base N: the first of N consecutive ports no socket uses, picked
# below the kernel's ephemeral range: outgoing connections take their local
# ports from that range, and a random pick inside it once collided with
# one between the check and the bind ("Address already in use").
free_port_base() {
	local n=$1 low=32768 base p busy
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
	[ "$low" -gt $((20000 + 1000 + n)) ] || low=32768
	for _ in $(seq 1 50); do
		base=$((20000 + RANDOM % (low - 20000 - n)))
		busy=0
		for ((p = 0; p < n; p++)); do
			if port_busy $((base + p)); then
				busy=1
				break
			fi
		done
		[ "$busy" = 1 ] || { echo "$base"; return 0; }
	done
	return 1
}
