#!/usr/bin/env bash
# Host-side checks of kernel/patches/series, as TAP: every patch must be
# scripts/checkpatch.pl --strict clean (the tree's own checkpatch), the
# series must apply in order, without fuzz, to the pristine linux-source-6.1,
# and a patch must add no scripts/kernel-doc -none warning to the C files it
# touches (upstream's own, e.g. in posix-timers.h, are not the series' to fix).
# Patches are applied to a throw-away index, so the shared tree is untouched.
set -euo pipefail

PROG=check-patches
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=orchestrate/lib/kernel-tree.sh
. "$SIGMIG_REPO/orchestrate/lib/kernel-tree.sh"
# shellcheck source=orchestrate/lib/tap.sh
. "$SIGMIG_REPO/orchestrate/lib/tap.sh"

usage_text() {
	cat <<'EOF'
Usage: check-patches.sh
  TAP on stdout: checkpatch --strict, git apply (in series order, no
  fuzz) and kernel-doc -none on the files it touches, for every patch in
  kernel/patches/series.
EOF
}

# kernel_doc TREE PATCH: kernel-doc -none warnings of every .c/.h file PATCH
# touches, as the index holds it now, without line numbers so that the
# warnings before and after PATCH compare.
kernel_doc() {
	local tree=$1 patch=$2 f tmp
	tmp=$(mktemp -d)
	while read -r f; do
		mkdir -p "$tmp/$(dirname "$f")"
		GIT_INDEX_FILE="$INDEX" git -C "$tree" show ":$f" >"$tmp/$f" 2>/dev/null || continue
		(cd "$tmp" && "$tree/scripts/kernel-doc" -none "$f" 2>&1) |
			sed 's/^\([^:]*\):[0-9]*:/\1:/'
	done < <(sed -n 's|^diff --git a/\([^ ]*\.[ch]\) b/.*|\1|p' "$patch" | sort -u)
	rm -rf "$tmp"
}

# new_lines BEFORE AFTER: the lines of AFTER that BEFORE does not have.
new_lines() {
	comm -13 <(sort <<<"$1") <(sort <<<"$2") | sed '/^$/d'
}

main() {
	local tree p out status before
	case "${1:-}" in
	"") ;;
	-h|--help) show_help ;;
	*) usage ;;
	esac
	echo "TAP version 13"
	if [ ! -f "$SERIES" ] || [ -z "$(series_patches)" ]; then
		echo "1..0 # SKIP kernel/patches/series is missing or empty"
		return 0
	fi
	tree=$("$SIGMIG_REPO/orchestrate/build-kernel.sh" --print-tree)
	INDEX=$(mktemp)
	on_exit rm -f "$INDEX"
	GIT_INDEX_FILE="$INDEX" git -C "$tree" read-tree sigmig-pristine
	for p in $(series_patches); do
		if [ ! -f "$PATCH_DIR/$p" ]; then
			tap 1 "series entry $p exists"
			continue
		fi
		if ! patch_has_diff "$PATCH_DIR/$p"; then
			echo "# $p has no diff (cover letter): not checked"
			continue
		fi
		status=0
		out=$(cd "$tree" && ./scripts/checkpatch.pl --strict "$PATCH_DIR/$p" 2>&1) || status=$?
		tap_output "$status" "checkpatch --strict $p" "$out"
		before=$(kernel_doc "$tree" "$PATCH_DIR/$p")
		status=0
		out=$(GIT_INDEX_FILE="$INDEX" git -C "$tree" apply --cached "$PATCH_DIR/$p" 2>&1) || status=$?
		tap_output "$status" "git apply (no fuzz, in series order) $p" "$out"
		[ "$status" = 0 ] || continue
		out=$(new_lines "$before" "$(kernel_doc "$tree" "$PATCH_DIR/$p")")
		status=0
		[ -z "$out" ] || status=1
		tap_output "$status" "kernel-doc -none: no new warning in the files $p touches" "$out"
	done
	tap_done
}

main "$@"
