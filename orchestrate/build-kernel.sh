#!/usr/bin/env bash
# Build the sigmig guest kernel: Debian linux-source-6.1 + kernel/patches/series
# + tinyconfig + kernel/config fragments.  The source tree and the per-flavor
# out-of-tree build directories live in a cache outside the repository so that
# rebuilds are incremental; a build is skipped entirely when the hash of every
# input matches the one recorded next to the cached bzImage.
#
# Usage: build-kernel.sh [--flavor default|debug|stock] [--print-tree] [--force]
#   stdout: the path of the bzImage (or, with --print-tree, of the patched
#   source tree, which is prepared but not built).  Progress goes to stderr.
#   --flavor stock: the same configuration without the patch series (a git
#   worktree of sigmig-pristine), for guests that lack the interface.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SELF="$REPO/orchestrate/build-kernel.sh"
TARBALL=/usr/src/linux-source-6.1.tar.xz
CACHE=${SIGMIG_CACHE:-/var/cache/sigmig}
TREE="$CACHE/src/linux-source-6.1"
STOCK_TREE="$CACHE/src/linux-source-6.1-stock"
PATCH_DIR="$REPO/kernel/patches"
SERIES="$PATCH_DIR/series"
CONFIG_DIR="$REPO/kernel/config"
LOCK_TIMEOUT=${SIGMIG_LOCK_TIMEOUT:-5400}
START=$SECONDS

flavor=default
print_tree=0
force=0

log() { printf '[build-kernel %4ds] %s\n' $((SECONDS - START)) "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

usage() {
	sed -n '9,12p' "$SELF" | sed 's/^# \{0,1\}//' >&2
	exit "${1:-2}"
}

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--flavor) flavor=${2:?--flavor needs a value}; shift 2 ;;
		--flavor=*) flavor=${1#*=}; shift ;;
		--print-tree) print_tree=1; shift ;;
		--force) force=1; shift ;;
		-h|--help) usage 0 ;;
		*) usage ;;
		esac
	done
	case "$flavor" in
	default|debug|stock) ;;
	*) die "unknown flavor '$flavor' (default|debug|stock)" ;;
	esac
}

ensure_tarball() {
	[ -f "$TARBALL" ] && return
	log "installing linux-source-6.1 (tarball missing)"
	DEBIAN_FRONTEND=noninteractive timeout 1800 apt-get install -y linux-source-6.1 >&2 ||
		{ timeout 600 apt-get update >&2 &&
		  DEBIAN_FRONTEND=noninteractive timeout 1800 apt-get install -y linux-source-6.1 >&2; }
	[ -f "$TARBALL" ] || die "$TARBALL still missing after apt-get"
}

# Patch files listed in the series, in order (quilt syntax: comments, blanks,
# and optional "-p1" style options after the name are ignored).
series_patches() {
	[ -f "$SERIES" ] || return 0
	sed -e 's/#.*//' -e 's/[[:space:]].*//' "$SERIES" | grep -v '^$' || true
}

# A cover letter has no diff; git apply would reject it as "no valid patches".
patch_has_diff() {
	grep -qE '^(diff --git |--- [^ ])' "$1"
}

patches_hash() {
	{
		[ -f "$SERIES" ] && cat "$SERIES"
		local p
		for p in $(series_patches); do
			[ -f "$PATCH_DIR/$p" ] || die "series lists missing patch $p"
			printf '%s\n' "$p"
			cat "$PATCH_DIR/$p"
		done
	} | sha256sum | cut -d' ' -f1
}

fragments() {
	echo "$CONFIG_DIR/guest.config"
	if [ "$flavor" = debug ] && [ -f "$CONFIG_DIR/debug.config" ]; then
		echo "$CONFIG_DIR/debug.config"
	fi
}

git_tree() {
	git -C "$TREE" -c user.name=sigmig -c user.email=sigmig@localhost \
		-c advice.detachedHead=false "$@"
}

extract_tree() {
	local sha=$1
	log "extracting $TARBALL into $CACHE/src (about a minute)"
	rm -rf "$TREE" "$CACHE/src/.extract"
	mkdir -p "$CACHE/src/.extract"
	tar -xJf "$TARBALL" -C "$CACHE/src/.extract"
	mv "$CACHE/src/.extract/linux-source-6.1" "$TREE"
	rmdir "$CACHE/src/.extract"
	log "recording the pristine tree in git (tag sigmig-pristine)"
	# The tarball's own .gitignore ignores "/*": force-add everything.
	git_tree init -q
	git_tree add -f -A .
	git_tree commit -q -m "Debian linux-source-6.1 (tarball sha256 $sha)"
	git_tree tag -f sigmig-pristine >/dev/null
	echo "$sha" >"$CACHE/src/tarball.sha256"
	rm -f "$CACHE/src/applied.sha256"
}

