#!/bin/sh
# Freezing a process parks its threads wherever they are, also inside
# fork() or malloc() with libc's locks held. The runtime's control thread
# must still answer FREEZE, DUMP and THAW: repeat the cycle against a
# sigstorm whose every thread forks and allocates all the time.
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-freeze-fork
rm -rf "$WORK" && mkdir -p "$WORK"
SOCK=/run/sigmig/freeze-fork.sock
SECONDS_BUDGET=${FREEZE_FORK_SECONDS:-20}

start_storm "$SOCK" "$WORK/ledger" --threads 4 --mask-ms 1 --fork-storm
ok $? "sigstorm --fork-storm started"

cycles=0 failed=""
end=$(( $(date +%s) + SECONDS_BUDGET ))
while [ "$(date +%s)" -lt "$end" ]; do
	for verb in FREEZE DUMP THAW; do
		if [ "$verb" = DUMP ]; then
			timeout 30 sigmig-ctl "$SOCK" DUMP --out "$WORK/image" >"$WORK/reply" 2>&1
		else
			timeout 30 sigmig-ctl "$SOCK" "$verb" >"$WORK/reply" 2>&1
		fi
		rc=$?
		if [ "$rc" -ne 0 ]; then
			failed="$verb rc=$rc after $cycles cycles: $(head -c 200 $WORK/reply)"
			break 2
		fi
	done
	cycles=$((cycles + 1))
done
[ -z "$failed" ] && [ $cycles -ge 5 ]
ok $? "$cycles FREEZE/DUMP/THAW cycles in ${SECONDS_BUDGET}s, each answered${failed:+: $failed}"
if [ -n "$failed" ]; then
	for t in "/proc/$STORM_PID"/task/*; do
		note "task ${t##*/}: wchan $(cat "$t/wchan" 2>/dev/null) syscall $(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
	done
fi
status_is "$SOCK" running
ok $? "the workload runs after the last THAW"
finish
