#!/usr/bin/env bash
# Host-side run of a guest test (default: the API test) against sigstorm,
# with the endpoints that need the patched kernel expected to answer 503;
# then every reply the test received is checked against docs/openapi.yaml,
# and (with the API test) the checker itself against drifted replies.
# Usage: host-api.sh AGENT_BINARY [guest/NN-test.sh]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AGENT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
WL=$HERE/../workloads/build
# Debian's interpreter: python3-jsonschema and python3-yaml are its packages.
CHECK=(/usr/bin/python3 "$HERE/../orchestrate/lib/openapi_check.py")
# shellcheck source=orchestrate/lib/ports.sh
. "$HERE/../orchestrate/lib/ports.sh"
bindir=$(mktemp -d /tmp/agent-bin.XXXXXX)
replies=$(mktemp -d /tmp/agent-replies.XXXXXX)
trap 'rm -rf "$bindir" "$replies"' EXIT
# Built before they are linked: a clean clone has none of them yet.
make -s -C "$HERE/../workloads" all >/dev/null
for p in sigstorm sigsend sigmig-ctl; do
	[ -x "$WL/$p" ] || { echo "host-api: $WL/$p was not built" >&2; exit 1; }
	ln -s "$WL/$p" "$bindir/$p"
done
test=${2:-guest/10-api.sh}
rc=0
AGENT_BIN=$AGENT BIN_DIR=$bindir LOADGEN=$HERE/build/loadgen REPLY_DIR=$replies \
	PORT=${PORT:-$(free_port_base 2)} "$HERE/$test" || rc=$?
"${CHECK[@]}" records "$replies" || rc=1
if [ "$test" = guest/10-api.sh ]; then
	"$HERE/tests/openapi-drift.sh" || rc=1
fi
exit "$rc"
