#!/usr/bin/env bash
# Scan a guest serial console log for kernel splats: BUG, WARNING, KASAN,
# UBSAN, lockdep reports, list corruption, Oops, panics, soft/hard lockups,
# RCU stalls, hung tasks.  Prints every report (from its first line to the
# end-of-trace marker or a bounded number of lines) and fails if any.
set -euo pipefail

PROG=scan-console
# shellcheck source=orchestrate/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
max_lines=80

usage_text() {
	cat <<'EOF'
Usage: scan-console.sh LOG [--max-lines N]
  Prints every kernel splat of a guest serial console log (BUG, WARNING,
  KASAN, UBSAN, lockdep, list corruption, Oops, panic, lockups, RCU stalls,
  hung tasks), each up to its end-of-trace marker or N lines (default 80).
  exit 0: no splat; 1: splat(s) found (reports on stdout); 2: usage/IO error
EOF
}

# Lines that open a report: messages of the kernel's own checkers (lib/,
# mm/kasan/, kernel/locking/lockdep.c, lib/list_debug.c, dumpstack.c).
# Generic words must start the line (after the optional printk timestamp
# and caller id) so that test output mentioning them does not count.
splat_re() {
	local anchored=(
		'BUG: ' 'WARNING: ' 'Oops: ' 'Call Trace:' 'kernel BUG at '
		'general protection fault' 'Unable to handle kernel'
		'INFO: task .* blocked for more than' 'watchdog: BUG: '
		'rcu: INFO: rcu_.* detected stall'
	)
	local anywhere=(
		'KASAN: ' 'UBSAN: ' 'Kernel panic - ' 'list_add corruption'
		'list_del corruption' 'possible circular locking dependency'
		'inconsistent lock state' 'possible recursive locking'
		'possible irq lock inversion' 'suspicious RCU usage'
		'stack-protector: ' 'BUG kmalloc-' 'Object padding overwritten'
		'Redzone overwritten' 'Poison overwritten'
	)
	local IFS='|'
	printf '^(\\[ *[0-9]+\\.[0-9]+\\] )?(\\[ *[CT][0-9]+\\] )?(%s)|%s' \
		"${anchored[*]}" "${anywhere[*]}"
}

main() {
	local log="" found
	while [ $# -gt 0 ]; do
		case "$1" in
		--max-lines) max_lines=${2:?}; shift 2 ;;
		-h|--help) show_help ;;
		-*) usage ;;
		*) log=$1; shift ;;
		esac
	done
	[ -n "$log" ] || usage
	[ -r "$log" ] || die "cannot read $log" 2

	# Serial logs carry \r and ANSI escapes; the kernel may prefix
	# "[    1.234567]" timestamps and "[  T123]" caller ids.
	# The regex goes through the environment: awk -v would eat backslashes.
	found=$(tr -d '\r' <"$log" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g' |
		SPLAT_RE="$(splat_re)" awk -v max="$max_lines" '
		BEGIN { re = ENVIRON["SPLAT_RE"] }
		function flush() {
			if (n) {
				reports++
				printf "---- splat %d (console line %d) ----\n", reports, start
				for (i = 1; i <= n; i++)
					print buf[i]
			}
			n = 0
		}
		{
			line = $0
			if (!n && line ~ re) {
				# "Call Trace:" alone opens a report only when no
				# other header came first (e.g. a bare dump_stack).
				start = NR
			}
			if (n || line ~ re) {
				buf[++n] = line
				if (line ~ /---\[ end (trace|Kernel panic)/ || n >= max)
					flush()
			}
		}
		END { flush(); if (reports) printf "scan-console: %d splat(s)\n", reports }')
	if [ -n "$found" ]; then
		echo "$found"
		return 1
	fi
	echo "scan-console: no kernel splat in $log"
}

main "$@"
