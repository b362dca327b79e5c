#!/usr/bin/env bash
# doc-examples.sh DOC WORKDIR: run every "$ " transcript of DOC, in order and
# in one shell, against the two agents of orchestrate/two-guests.sh (run as
# its COMMAND: SIGMIG_A_URL, SIGMIG_B_URL, SIGMIG_B_LINK_URL, SIGMIG_TOKEN,
# SIGMIG_CA_FILE), then compare each output with the documented one
# (lib/doc_examples.py check). Exit 1 if any example differs.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
doc=$(realpath "$1")
work=$2
[ -f "$doc" ] || { echo "doc-examples.sh: no document $1" >&2; exit 2; }
: "${SIGMIG_A_URL:?run under two-guests.sh}" "${SIGMIG_B_URL:?}" "${SIGMIG_B_LINK_URL:?}"
: "${SIGMIG_TOKEN:?}" "${SIGMIG_CA_FILE:?}"
rm -rf "$work"
mkdir -p "$work/out"
work=$(realpath "$work")

# The test's setup, in place of the document's (which names an installed
# host's files): the same variables, from the guests of this run.
umask 077
printf '%s\n' "$SIGMIG_TOKEN" >"$work/token-b"
printf 'Authorization: Bearer %s\n' "$SIGMIG_TOKEN" >"$work/auth"
{
	echo "A=$SIGMIG_A_URL"
	echo "B=$SIGMIG_B_URL"
	echo "B_FROM_A=$SIGMIG_B_LINK_URL"
	echo "TOKEN_B=$work/token-b"
	echo "export CURL_CA_BUNDLE=$SIGMIG_CA_FILE"
	echo "AUTH=$work/auth"
	echo "# --- the document's transcripts ---"
	"$HERE/doc_examples.py" script "$doc" "$work/out"
} >"$work/examples.sh"
(cd "$work" && timeout -k 10 600 bash examples.sh) || true
"$HERE/doc_examples.py" check "$doc" "$work/out"
