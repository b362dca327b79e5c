#!/usr/bin/env bash
# Build the kernel (cached) and the initramfs, boot one guest in role=test and
# return its SIGMIG-EXIT code.  The serial console is written to
# build/logs/guest-test[-<flavor>][-<only>][-no-<skip>].log (printed on stderr).
set -euo pipefail

PROG=guest-test
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
REPO=$SIGMIG_REPO
only="" skip="" initrd="" flavor=default timeout_s=2400 test_timeout=600 quiet=() build=1
guest_pid=""

usage_text() {
	cat <<'EOF'
Usage: guest-test.sh [--only c1[,c2...]|bench] [--skip c1[,c2...]]
                     (c:WORD, bench:WORD: only the programs whose name has WORD)
                     [--kernel-flavor default|debug] [--initrd FILE]
                     [--timeout SEC] [--test-timeout SEC] [--quiet] [--no-build]
  --no-build: boot the kernel and initramfs already built (make test builds
  them as phases of their own); --initrd: that initramfs (with --no-build).
EOF
}

stop_guest() { stop_pids "$guest_pid"; }

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--only) only=${2:?}; shift 2 ;;
		--skip) skip=${2:?}; shift 2 ;;
		--initrd) initrd=${2:?}; shift 2 ;;
		--kernel-flavor|--flavor) flavor=${2:?}; shift 2 ;;
		--timeout) timeout_s=${2:?}; shift 2 ;;
		--test-timeout) test_timeout=${2:?}; shift 2 ;;
		--quiet) quiet=(--quiet); shift ;;
		--no-build) build=0; shift ;;
		-h|--help) show_help ;;
		*) usage ;;
		esac
	done
}

# The agent's guest tests frame every reply they received on the console
# (agent/guest/lib.sh); they are checked against docs/openapi.yaml here,
# where python3-jsonschema is, and the TAP lines join the console log.
check_replies() {	# CONSOLE_LOG
	local rc=0
	[ -f "$1" ] || return 0
	/usr/bin/python3 "$REPO/orchestrate/lib/openapi_check.py" console "$1" >"$1.openapi" || rc=1
	tee -a "$1" <"$1.openapi"
	rm -f "$1.openapi"
	return "$rc"
}

main() {
	local name kernel append rc
	parse_args "$@"
	name="test"
	[ "$flavor" = default ] || name+="-$flavor"
	[ -z "$only" ] || name+="-${only//,/+}"
	[ -z "$skip" ] || name+="-no-${skip//,/+}"
	[ -z "$initrd" ] || [ "$build" = 0 ] || die "--initrd needs --no-build" 2
	initrd=${initrd:-$REPO/build/initramfs/initramfs-$name.cpio.gz}

	# One run per image and log name at a time: concurrent identical runs would
	# overwrite each other's initramfs and console log.
	mkdir -p "$REPO/build/logs"
	exec 8>"$REPO/build/logs/.guest-$name.lock"
	if ! flock -n 8; then
		say "waiting for another guest-test $name run"
		flock -w "$timeout_s" 8 || die "another guest-test $name run holds the lock"
	fi

	# Boot this checkout's copy of the kernel, not the one in the shared cache,
	# which a build from another checkout (another patch series) may replace.
	kernel="$REPO/build/kernel/$flavor/bzImage"
	if [ "$build" = 1 ]; then
		"$REPO/orchestrate/build-kernel.sh" --flavor "$flavor" >/dev/null
		# --keep-going: one component that fails to build must not hide the
		# others' guest results; its failure is reported and fails this run.
		"$REPO/orchestrate/build-initramfs.sh" --keep-going --output "$initrd" >/dev/null
	fi

	append="sigmig.timeout=$test_timeout"
	[ -z "$only" ] || append+=" sigmig.only=$only"
	[ -z "$skip" ] || append+=" sigmig.skip=$skip"
	rc=0
	# In the background: INT or TERM then ends the wait at once, and the exit
	# hook stops run-guest.sh, which stops QEMU.
	on_exit stop_guest
	"$REPO/orchestrate/run-guest.sh" --kernel "$kernel" --initrd "$initrd" \
		--role test --name "$name" --timeout "$timeout_s" --append "$append" \
		"${quiet[@]}" &
	guest_pid=$!
	wait "$guest_pid" || rc=$?
	# Seen under bash 5.2: TERM ended the wait and its trap never ran.  Then
	# the guest still runs, and the exit hook must still stop it.
	kill -0 "$guest_pid" 2>/dev/null || guest_pid=""
	check_replies "$REPO/build/logs/guest-$name.log" || { [ "$rc" != 0 ] || rc=1; }
	if [ -s "$initrd.failures" ]; then
		cat "$initrd.failures"
		[ "$rc" != 0 ] || rc=1
	fi
	return "$rc"
}

main "$@"
