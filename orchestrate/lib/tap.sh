# shellcheck shell=bash
# TAP output for the project's bash test scripts, in every component
# (sourced): tap, tap_output, diag, tap_skip_all, tap_done. A script that
# wants more on a failure names a function in TAP_ON_FAILURE.
TAP_N=0
TAP_FAILED=0
TAP_ON_FAILURE=${TAP_ON_FAILURE:-}

tap() {	# STATUS DESCRIPTION...
	local status=$1
	shift
	TAP_N=$((TAP_N + 1))
	if [ "$status" = 0 ]; then
		echo "ok $TAP_N - $*"
		return 0
	fi
	echo "not ok $TAP_N - $*"
	TAP_FAILED=$((TAP_FAILED + 1))
	[ -z "$TAP_ON_FAILURE" ] || "$TAP_ON_FAILURE"
	return 0
}

# tap_output STATUS DESCRIPTION OUTPUT: the output as TAP comments on failure.
tap_output() {
	[ "$1" = 0 ] || printf '%s\n' "$3" | diag
	tap "$1" "$2"
}

diag() { sed 's/^/# /'; }

tap_skip_all() {	# REASON
	echo "1..0 # SKIP $*"
	exit 0
}

# The plan line; true when every test passed.
tap_done() {
	echo "1..$TAP_N"
	[ "$TAP_FAILED" = 0 ]
}
