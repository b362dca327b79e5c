#!/usr/bin/env bash
# The series' last patch, which adds these selftests to the tree as
# tools/testing/selftests/signalfd, generated from the files here: the
# tests are edited in kernel/selftests/ only, and the patch follows.
#
#   mkpatch.sh           rewrite kernel/patches/$PATCH
#   mkpatch.sh --check   TAP: the committed patch is what this generates
#   mkpatch.sh --stdout  print the patch
#
# Deterministic: the commit is made in a throw-away repository on top of the
# pristine tree's tools/testing/selftests/Makefile, with fixed author,
# dates and git configuration. Reads that Makefile and MAINTAINERS from the
# kernel tree's sigmig-pristine tag (SIGMIG_KERNEL_TREE, or the cache's).
# sfd_compat32.c is i386-only and stays out of the tree (built here -m32).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PATCH=0017-selftests-signalfd-add-tests-of-the-pending-signal-int.patch
OUT=$REPO/kernel/patches/$PATCH
NUMBER=17
AUTHOR_NAME="sigmig maintainers"
AUTHOR_EMAIL="maintainers@users.noreply.a-seed-e41bc7d8.example"
DATE="Sun, 6 Dec 2026 06:00:00 +0000"
DEST=tools/testing/selftests/signalfd

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

