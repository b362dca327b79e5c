#!/usr/bin/env bash
# Build the guest initramfs without root: busybox-static, /init, the guest
# test runner, and each component's `make install-guest DESTDIR=<root>`
# output, plus the shared libraries and loader of dynamically linked
# binaries.  The archive is written from a gen_init_cpio file list, so every
# file is owned by 0:0 and /dev/console exists without mknod.
set -euo pipefail

PROG=build-initramfs
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
REPO=$SIGMIG_REPO
WORK="$REPO/build/initramfs"
ROOT=""	# a private staging directory: several builds may run at once
output="$WORK/initramfs.cpio.gz"
# kernel/stress has its own Makefile; once kernel/Makefile recurses into it,
# it must not be installed (and its tests listed) twice.
components="kernel kernel/stress workloads agent"
grep -qs 'stress' "$REPO/kernel/Makefile" && components="kernel workloads agent"
overlays=()
keep_going=0

usage_text() {
	cat <<'EOF'
Usage: build-initramfs.sh [--output FILE] [--components "kernel kernel/stress workloads agent"]
                          [--overlay DIR]   (copied over the root last; ad-hoc tests)
                          [--keep-going]    (a component whose install-guest fails is
                             left out and reported as "not ok" in <output>.failures)
  stdout: the path of the gzip-compressed cpio archive.  Progress on stderr.
  The components' Makefiles see SIGMIG_KERNEL_TREE (patched source tree,
  for selftests and uapi headers) in their environment.
EOF
}

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--output) output=${2:?}; shift 2 ;;
		--components) components=${2?}; shift 2 ;;
		--overlay) overlays+=("${2:?}"); shift 2 ;;
		--keep-going) keep_going=1; shift ;;
		-h|--help) show_help ;;
		*) usage ;;
		esac
	done
}

find_busybox() {
	local bb
	for bb in /bin/busybox /usr/bin/busybox; do
		if [ -x "$bb" ] && ! readelf -lW "$bb" | grep -q 'program interpreter'; then
			echo "$bb"
			return
		fi
	done
	die "static busybox not found: apt-get install busybox-static"
}

# Debian's merged-/usr layout, so that library paths ldd reports under /lib
# and /usr/lib both resolve.
make_skeleton() {
	mkdir -p "$ROOT"/{usr/bin,usr/sbin,usr/lib,usr/lib64,usr/lib32}
	mkdir -p "$ROOT"/{dev,proc,sys,tmp,run,root,etc,sigmig/bin,sigmig/tests,sigmig/bench}
	ln -s usr/bin "$ROOT/bin"
	ln -s usr/sbin "$ROOT/sbin"
	ln -s usr/lib "$ROOT/lib"
	ln -s usr/lib64 "$ROOT/lib64"
	ln -s usr/lib32 "$ROOT/lib32"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$ROOT/etc/passwd"
	printf 'root:x:0:\n' >"$ROOT/etc/group"
	printf '127.0.0.1 localhost\n10.99.0.1 guest-a\n10.99.0.2 guest-b\n' >"$ROOT/etc/hosts"
}

