# shellcheck shell=bash
# One bounded libFuzzer run as one TAP line (sourced, after tap.sh):
#   fuzz_run NAME BINARY SECONDS MAX_LEN WORK_DIR SEED_DIR...
# The seeds are copied into WORK_DIR/corpus (kept between runs, so that a
# later run starts where this one stopped); a crash, leak, timeout or
# sanitizer report leaves its input in WORK_DIR/ and is a "not ok" line
# naming that reproducer and the command that replays it.
# FUZZ_SEED fixes libFuzzer's random seed (default 1, so that a check run
# explores the same mutations on every machine); FUZZ_SEED=0 draws one.
fuzz_run() {
	local name=$1 bin=$2 seconds=$3 max_len=$4 work=$5 log runs cov repro
	shift 5
	mkdir -p "$work/corpus"
	log=$work/fuzz.log
	local seeds
	for seeds in "$@"; do
		cp -- "$seeds"/* "$work/corpus/"
	done
	if timeout $((seconds + 60)) "$bin" -max_total_time="$seconds" \
		-seed="${FUZZ_SEED:-1}" \
		-max_len="$max_len" -rss_limit_mb=2048 -timeout=10 \
		-artifact_prefix="$work/" -print_final_stats=1 \
		"$work/corpus" >"$log" 2>&1; then
		runs=$(grep -o 'Done [0-9]* runs' "$log" | head -1 || true)
		cov=$(grep -o 'DONE *cov: [0-9]*' "$log" | grep -o '[0-9]*$' || true)
		tap 0 "fuzz $name: ${seconds}s, seed ${FUZZ_SEED:-1}, ${runs:-? runs}, ${cov:-?} edges, no crash"
		return 0
	fi
	repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
	tail -40 "$log" | diag
	if [ -n "$repro" ]; then
		tap 1 "fuzz $name: crashed, reproducer $repro (replay: $bin $repro)"
	else
		tap 1 "fuzz $name: failed or timed out without a reproducer (see $log)"
	fi
}
