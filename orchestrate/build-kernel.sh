#!/usr/bin/env bash
# Build the sigmig guest kernel: Debian linux-source-6.1 + kernel/patches/series
# + tinyconfig + kernel/config fragments.  The source tree (lib/kernel-tree.sh)
# and the per-flavor out-of-tree build directories live in a cache outside the
# repository so that rebuilds are incremental; a build is skipped entirely
# when the hash of every input matches the one recorded next to the cached
# bzImage.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=build-kernel
# shellcheck source=orchestrate/lib/common.sh
. "$REPO/orchestrate/lib/common.sh"
# shellcheck source=orchestrate/lib/kernel-tree.sh
. "$REPO/orchestrate/lib/kernel-tree.sh"
CONFIG_DIR="$REPO/kernel/config"

flavor=default
print_tree=0
force=0

usage_text() {
	cat <<'EOF'
Usage: build-kernel.sh [--flavor default|debug|stock|nocr] [--print-tree] [--force]
  stdout: the path of the bzImage (or, with --print-tree, of the patched
  source tree, which is prepared but not built).  Progress goes to stderr.
  --flavor stock: the same configuration without the patch series (a git
  worktree of sigmig-pristine), for guests that lack the interface.
  --flavor nocr: the series without CONFIG_CHECKPOINT_RESTORE (nor what
  CRIU needs), where the interface must be absent.
  --force: build even when the cached bzImage matches the inputs.
Environment: SIGMIG_CACHE (default /var/cache/sigmig), SIGMIG_LOCK_TIMEOUT
(seconds to wait for another build's lock, default 5400).
EOF
}

# configure and build are part of the cache key as written (declare -f in
# inputs_hash): they keep calling log, so that moving to the shared library
# did not rebuild every flavor.
log() { say "$@"; }

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--flavor) flavor=${2:?--flavor needs a value}; shift 2 ;;
		--flavor=*) flavor=${1#*=}; shift ;;
		--print-tree) print_tree=1; shift ;;
		--force) force=1; shift ;;
		-h|--help) show_help ;;
		*) usage ;;
		esac
	done
	case "$flavor" in
	default|debug|stock|nocr) ;;
	*) die "unknown flavor '$flavor' (default|debug|stock|nocr)" ;;
	esac
}

fragments() {
	echo "$CONFIG_DIR/guest.config"
	if [ "$flavor" = nocr ]; then
		# Last, so that its "not set" overrides guest.config's "=y"
		echo "$CONFIG_DIR/nocr.config"
		return
	fi
	echo "$CONFIG_DIR/checkpoint.config"
	if [ "$flavor" = debug ] && [ -f "$CONFIG_DIR/debug.config" ]; then
		echo "$CONFIG_DIR/debug.config"
	fi
}

inputs_hash() {
	{
		echo "tarball $TARBALL_SHA"
		echo "patches $PATCHES_SHA"
		echo "flavor $flavor"
		local f
		for f in $(fragments); do
			echo "fragment $(basename "$f")"
			cat "$f"
		done
		# Only the code that shapes the bzImage: editing the locking or
		# the logging must not rebuild every flavor.
		declare -f fragments kmake configure build
		cat "$REPO/orchestrate/check-kconfig.sh"
	} | sha256sum | cut -d' ' -f1
}

kmake() {
	# LOCALVERSION= (set, empty) keeps "+" off the release of the git tree.
	make -C "$SRC_TREE" O="$OUT" ARCH=x86_64 LOCALVERSION= "$@"
}