install_busybox() {
	local bb applet
	bb=$(find_busybox)
	cp "$bb" "$ROOT/usr/bin/busybox"
	for applet in $("$bb" --list-full); do
		applet=${applet#/}
		applet=${applet/#bin\//usr/bin/}
		applet=${applet/#sbin\//usr/sbin/}
		[ -e "$ROOT/$applet" ] && continue
		ln -s /usr/bin/busybox "$ROOT/$applet"
	done
}

# CRIU moves programs that do not link the runtime; its libraries come with
# the other dynamic dependencies.
install_checkpointer() {
	local criu=/usr/sbin/criu
	[ -x "$criu" ] || die "$criu is missing: 'make deps' installs Debian's criu"
	cp "$criu" "$ROOT/usr/sbin/criu"
	mkdir -p "$ROOT/var/lib/criu"
}

install_sigmig_files() {
	install -m 0755 "$REPO/orchestrate/guest/init" "$ROOT/init"
	install -m 0755 "$REPO/orchestrate/guest/run-tests" "$ROOT/sigmig/bin/run-tests"
}

# Ask make's database rather than "make -n", which also fails when the
# target exists but its prerequisites are broken.
has_install_guest() {
	{ make -C "$1" -qp 2>/dev/null || true; } | grep -q '^install-guest:'
}

install_components() {
	local c dir
	for c in $components; do
		dir="$REPO/$c"
		if [ ! -f "$dir/Makefile" ]; then
			say "  $c: no Makefile yet, skipped"
			continue
		fi
		if ! has_install_guest "$dir"; then
			warn "$c/Makefile has no install-guest target, skipped"
			continue
		fi
		say "  make -C $c install-guest"
		make -j"$(nproc)" -C "$dir" install-guest DESTDIR="$ROOT" >&2 && continue
		[ "$keep_going" = 1 ] || die "make -C $c install-guest failed"
		warn "make -C $c install-guest failed: $c is missing or incomplete in the initramfs"
		echo "not ok - make -C $c install-guest" >>"$output.failures"
	done
	[ ! -s "$output.failures" ] || warn "$(wc -l <"$output.failures") component(s) failed to install"
}

interpreter_of() {
	readelf -lW "$1" 2>/dev/null |
		sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p'
}

copy_host_file() {
	local src=$1
	[ -e "$ROOT$src" ] && return
	mkdir -p "$ROOT$(dirname "$src")"
	cp -L "$src" "$ROOT$src"
}

# ldd prints "name => /path (addr)" and "/path/ld.so (addr)".
copy_libraries_of() {
	local bin=$1 interp lib
	interp=$(interpreter_of "$bin")
	[ -n "$interp" ] || return 0
	copy_host_file "$interp"
	for lib in $(ldd "$bin" 2>/dev/null | grep -oE '/[^ ]+ \(0x' | sed 's/ (0x$//'); do
		copy_host_file "$lib"
	done
}

copy_dynamic_dependencies() {
	local f n=0
	while IFS= read -r -d '' f; do
		head -c4 "$f" 2>/dev/null | grep -q 'ELF' || continue
		[ -n "$(interpreter_of "$f")" ] || continue
		copy_libraries_of "$f"
		n=$((n + 1))
	done < <(find "$ROOT/sigmig" "$ROOT/usr" -type f -print0)
	say "  copied libraries for $n dynamically linked binaries"
}

# gen_init_cpio file list: everything owned by root.
write_file_list() {
	local list=$1 path rel mode
	(cd "$ROOT" && find . -mindepth 1 | LC_ALL=C sort) | while IFS= read -r rel; do
		path="$ROOT/${rel#./}"
		rel=/${rel#./}
		[ "$rel" = /dev/console ] || [ "$rel" = /dev/null ] && continue
		mode=$(stat -c '%a' "$path")
		if [ -L "$path" ]; then
			echo "slink $rel $(readlink "$path") 0777 0 0"
		elif [ -d "$path" ]; then
			echo "dir $rel $mode 0 0"
		elif [ -f "$path" ]; then
			echo "file $rel $path $mode 0 0"
		fi
	done >"$list"
	# After "dir /dev": the unpacker needs the parent directory first.
	echo "nod /dev/console 0600 0 0 c 5 1" >>"$list"
	echo "nod /dev/null 0666 0 0 c 1 3" >>"$list"
}

# The kernel tree's own gen_init_cpio (SIGMIG_KERNEL_TREE, set by main).
gen_init_cpio_tool() {
	local tool="$WORK/gen_init_cpio" src="$SIGMIG_KERNEL_TREE/usr/gen_init_cpio.c"
	if [ ! -x "$tool" ] || [ "$src" -nt "$tool" ]; then
		cc -O2 -o "$tool.$$" "$src"
		mv -f "$tool.$$" "$tool"
	fi
	echo "$tool"
}

main() {
	local tree tool dir
	parse_args "$@"
	mkdir -p "$WORK" "$(dirname "$output")"
	rm -f "$output.failures"
	tree=$("$REPO/orchestrate/build-kernel.sh" --print-tree)
	export SIGMIG_KERNEL_TREE="$tree"
	ROOT=$(mktemp -d "$WORK/root.XXXXXX")
	on_exit rm -rf "$ROOT" "$ROOT.list" "$output.tmp.$$"
	say "assembling $ROOT"
	make_skeleton
	install_busybox
	install_checkpointer
	install_sigmig_files
	install_components
	for dir in "${overlays[@]}"; do
		say "  overlay $dir"
		cp -a "$dir/." "$ROOT/"
	done
	copy_dynamic_dependencies
	tool=$(gen_init_cpio_tool)
	write_file_list "$ROOT.list"
	"$tool" -t 0 "$ROOT.list" | gzip -6 -n >"$output.tmp.$$"
	mv -f "$output.tmp.$$" "$output"
	say "wrote $output ($(du -h "$output" | cut -f1), $(wc -l <"$ROOT.list") entries)"
	echo "$output"
}

main "$@"
