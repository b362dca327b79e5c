#!/bin/sh
# shellcheck disable=SC3043 # busybox ash, the guest's shell, has local
# CRIU alone vs CRIU + sigmig (sigmig-criu), side by side in one boot, on a
# plain program (peek-target: 3 threads) with N signals pending, spread over
# the four queues (each thread's and the process-wide one), N = 0 (the
# baseline: nothing pending), 1k, 10k, 30k, 100k. Per engine and size, RUNS
# times: frozen time = dump (from the seize to criu's exit) + restore (to the
# copy's continuing), with the phases; fidelity = a peek through the parasite
# before the dump and one of the copy, compared record by record (128 bytes),
# and the copy's own check (each thread's counts; 2 POSIX timers whose
# signals were pending, fired once more: a timer whose record is its own
# entry again raises the overrun, one whose record came back as an ordinary
# signal queues a second one).
# Prints a markdown table as TAP comments (medians, min-max spread).
# shellcheck source=../tests/guest/lib.sh # installed next to the tests
cd /sigmig/tests/workloads && . ./lib.sh
WORK=/tmp/wl-criu-bench
SIZES=${SIGMIG_CRIU_BENCH_SIZES:-"0 1000 10000 30000 100000"}
RUNS=${SIGMIG_CRIU_BENCH_RUNS:-3}
THREADS=3
rm -rf "$WORK" && mkdir -p "$WORK"

field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }	# field KEY LINE
ms() { awk -v n="$1" 'BEGIN { printf "%.0f", n / 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
median() { echo "$*" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# stats V...: "median (min-max)" of integers
stats() {
	echo "$*" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 }
		END { printf "%d (%d-%d)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

# differing A B: records (128 bytes) that differ between two peeks, or
# "count" when the queues hold different numbers of records
differing() {
	local f n=0 d
	[ "$(ls "$1")" = "$(ls "$2")" ] || { echo files; return; }
	for f in "$1"/*.bin; do
		[ "$(stat -c %s "$f")" = "$(stat -c %s "$2/${f##*/}")" ] || { echo count; return; }
		d=$(cmp -l "$f" "$2/${f##*/}" 2>/dev/null | awk '{ print int(($1 - 1) / 128) }' | uniq | wc -l)
		n=$((n + d))
	done
	echo "$n"
}

peek_into() {	# peek_into DIR
	mkdir -p "$1" && timeout 300 sigmig-peek-parasite --max-records 131072 \
		--out "$1" "$PID" >"$1.out" 2>&1
}

# copy_check DIR: the copy's own check, "TIMER-RECORDS/TIMERS ok|bad"
copy_check() {
	touch "$1/go"
	wait_until 300 grep -q '^done' "$1/state" || { echo "none"; return; }
	echo "$(awk '/^timers/ { print $4 "/" $2 }' "$1/state") $(sed -n 's/^done //p' "$1/state")"
}

# one ENGINE N RUN: sets FROZEN, DUMP, RESTORE (us), DIFF, CHECK; 1 on failure
one() {
	local engine="$1" n="$2" run="$3" dir out per timers=2
	dir=$WORK/$engine.$n.$run
	WORK_T=$dir/target
	mkdir -p "$WORK_T"
	per=$((n / (THREADS + 1)))
	[ "$n" -gt 0 ] || timers=0
	setsid withrlimit $((n + 4096)) peek-target --dir "$WORK_T" --count "$per" \
		--threads "$THREADS" --timers "$timers" </dev/null >"$WORK_T/out" 2>&1 &
	PID=$!
	track "$PID"
	wait_until 120 grep -q '^ready' "$WORK_T/state" || return 1
	peek_into "$dir/before" || return 1
	if [ "$engine" = criu ]; then
		out=$(sigmig-criu criu-dump "$PID" "$dir/img" 2>>"$WORK/err") || return 1
		DUMP=$(field total_us "$out")
		out=$(sigmig-criu criu-restore "$dir/img" 2>>"$WORK/err") || return 1
		RESTORE=$(field total_us "$out")
	else
		out=$(sigmig-criu dump "$PID" "$dir/img" 2>>"$WORK/err") || return 1
		DUMP=$(field total_us "$out")
		DRAIN=$(field drain_us "$out")
		out=$(sigmig-criu restore "$dir/img" 2>>"$WORK/err") || return 1
		RESTORE=$(field total_us "$out")
		REQUEUE=$(field requeue_us "$out")
	fi
	PID=$(field pid "$out")
	track "$PID"
	FROZEN=$((DUMP + RESTORE))
	peek_into "$dir/after" || return 1
	DIFF=$(differing "$dir/before" "$dir/after")
	CHECK=$(copy_check "$WORK_T")
	kill -KILL "$PID"
	rm -rf "$dir/img"
	return 0
}

ROWS="" RATIOS="" BASE=""
for n in $SIZES; do
	for engine in criu criu+sigmig; do
		frozen="" dump="" restore="" drain="" requeue="" diffs="" checks=""
		run=1
		while [ "$run" -le "$RUNS" ]; do
			DRAIN=0 REQUEUE=0
			one "$engine" "$n" "$run"
			ok $? "$engine, $n pending, run $run: frozen $(ms "${FROZEN:-0}") ms, differing records ${DIFF:-?}, timer records/timers and the copy's check: ${CHECK:-?}"
			frozen="$frozen $(ms "$FROZEN")" dump="$dump $(ms "$DUMP")"
			restore="$restore $(ms "$RESTORE")" diffs="$diffs $DIFF"
			checks="$checks,${CHECK:-?}"
			drain="$drain $(ms "$DRAIN")" requeue="$requeue $(ms "$REQUEUE")"
			run=$((run + 1))
			cleanup
		done
		ROWS="$ROWS
| $n | $engine | $(stats "$frozen") | $(stats "$dump") | $(stats "$drain") | $(stats "$restore") | $(stats "$requeue") | $(echo "$diffs" | sed 's/^ //; s/ /\//g') | ${checks#,} |"
		if [ "$engine" = criu ]; then
			alone=$(median "$frozen")
			[ -n "$BASE" ] || BASE=$alone	# CRIU alone, the first size (0)
		else
			with=$(median "$frozen")
			RATIOS="$RATIOS
| $n | $(ratio "$with" "$alone") | $(ratio "$with" "$BASE") | $(ratio "$alone" "$BASE") |"
		fi
	done
done
note ""
note "CRIU alone vs CRIU + sigmig, $THREADS threads, $RUNS runs each, ms: median (min-max)"
note "| pending | engine | frozen | dump | of it drain | restore | of it requeue | differing records per run | timer records/timers after a refire, copy's check, per run |"
note "|--:|---|--:|--:|--:|--:|--:|---|---|"
echo "$ROWS" | sed -n 's/^|/# |/p'
note ""
note "Frozen time, ratios of the medians above (the first size is the baseline)"
note "| pending | CRIU + sigmig / CRIU alone | CRIU + sigmig / CRIU alone at the baseline | CRIU alone / CRIU alone at the baseline |"
note "|--:|--:|--:|--:|"
echo "$RATIOS" | sed -n 's/^|/# |/p'
[ -s "$WORK/err" ] && while read -r line; do note "$line"; done <"$WORK/err"
finish