configure() {
	local allconfig="$OUT/sigmig-allconfig" new_sum
	# tinyconfig = allnoconfig + tiny-base.config + tiny.config; adding our
	# fragments to the same allnoconfig run keeps the allno semantics.
	{
		cat "$SRC_TREE/kernel/configs/tiny-base.config" \
		    "$SRC_TREE/kernel/configs/tiny.config" \
		    "$SRC_TREE/arch/x86/configs/tiny.config"
		local f
		for f in $(fragments); do cat "$f"; done
	} >"$allconfig.new"
	new_sum=$(sha256sum <"$allconfig.new" | cut -d' ' -f1)
	if [ -f "$OUT/.config" ] && [ -f "$allconfig" ] &&
	   [ "$(sha256sum <"$allconfig" | cut -d' ' -f1)" = "$new_sum" ]; then
		rm -f "$allconfig.new"
		log "configuration unchanged"
	else
		mv "$allconfig.new" "$allconfig"
		log "configuring: tinyconfig + $(fragments | xargs -n1 basename | tr '\n' ' ')"
		kmake -s KCONFIG_ALLCONFIG="$allconfig" allnoconfig >&2
	fi
	# shellcheck disable=SC2046 # one argument per fragment path (no spaces)
	"$REPO/orchestrate/check-kconfig.sh" "$OUT/.config" $(fragments) >&2
}

object_count() {
	find "$OUT" -name '*.o' 2>/dev/null | wc -l
}

# A cold build is silent for minutes under "make -s": report the number of
# objects built so far against the last complete build (or a typical one).
# It also stops by itself should the script be killed beyond its exit hooks.
progress_ticker() {
	local expected=$1
	while sleep_stoppable 30 && kill -0 "$$" 2>/dev/null; do
		say "  ... $(object_count) of ~$expected objects built"
	done
}

# build's progress ticker, should the build be interrupted.
stop_jobs() {
	local pids
	mapfile -t pids < <(jobs -p)
	stop_pids "${pids[@]}"
}

build() {
	local jobs expected ticker rc=0
	jobs=$(nproc)
	expected=$(cat "$OUT/sigmig-objects" 2>/dev/null || echo 1100)
	log "building bzImage with -j$jobs in $OUT (cold: 3-7 min on 2 cores)"
	progress_ticker "$expected" &
	ticker=$!
	kmake -s -j"$jobs" bzImage >&2 || rc=$?
	kill "$ticker" 2>/dev/null
	wait "$ticker" 2>/dev/null || true
	[ "$rc" = 0 ] || die "kernel build failed (make exit $rc)"
	object_count >"$OUT/sigmig-objects"
	log "built $(du -h "$OUT/arch/x86/boot/bzImage" | cut -f1) bzImage"
}

publish() {
	local dest="$REPO/build/kernel/$flavor"
	mkdir -p "$dest"
	# Atomic: a guest of this checkout may be starting from the old copy.
	cp "$OUT/arch/x86/boot/bzImage" "$dest/bzImage.tmp.$$"
	mv -f "$dest/bzImage.tmp.$$" "$dest/bzImage"
	cp "$OUT/.config" "$dest/config"
	echo "$SRC_TREE" >"$dest/tree"
}

main() {
	local hash stamp
	parse_args "$@"
	if [ "$print_tree" = 1 ] && tree_is_current; then
		echo "$TREE"
		return
	fi
	need_cmds flock
	mkdir -p "$CACHE"
	lock_current_tree
	if [ "$print_tree" = 1 ]; then
		echo "$TREE"
		return
	fi
	exec 8>"$CACHE/lock.$flavor"
	lock_or_die 8 -x "the $flavor build lock $CACHE/lock.$flavor"
	SRC_TREE=$TREE
	if [ "$flavor" = stock ]; then
		prepare_stock_tree
		# The stock tree is a separate worktree: the series may change now.
		flock -u 9
	fi
	OUT="$CACHE/build/$flavor"
	mkdir -p "$OUT"
	hash=$(inputs_hash)
	stamp="$OUT/sigmig-inputs.sha256"
	if [ "$force" = 0 ] && [ -f "$OUT/arch/x86/boot/bzImage" ] &&
	   [ "$(cat "$stamp" 2>/dev/null)" = "$hash" ]; then
		log "cached bzImage matches the inputs ($flavor, ${hash:0:12})"
	else
		rm -f "$stamp"
		on_exit stop_jobs
		configure
		build
		echo "$hash" >"$stamp"
	fi
	publish
	log "done ($flavor)"
	echo "$OUT/arch/x86/boot/bzImage"
}

main "$@"