apply_series() {
	local p n=0
	log "resetting the tree to sigmig-pristine"
	git_tree checkout -q -f sigmig-pristine
	git_tree clean -q -fdx
	for p in $(series_patches); do
		if ! patch_has_diff "$PATCH_DIR/$p"; then
			log "  skip $p (no diff: cover letter)"
			continue
		fi
		log "  apply $p"
		# git apply refuses any fuzz: context must match exactly.
		git_tree apply --index "$PATCH_DIR/$p" ||
			die "patch $p does not apply cleanly to linux-source-6.1"
		git_tree commit -q --allow-empty -m "sigmig: $p"
		n=$((n + 1))
	done
	log "applied $n patch(es)"
}

prepare_tree() {
	local tar_sha patch_sha
	ensure_tarball
	mkdir -p "$CACHE/src"
	tar_sha=$(sha256sum "$TARBALL" | cut -d' ' -f1)
	if [ ! -d "$TREE/.git" ] || [ "$(cat "$CACHE/src/tarball.sha256" 2>/dev/null)" != "$tar_sha" ]; then
		extract_tree "$tar_sha"
	fi
	patch_sha=$(patches_hash)
	if [ "$(cat "$CACHE/src/applied.sha256" 2>/dev/null)" != "$patch_sha" ]; then
		log "patch series changed: re-applying"
		rm -f "$CACHE/src/applied.sha256"
		apply_series
		echo "$patch_sha" >"$CACHE/src/applied.sha256"
	else
		log "tree up to date with kernel/patches/series"
	fi
	TARBALL_SHA=$tar_sha
	PATCHES_SHA=$patch_sha
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
	# shellcheck disable=SC2046
	"$REPO/orchestrate/check-kconfig.sh" "$OUT/.config" $(fragments) >&2
}

object_count() {
	find "$OUT" -name '*.o' 2>/dev/null | wc -l
}

# A cold build is silent for minutes under "make -s": report the number of
# objects built so far against the last complete build (or a typical one).
progress_ticker() {
	local expected=$1
	while sleep 30; do
		log "  ... $(object_count) of ~$expected objects built"
	done
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

# The unpatched tree for --flavor stock: a worktree of the pristine tag, so
# the shared patched tree is never switched away from the series.
prepare_stock_tree() {
	# A re-extracted shared tree orphans the old worktree: recreate it then.
	if ! git -C "$STOCK_TREE" rev-parse -q --verify sigmig-pristine >/dev/null 2>&1; then
		log "checking out the unpatched tree in $STOCK_TREE (about a minute)"
		rm -rf "$STOCK_TREE"
		git_tree worktree prune
		git_tree worktree add -q --detach "$STOCK_TREE" sigmig-pristine
	fi
	git -C "$STOCK_TREE" checkout -q -f --detach sigmig-pristine
	SRC_TREE=$STOCK_TREE
	PATCHES_SHA=none
}

# --print-tree without waiting for a running build when the tree is current.
tree_is_current() {
	[ -f "$TARBALL" ] && [ -d "$TREE/.git" ] || return 1
	[ "$(cat "$CACHE/src/applied.sha256" 2>/dev/null)" = "$(patches_hash)" ] || return 1
	[ "$(cat "$CACHE/src/tarball.sha256" 2>/dev/null)" = \
	  "$(sha256sum "$TARBALL" | cut -d' ' -f1)" ]
}

# Locks: $CACHE/lock guards the shared patched tree, held shared by every
# build compiling from it and exclusive only while the series is re-applied;
# $CACHE/lock.<flavor> serializes builds of one flavor.  So a cached default
# build never waits for a 15-minute debug build.
lock_or_die() {
	local fd=$1 mode=$2 what=$3
	flock -n "$mode" "$fd" && return
	log "waiting for $what (another build is using it)"
	flock -w "$LOCK_TIMEOUT" "$mode" "$fd" || die "$what held for over ${LOCK_TIMEOUT}s"
}

lock_current_tree() {
	exec 9>"$CACHE/lock"
	lock_or_die 9 -s "the kernel tree lock $CACHE/lock"
	tree_is_current && { prepare_tree_quiet; return; }
	flock -u 9
	lock_or_die 9 -x "the kernel tree lock $CACHE/lock"
	prepare_tree
	flock -s 9
}

# prepare_tree's variables for a tree known to be current.
prepare_tree_quiet() {
	TARBALL_SHA=$(cat "$CACHE/src/tarball.sha256")
	PATCHES_SHA=$(cat "$CACHE/src/applied.sha256")
	log "tree up to date with kernel/patches/series"
}

main() {
	local hash stamp
	parse_args "$@"
	if [ "$print_tree" = 1 ] && tree_is_current; then
		echo "$TREE"
		return
	fi
	command -v flock >/dev/null || die "flock (util-linux) is required"
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
		configure
		build
		echo "$hash" >"$stamp"
	fi
	publish
	log "done ($flavor)"
	echo "$OUT/arch/x86/boot/bzImage"
}

main "$@"
