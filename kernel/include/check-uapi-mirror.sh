#!/usr/bin/env bash
# The userspace mirror of the series' uapi, kernel/include/uapi/sigmig/
# signalfd.h, must declare exactly what kernel/patches/series adds to
# include/uapi/linux/signalfd.h: the same macros with the same values, the
# same declarations, nothing more, nothing less. Needs no kernel tree: the
# additions are read from the patches (hunks replayed in series order, so a
# later patch that changes or drops a line wins), and both texts are
# compared as the preprocessor sees them (-dM for macros, -P for the rest),
# which ignores comments and spacing. TAP on stdout.
#
# Usage: check-uapi-mirror.sh [MIRROR]   (another file: the self-test)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PATCH_DIR=${PATCH_DIR:-$REPO/kernel/patches}
MIRROR=${1:-$HERE/uapi/sigmig/signalfd.h}
UAPI=include/uapi/linux/signalfd.h
CPP=${CPP:-cpp}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

series_patches() {
	sed -e 's/#.*//' -e 's/[[:space:]].*//' "$PATCH_DIR/series" | grep -v '^$'
}

# "+text" / "-text" for every added / removed line of $UAPI in one patch,
# hunk by hunk, counting the lines each hunk header announces (so the
# "-- " of the mail signature is never taken for a removal).
uapi_changes() {
	awk -v want="a/$UAPI" '
		/^diff --git / { in_file = ($3 == want); old = new = 0; next }
		!in_file { next }
		old == 0 && new == 0 && /^@@ / {
			split($2, o, ","); split($3, n, ",")
			old = (2 in o) ? o[2] : 1; new = (2 in n) ? n[2] : 1
			next
		}
		old == 0 && new == 0 { next }
		/^\+/ { print; new--; next }
		/^-/ { print; old--; next }
		{ old--; new-- }
	' "$1"
}

# The series' additions, in order: an added line that a later patch removes
# is dropped again; removals of upstream lines do not concern the mirror.
series_additions() {
	local p
	for p in $(series_patches); do
		uapi_changes "$PATCH_DIR/$p"
	done | awk '
		/^\+/ { line[++n] = substr($0, 2); next }
		/^-/ {
			gone = substr($0, 2)
			for (i = n; i > 0; i--)
				if (i in line && line[i] == gone) { delete line[i]; break }
		}
		END { for (i = 1; i <= n; i++) if (i in line) print line[i] }
	'
}

# Macros the text defines (builtins are the same on both sides) and what
# is left of it once preprocessed, spacing folded. #include lines go first:
# the uapi header names <linux/fcntl.h>, the mirror <fcntl.h>, and neither
# is part of the comparison.
macros() {
	grep -v '^[[:space:]]*#[[:space:]]*include' "$1" |
		"$CPP" -undef -nostdinc -dM -x c - | grep -v "^#define $2 *\$" | sort
}

declarations() {
	grep -v '^[[:space:]]*#[[:space:]]*include' "$1" |
		"$CPP" -undef -nostdinc -P -x c - | tr -s ' \t\n' ' ' | sed 's/^ //; s/ $//'
	echo
}

# shellcheck source=orchestrate/lib/tap.sh
. "$HERE/../../orchestrate/lib/tap.sh"
compare() {	# WHAT SERIES_FILE MIRROR_FILE
	local status=0
	if ! cmp -s "$2" "$3"; then
		status=1
		diff -u --label "series ($UAPI)" --label "mirror ($MIRROR)" "$2" "$3" |
			sed 's/^/# /' || true
	fi
	tap "$status" "$1"
}

main() {
	local guard names
	echo "TAP version 13"
	series_additions >"$tmp/series.h"
	[ -s "$tmp/series.h" ]
	tap $? "the series adds to $UAPI (patches parsed: $(series_patches | wc -l))"
	guard=$(sed -n 's/^#ifndef \([A-Z0-9_]*_H\)$/\1/p' "$MIRROR" | head -1)
	macros "$tmp/series.h" "" >"$tmp/series.macros"
	macros "$MIRROR" "$guard" >"$tmp/mirror.macros"
	names=$(sed -n 's/^#define \([A-Za-z0-9_]*\).*/\1/p' "$tmp/mirror.macros" |
		grep -v '^__' | tr '\n' ' ')
	compare "mirror macros are the series' uapi macros: ${names% }" \
		"$tmp/series.macros" "$tmp/mirror.macros"
	declarations "$tmp/series.h" >"$tmp/series.decls"
	declarations "$MIRROR" >"$tmp/mirror.decls"
	compare "mirror declarations (structs, types) are the series' uapi ones" \
		"$tmp/series.decls" "$tmp/mirror.decls"
	tap_done
}

main