mode="write"
case "${1:-}" in
"") ;;
--check) mode=check ;;
--stdout) mode=stdout ;;
-h|--help) usage ;;
*) usage ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The programs of the tree's kselftest: every sfd_*.c but the i386-only one.
tests() {
	local f
	for f in "$HERE"/sfd_*.c; do
		f=${f##*/}
		[ "$f" = sfd_compat32.c ] || echo "${f%.c}"
	done
}

# The Makefile lists its programs by name: it must list exactly tests().
check_makefile_list() {
	local listed
	listed=$(sed -n '/^TEST_GEN_PROGS :=/,/^$/p' "$HERE/kselftest/Makefile" |
		grep -o 'sfd_[a-z0-9_]*' || true)
	if [ "$listed" != "$(tests)" ]; then
		echo "kselftest/Makefile's TEST_GEN_PROGS is not every sfd_*.c but sfd_compat32.c:" >&2
		diff <(echo "$listed") <(tests) >&2 || true
		return 1
	fi
}

message() {
	cat <<'EOF'
selftests/signalfd: add tests of the pending-signal interface

The series lets a signalfd return siginfo_t records (SFD_RAW), dequeue
from one queue only (SFD_PRIVATE, SFD_GROUP), peek at either queue with
pread() without dequeuing and requeue raw records with write(), and it
changes what PTRACE_PEEKSIGINFO and pending timer signals report. None
of it is covered by an existing selftest.

Add one program per concern, each comparing what the interface returns
with what the kernel delivers independently to an SA_SIGINFO handler or
reports through PTRACE_PEEKSIGINFO, record for record: the layouts of
every si_code class, peeks of both queues and their resumption across a
changing queue, the errors, a dump and requeue of every kind of pending
signal, timer signals (deleted, CPU-time, requeued), ptrace, exec and
RLIMIT_SIGPENDING while a peek holds its place, io_uring reads, fdinfo,
and what any kernel already does for a restore (a task may queue itself
any siginfo; core signals keep their core-dump bit when requeued).

The programs include the tree's uapi headers (KHDR_INCLUDES) and call
signalfd4() directly: glibc's wrapper and <sys/signalfd.h> predate the
new flags and clash with <linux/signalfd.h>. On a kernel without the
interface (signalfd4() refuses SFD_RAW) a program skips as a whole; one
that has it runs every test, so a broken interface fails.

EOF
	echo "Signed-off-by: $AUTHOR_NAME <$AUTHOR_EMAIL>"
}

gitignore() {
	echo "# SPDX-License-Identifier: GPL-2.0-only"
	tests
}

generate() {
	local tree=$1 repo=$tmp/repo t
	local -x GIT_CONFIG_NOSYSTEM=1 HOME=$tmp TZ=UTC
	local -x GIT_AUTHOR_NAME=$AUTHOR_NAME GIT_AUTHOR_EMAIL=$AUTHOR_EMAIL
	local -x GIT_COMMITTER_NAME=$AUTHOR_NAME GIT_COMMITTER_EMAIL=$AUTHOR_EMAIL
	local -x GIT_AUTHOR_DATE=$DATE GIT_COMMITTER_DATE=$DATE

	git init -q "$repo"
	mkdir -p "$repo/tools/testing/selftests"
	git -C "$tree" show sigmig-pristine:tools/testing/selftests/Makefile \
		>"$repo/tools/testing/selftests/Makefile"
	git -C "$tree" show sigmig-pristine:MAINTAINERS >"$repo/MAINTAINERS"
	git -C "$repo" add -A
	git -C "$repo" commit -q -m "linux-source-6.1"

	# After sigaltstack, in TARGETS' alphabetical order.
	sed -i 's|^TARGETS += sigaltstack$|&\nTARGETS += signalfd|' \
		"$repo/tools/testing/selftests/Makefile"
	grep -qx 'TARGETS += signalfd' "$repo/tools/testing/selftests/Makefile" ||
		{ echo "no 'TARGETS += sigaltstack' line to add signalfd after" >&2; return 1; }
	# The tests exercise fs/signalfd.c, which this entry covers.
	sed -i 's|^F:\tinclude/uapi/linux/openat2.h$|&\nF:\ttools/testing/selftests/signalfd/|' \
		"$repo/MAINTAINERS"
	grep -q '^F:.tools/testing/selftests/signalfd/$' "$repo/MAINTAINERS" ||
		{ echo "no FILESYSTEMS (VFS) entry to add the tests to" >&2; return 1; }

	mkdir -p "$repo/$DEST"
	gitignore >"$repo/$DEST/.gitignore"
	cp "$HERE/kselftest/Makefile" "$HERE/kselftest/config" \
		"$HERE/sfd_common.h" "$HERE/sfd_probe.h" "$repo/$DEST/"
	for t in $(tests); do
		cp "$HERE/$t.c" "$repo/$DEST/"
	done
	chmod 0644 "$repo/$DEST"/* "$repo/$DEST/.gitignore"
	git -C "$repo" add -A
	message | git -C "$repo" commit -q -F -
	git -C "$repo" format-patch -q --stdout -1 --subject-prefix="PATCH v2" \
		--start-number "$NUMBER" --numbered --signature=2.39.5 \
		--no-renames --diff-algorithm=myers HEAD
}

main() {
	local tree status=0
	check_makefile_list
	# Only the pristine tag is read: any state of the tree will do, and
	# --print-tree (which prepares it) only when there is none yet.
	tree=${SIGMIG_KERNEL_TREE:-${SIGMIG_CACHE:-/var/cache/sigmig}/src/linux-source-6.1}
	git -C "$tree" rev-parse -q --verify sigmig-pristine >/dev/null 2>&1 ||
		tree=$("$REPO/orchestrate/build-kernel.sh" --print-tree)
	generate "$tree" >"$tmp/patch"
	case "$mode" in
	stdout) cat "$tmp/patch" ;;
	write)
		cp "$tmp/patch" "$OUT"
		grep -qx "$PATCH" "$REPO/kernel/patches/series" ||
			echo "note: $PATCH is not in kernel/patches/series" >&2
		;;
	check)
		echo "TAP version 13"
		echo "1..2"
		diff -u "$OUT" "$tmp/patch" >"$tmp/diff" || status=1
		if [ "$status" = 0 ]; then
			echo "ok 1 - kernel/patches/$PATCH is what mkpatch.sh generates"
		else
			sed 's/^/# /' "$tmp/diff" | head -40
			echo "not ok 1 - kernel/patches/$PATCH is what mkpatch.sh generates" \
				"(run kernel/selftests/mkpatch.sh)"
		fi
		# One probe: the other programs' header includes the tests' one.
		if grep -qx '#include "../../selftests/sfd_probe.h"' \
			"$REPO/kernel/include/sigmig/sfd_probe.h" &&
		   ! grep -q '^struct sfd_caps' "$REPO/kernel/include/sigmig/sfd_probe.h"; then
			echo "ok 2 - kernel/include/sigmig/sfd_probe.h is the selftests' sfd_probe.h"
		else
			status=1
			echo "not ok 2 - kernel/include/sigmig/sfd_probe.h is the selftests' sfd_probe.h"
		fi
		return "$status"
		;;
	esac
}

main
