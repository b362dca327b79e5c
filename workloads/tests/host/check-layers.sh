#!/usr/bin/env bash
# libsigmig's files call each other in one direction only. From the objects
# (nm: what each defines, what each needs) this builds the file-level call
# graph, prints it in layer order (tsort), and fails on any cycle: a file
# that calls a file that, directly or not, calls it back. Calls through
# function pointers (a thread serving the mailbox runs its caller's
# command) are not edges, by design: that is how a lower layer runs code
# of a higher one without depending on it. Also fails if an object calls
# exit(), _exit() or abort(): the library returns errors, the program
# decides to end. TAP on stdout.
# Usage: check-layers.sh OBJECT...
set -euo pipefail
NM=${NM:-nm}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for o in "$@"; do
	f=$(basename "$o" .o)
	"$NM" --defined-only -g "$o" | awk -v f="$f" 'NF == 3 { print $3, f }'
done | sort -u >"$tmp/defs"

# "caller callee" for every undefined symbol another object defines
for o in "$@"; do
	f=$(basename "$o" .o)
	"$NM" -u "$o" | awk '{ print $NF }' | sort -u |
		join - "$tmp/defs" | awk -v f="$f" '$2 != f { print f, $2 }'
done | sort -u >"$tmp/edges"

# shellcheck source=orchestrate/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../../orchestrate/lib/tap.sh"

echo "TAP version 13"
awk '{ calls[$1] = calls[$1] " " $2 } END { for (f in calls) print "# " f " ->" calls[f] }' \
	"$tmp/edges" | sort
status=0
# every file appears, so that tsort lists the ones without edges too
{ cat "$tmp/edges"; for o in "$@"; do b=$(basename "$o" .o); echo "$b $b"; done; } |
	tsort >"$tmp/order" 2>"$tmp/loops" || status=$?
if [ "$status" = 0 ]; then
	tap 0 "no call cycle between libsigmig's files; top to bottom: $(tr '\n' ' ' <"$tmp/order" | sed 's/ $//')"
else
	sed 's/^/# /' "$tmp/loops"
	tap 1 "libsigmig's files call each other in a cycle (above)"
fi

exits=$(for o in "$@"; do
	"$NM" -u "$o" | awk -v f="$(basename "$o")" \
		'$NF ~ /^(exit|_exit|_Exit|abort|quick_exit)$/ { print f ": " $NF }'
done)
status=0
[ -z "$exits" ] || status=1
tap "$status" "no libsigmig object ends the process${exits:+: $(echo "$exits" | tr '\n' ' ')}"
tap_done
