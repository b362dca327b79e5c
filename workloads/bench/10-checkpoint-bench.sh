#!/bin/sh
# shellcheck disable=SC3043 # busybox ash, the guest's shell, has local
# Checkpoint and restore time for 1k, 10k and 100k pending signals.
# For each size: freeze sigstorm (4 threads), queue N payload RT signals
# (sigqueue + rt_tgsigqueueinfo: shared and per-thread queues), DUMP (peek
# every queue, encode), COMMIT, restore into a new process (requeue, re-peek,
# compare) and read restore_ns. Prints a markdown table as TAP comments.
# shellcheck source=../tests/guest/lib.sh # installed next to the tests
cd /sigmig/tests/workloads && . ./lib.sh
WORK=/tmp/wl-bench
rm -rf "$WORK" && mkdir -p "$WORK"
SIZES=${SIGMIG_BENCH_SIZES:-"1000 10000 100000"}
ROWS=""

ms() { awk -v n="$1" 'BEGIN { printf "%.1f", n / 1e6 }'; }

bench_one() {
	local n="$1" sock="/run/sigmig/bench-$1.sock" sock2="/run/sigmig/bench-$1-r.sock"
	local t0 t1 reply status dump_ns freeze_ns restore_ns size wall
	start_storm "$sock" "$WORK/ledger.$n" --no-local --timers 0 || return 1
	echo "$STORM_PID" > "$WORK/pid.$n"
	reply=$(sigmig-ctl "$sock" FREEZE) || return 1
	freeze_ns=$(echo "$reply" | json_field freeze_ns)
	start_sender "$WORK/pid.$n" "$WORK/send.$n" --count "$n" --rate 0 --std-percent 0 --kinds sigqueue,tgsigqueue
	wait_until 600 exited "$SENDER_PID" || return 1
	reply=$(sigmig-ctl "$sock" DUMP --out "$WORK/image.$n") || return 1
	dump_ns=$(echo "$reply" | json_field dump_ns)
	size=$(echo "$reply" | json_field image_size)
	[ "$(echo "$reply" | json_field signals)" -ge "$n" ] || return 1
	sigmig-ctl "$sock" COMMIT >/dev/null || return 1
	wait_until 30 exited "$STORM_PID"
	t0=$(cut -d' ' -f1 /proc/uptime)
	sigstorm --restore "$WORK/image.$n" --ctl "$sock2" --ledger "$WORK/ledger.$n.r" --threads 4 \
		--no-local --timers 0 2>>"$WORK/storm.err" &
	STORM_PID=$!
	track "$STORM_PID"
	wait_until 600 status_is "$sock2" running || return 1
	t1=$(cut -d' ' -f1 /proc/uptime)
	status=$(sigmig-ctl "$sock2" STATUS)
	restore_ns=$(echo "$status" | sed -n 's/.*"restore_ns":\([0-9]*\).*/\1/p')
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", (b - a) * 1000 }')
	kill -KILL "$STORM_PID"
	ROWS="$ROWS
| $n | $(ms "$freeze_ns") | $(ms "$dump_ns") | $size | $(ms "$restore_ns") | $wall |"
	echo "SIGMIG-BENCH pending=$n freeze_ns=$freeze_ns dump_ns=$dump_ns image_bytes=$size restore_ns=$restore_ns restore_wall_ms=$wall"
}

for n in $SIZES; do
	bench_one "$n"
	ok $? "checkpoint/restore bench with $n pending signals"
done
echo "# | pending | freeze (ms) | dump (ms) | image (bytes) | restore (ms) | restore wall incl. exec, 10 ms ticks (ms) |"
echo "# |---|---|---|---|---|---|"
echo "$ROWS" | sed -n 's/^|/# |/p'
finish
