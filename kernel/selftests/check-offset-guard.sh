#!/usr/bin/env bash
# SFD_SHARED_QUEUE_OFFSET is 1 << 62: a 32-bit program built without
# _FILE_OFFSET_BITS=64 would pass pread() a truncated offset (a per-thread
# position, or 0, which dequeues). The uapi header makes such a use fail to
# compile; this checks that it does, and only there. TAP on stdout.
#
# Usage: check-offset-guard.sh   (CC, and INC: the directory with sigmig/)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CC=${CC:-gcc}
INC=${INC:-$HERE/../include}
SRC=$HERE/offset-guard.c

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=orchestrate/lib/tap.sh
. "$HERE/../../orchestrate/lib/tap.sh"

# compiles WANT DESCRIPTION CFLAGS...: WANT is "yes" or "no"
compiles() {
	local want=$1 what=$2 got=no st=0
	shift 2
	if "$CC" -Wall -Wextra -Werror -I"$INC" "$@" -c -o "$tmp/o.o" "$SRC" \
	   2>"$tmp/err"; then
		got=yes
	fi
	if [ "$got" != "$want" ]; then
		st=1
		sed 's/^/# /' "$tmp/err"
	fi
	tap "$st" "$what (compiles: $got)"
}

echo "TAP version 13"
if ! echo 'int main(void) { return 0; }' |
     "$CC" -m32 -x c -c -o "$tmp/probe.o" - 2>/dev/null; then
	tap_skip_all "$CC cannot build 32-bit objects (gcc-multilib)"
fi
compiles no "32-bit off_t: a pread() at SFD_SHARED_QUEUE_OFFSET + n is refused" -m32
# ... by the guard, not by some other error
st=0
grep -q 'negative' "$tmp/err" || st=1
tap "$st" "32-bit off_t: the refusal is the header's guard (negative array size)"
compiles yes "32-bit off_t: SFD_PER_THREAD_QUEUE_OFFSET still compiles" \
	-m32 -DPER_THREAD_ONLY
compiles yes "32-bit with _FILE_OFFSET_BITS=64: SFD_SHARED_QUEUE_OFFSET compiles" \
	-m32 -D_FILE_OFFSET_BITS=64
compiles yes "64-bit: SFD_SHARED_QUEUE_OFFSET compiles" -m64
tap_done
