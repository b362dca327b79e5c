#!/bin/sh
# The round trip of 10-checkpoint-roundtrip.sh with the i386 build of
# sigstorm: the runtime peeks and requeues the 128-byte compat siginfo.
cd "$(dirname "$0")" || exit 1
if ! command -v sigstorm32 >/dev/null 2>&1 && [ ! -x /sigmig/bin/sigstorm32 ]; then
	echo "ok 1 # SKIP sigstorm32 not built (no -m32 toolchain)"
	echo "1..1"
	exit 0
fi
STORM=sigstorm32 exec ./10-checkpoint-roundtrip.sh
