#!/usr/bin/env bash
# Host-side run of a guest test (default: the API test) against sigstorm,
# with the endpoints that need the patched kernel expected to answer 503.
# Usage: host-api.sh AGENT_BINARY [guest/NN-test.sh]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AGENT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
WL=$HERE/../workloads/build
bindir=$(mktemp -d /tmp/agent-bin.XXXXXX)
trap 'rm -rf "$bindir"' EXIT
# Built before they are linked: a clean clone has none of them yet.
make -s -C "$HERE/../workloads" all >/dev/null
for p in sigstorm sigsend sigmig-ctl; do
	[ -x "$WL/$p" ] || { echo "host-api: $WL/$p was not built" >&2; exit 1; }
	ln -s "$WL/$p" "$bindir/$p"
done
test=${2:-guest/10-api.sh}
AGENT_BIN=$AGENT BIN_DIR=$bindir LOADGEN=$HERE/build/loadgen \
	PORT=${PORT:-$((20000 + $$ % 20000))} "$HERE/$test"
