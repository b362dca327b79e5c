# shellcheck shell=bash
# shellcheck disable=SC2034 # TARBALL_SHA, PATCHES_SHA and SRC_TREE are for build-kernel.sh
# The patched kernel source tree that every build of every checkout shares:
# Debian's linux-source-6.1 extracted once into $CACHE/src as a git tree
# (tag sigmig-pristine), kernel/patches/series re-applied only when the
# series changes, and the locks that keep builds from switching the tree
# under each other.  Sourced by build-kernel.sh (after lib/common.sh);
# check-patches.sh uses the series helpers only.

CACHE=${SIGMIG_CACHE:-/var/cache/sigmig}
TARBALL=/usr/src/linux-source-6.1.tar.xz
TREE="$CACHE/src/linux-source-6.1"
STOCK_TREE="$CACHE/src/linux-source-6.1-stock"
PATCH_DIR="$SIGMIG_REPO/kernel/patches"
SERIES="$PATCH_DIR/series"
LOCK_TIMEOUT=${SIGMIG_LOCK_TIMEOUT:-5400}

ensure_tarball() {
	[ -f "$TARBALL" ] && return
	say "installing linux-source-6.1 (tarball missing)"
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

git_tree() {
	git -C "$TREE" -c user.name=sigmig -c user.email=sigmig@localhost \
		-c advice.detachedHead=false "$@"
}

extract_tree() {
	local sha=$1
	say "extracting $TARBALL into $CACHE/src (about a minute)"
	rm -rf "$TREE" "$CACHE/src/.extract"
	mkdir -p "$CACHE/src/.extract"
	tar -xJf "$TARBALL" -C "$CACHE/src/.extract"
	mv "$CACHE/src/.extract/linux-source-6.1" "$TREE"
	rmdir "$CACHE/src/.extract"
	say "recording the pristine tree in git (tag sigmig-pristine)"
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
	say "resetting the tree to sigmig-pristine"
	git_tree checkout -q -f sigmig-pristine
	git_tree clean -q -fdx
	for p in $(series_patches); do
		if ! patch_has_diff "$PATCH_DIR/$p"; then
			say "  skip $p (no diff: cover letter)"
			continue
		fi
		say "  apply $p"
		# git apply refuses any fuzz: context must match exactly.
		git_tree apply --index "$PATCH_DIR/$p" ||
			die "patch $p does not apply cleanly to linux-source-6.1"
		git_tree commit -q --allow-empty -m "sigmig: $p"
		n=$((n + 1))
	done
	say "applied $n patch(es)"
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
		say "patch series changed: re-applying"
		rm -f "$CACHE/src/applied.sha256"
		apply_series
		echo "$patch_sha" >"$CACHE/src/applied.sha256"
	else
		say "tree up to date with kernel/patches/series"
	fi
	TARBALL_SHA=$tar_sha
	PATCHES_SHA=$patch_sha
}

# prepare_tree's variables for a tree known to be current.
prepare_tree_quiet() {
	TARBALL_SHA=$(cat "$CACHE/src/tarball.sha256")
	PATCHES_SHA=$(cat "$CACHE/src/applied.sha256")
	say "tree up to date with kernel/patches/series"
}

# --print-tree without waiting for a running build when the tree is current.
tree_is_current() {
	[ -f "$TARBALL" ] && [ -d "$TREE/.git" ] || return 1
	[ "$(cat "$CACHE/src/applied.sha256" 2>/dev/null)" = "$(patches_hash)" ] || return 1
	[ "$(cat "$CACHE/src/tarball.sha256" 2>/dev/null)" = \
	  "$(sha256sum "$TARBALL" | cut -d' ' -f1)" ]
}

# The unpatched tree for --flavor stock: a worktree of the pristine tag, so
# the shared patched tree is never switched away from the series.
prepare_stock_tree() {
	# A re-extracted shared tree orphans the old worktree: recreate it then.
	if ! git -C "$STOCK_TREE" rev-parse -q --verify sigmig-pristine >/dev/null 2>&1; then
		say "checking out the unpatched tree in $STOCK_TREE (about a minute)"
		rm -rf "$STOCK_TREE"
		git_tree worktree prune
		git_tree worktree add -q --detach "$STOCK_TREE" sigmig-pristine
	fi
	git -C "$STOCK_TREE" checkout -q -f --detach sigmig-pristine
	SRC_TREE=$STOCK_TREE
	PATCHES_SHA=none
}

# Locks: $CACHE/lock guards the shared patched tree, held shared by every
# build compiling from it and exclusive only while the series is re-applied;
# $CACHE/lock.<flavor> serializes builds of one flavor.  So a cached default
# build never waits for a 15-minute debug build.
lock_or_die() {
	local fd=$1 mode=$2 what=$3
	flock -n "$mode" "$fd" && return
	say "waiting for $what (another build is using it)"
	flock -w "$LOCK_TIMEOUT" "$mode" "$fd" || die "$what held for over ${LOCK_TIMEOUT}s"
}

# Leaves fd 9 holding $CACHE/lock shared, with the tree current.
lock_current_tree() {
	exec 9>"$CACHE/lock"
	lock_or_die 9 -s "the kernel tree lock $CACHE/lock"
	tree_is_current && { prepare_tree_quiet; return; }
	flock -u 9
	lock_or_die 9 -x "the kernel tree lock $CACHE/lock"
	prepare_tree
	flock -s 9
}
