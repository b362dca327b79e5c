#!/usr/bin/env bash
# Fail unless every option of the given Kconfig fragments has exactly the
# fragment's value in the final .config (Kconfig silently drops options whose
# dependencies are off).  Names every mismatch, not just the first.  As in
# the merged configuration, a later fragment's value overrides an earlier's.
#
# Usage: check-kconfig.sh <.config> <fragment>...
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 <.config> <fragment>..." >&2; exit 2; }
dotconfig=$1
shift

# Print "NAME=value" for each option a file sets ("n" for "is not set").
options_of() {
	sed -n -e 's/^\(CONFIG_[A-Za-z0-9_]*\)=\(.*\)$/\1=\2/p' \
	       -e 's/^# \(CONFIG_[A-Za-z0-9_]*\) is not set$/\1=n/p' "$1"
}

declare -A final
while IFS='=' read -r name value; do
	final[$name]=$value
done < <(options_of "$dotconfig")

declare -A wanted wanted_by
for fragment in "$@"; do
	while IFS='=' read -r name want; do
		wanted[$name]=$want
		wanted_by[$name]=$(basename "$fragment")
	done < <(options_of "$fragment")
done

bad=0
for name in "${!wanted[@]}"; do
	want=${wanted[$name]}
	have=${final[$name]:-n}
	[ "$have" = "$want" ] && continue
	[ "$have" = n ] && have="it not set"
	[ "$want" = n ] && want="n (not set)"
	echo "check-kconfig: ${wanted_by[$name]}: $name=$want but the final .config has $have" >&2
	bad=$((bad + 1))
done
if [ "$bad" -gt 0 ]; then
	echo "check-kconfig: $bad fragment option(s) missing from $dotconfig (a dependency is off?)" >&2
	exit 1
fi
echo "check-kconfig: all options of $* present" >&2
