#!/usr/bin/env bash
# Host-side checks of kernel/patches/series, as TAP: every patch must be
# scripts/checkpatch.pl --strict clean (the tree's own checkpatch) and the
# series must apply in order, without fuzz, to the pristine linux-source-6.1.
# Patches are applied to a throw-away index, so the shared tree is untouched.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PATCH_DIR="$REPO/kernel/patches"
SERIES="$PATCH_DIR/series"
n=0 failed=0

tap() {
	local status=$1; shift
	n=$((n + 1))
	if [ "$status" = 0 ]; then
		echo "ok $n - $*"
	else
		echo "not ok $n - $*"
		failed=$((failed + 1))
	fi
}

series_patches() {
	sed -e 's/#.*//' -e 's/[[:space:]].*//' "$SERIES" | grep -v '^$' || true
}

main() {
	local tree p out status
	echo "TAP version 13"
	if [ ! -f "$SERIES" ] || [ -z "$(series_patches)" ]; then
		echo "1..0 # SKIP kernel/patches/series is missing or empty"
		return 0
	fi
	tree=$("$REPO/orchestrate/build-kernel.sh" --print-tree)
	INDEX=$(mktemp)
	trap 'rm -f "$INDEX"' EXIT
	GIT_INDEX_FILE="$INDEX" git -C "$tree" read-tree sigmig-pristine
	for p in $(series_patches); do
		if [ ! -f "$PATCH_DIR/$p" ]; then
			tap 1 "series entry $p exists"
			continue
		fi
		if ! grep -qE '^(diff --git |--- [^ ])' "$PATCH_DIR/$p"; then
			echo "# $p has no diff (cover letter): not checked"
			continue
		fi
		status=0
		out=$(cd "$tree" && ./scripts/checkpatch.pl --strict "$PATCH_DIR/$p" 2>&1) || status=$?
		[ "$status" = 0 ] || sed 's/^/# /' <<<"$out"
		tap "$status" "checkpatch --strict $p"
		status=0
		out=$(GIT_INDEX_FILE="$INDEX" git -C "$tree" apply --cached "$PATCH_DIR/$p" 2>&1) || status=$?
		[ "$status" = 0 ] || sed 's/^/# /' <<<"$out"
		tap "$status" "git apply (no fuzz, in series order) $p"
	done
	echo "1..$n"
	[ "$failed" = 0 ]
}

main "$@"
