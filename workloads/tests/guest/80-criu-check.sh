#!/bin/sh
# CRIU is in the guest and the guest kernel has everything it checks for
# (kernel/config/checkpoint.config): `criu check` says "Looks good.".
cd "$(dirname "$0")" && . ./lib.sh
WORK=/tmp/wl-criu-check
rm -rf "$WORK" && mkdir -p "$WORK"

command -v criu >/dev/null 2>&1
ok $? "criu is installed in the guest ($(criu --version 2>/dev/null | head -n 1))"
criu check >"$WORK/check" 2>&1
rc=$?
grep -q 'Looks good' "$WORK/check"
ok $(( rc | $? )) "criu check: rc=$rc, Looks good"
[ "$rc" -eq 0 ] || while read -r line; do note "$line"; done <"$WORK/check"
finish
