#!/usr/bin/env bash
# HTTPS on both sides of the agent, on the host (TAP): the server through
# libmicrohttpd's TLS with a certificate made for the run, the client
# (httpc, libcurl) verified against the run's CA and refused with another;
# then mutual TLS (--tls-client-ca): client certificates asked and checked.
# Usage: tls.sh AGENT_BINARY TEST_HTTPC_BINARY
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AGENT=$1
TEST_HTTPC=$2
# shellcheck source=orchestrate/lib/tap.sh
. "$HERE/../orchestrate/lib/tap.sh"
# shellcheck source=orchestrate/lib/tls.sh
. "$HERE/../orchestrate/lib/tls.sh"
# shellcheck source=orchestrate/lib/ports.sh
. "$HERE/../orchestrate/lib/ports.sh"
work=$(mktemp -d /tmp/agent-tls.XXXXXX)
agent_pid=""
cleanup() {
	[ -z "$agent_pid" ] || kill "$agent_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

make_pki "$work/pki" 127.0.0.1
tap $? "a CA and an agent certificate for 127.0.0.1 made at run time"
pki=$work/pki
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token"
port=$(free_port_base 1)
agent=("$AGENT" --listen "127.0.0.1:$port" --token-file "$work/token"
	--state-dir "$work/state" --bin-dir "$work")

# Options that cannot work are refused at startup, with the reason.
refused() {	# DESCRIPTION WANT_TEXT OPTIONS...
	local what=$1 want=$2 out rc=0
	shift 2
	out=$(timeout 10 "${agent[@]}" "$@" 2>&1) || rc=$?
	[ "$rc" != 0 ] && grep -q -- "$want" <<<"$out"
	tap_output $? "$what (exit $rc: $(head -n 1 <<<"$out" | cut -c1-100))" "$out"
}
refused "a certificate without its key is refused" "go together" --tls-cert "$pki/agent.pem"
refused "a key that is not PEM is refused" "not a PEM file" --tls-cert "$pki/agent.pem" \
	--tls-key "$work/token"
refused "a missing certificate file is refused" "No such file" --tls-cert "$work/none.pem" \
	--tls-key "$pki/agent.key"
refused "a key that does not match the certificate: the agent does not start" \
	"cannot listen" --tls-cert "$pki/agent.pem" --tls-key "$pki/other-ca.pem"

"${agent[@]}" --tls-cert "$pki/agent.pem" --tls-key "$pki/agent.key" >>"$work/agent.log" 2>&1 &
agent_pid=$!
url=https://127.0.0.1:$port
for _ in $(seq 1 100); do
	curl -sf -m 2 --cacert "$pki/ca.pem" -o /dev/null "$url/v1/health" && break
	sleep 0.1
done
code=$(curl -s -m 5 --cacert "$pki/ca.pem" -o /dev/null -w '%{http_code}' "$url/v1/health")
[ "$code" = 200 ]
tap $? "HTTPS, verified against the run's CA: /v1/health answers $code"
rc=0
curl -s -m 5 -o /dev/null "$url/v1/health" || rc=$?
[ "$rc" = 60 ]
tap $? "a client that does not trust the CA refuses the agent (curl exit $rc, want 60)"
rc=0
curl -s -m 5 --cacert "$pki/other-ca.pem" -o /dev/null "$url/v1/health" || rc=$?
[ "$rc" = 60 ]
tap $? "so does one that trusts another CA (curl exit $rc)"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/health" || true)
[ "$code" != 200 ]
tap $? "plain HTTP to the HTTPS port gets no answer (HTTP ${code:-none})"
code=$(curl -s -m 5 --cacert "$pki/ca.pem" -o /dev/null -w '%{http_code}' \
	-X POST -H 'Content-Type: application/json' -d '{}' "$url/v1/workloads")
[ "$code" = 401 ]
tap $? "TLS does not replace the token: a POST without it is 401 ($code)"
grep -q "listening on https://127.0.0.1:$port" "$work/agent.log"
tap $? "the agent says it listens on https"

"$TEST_HTTPC" --tls "$url" "$pki/ca.pem" "$pki/other-ca.pem" >"$work/httpc.tap" 2>&1
rc=$?
tail -n 4 "$work/httpc.tap" | head -n 3 | diag
tap_output "$rc" "the agent's own client: HTTPS to the agent verified with the CA, refused with another, no status over plain HTTP" "$(cat "$work/httpc.tap")"

stop_agent() {	# LOG
	local rc=0
	kill -TERM "$agent_pid"
	wait "$agent_pid" || rc=$?
	agent_pid=""
	tap_output "$rc" "the agent stops cleanly (exit $rc; sanitizers would fail it)" "$(tail -n 20 "$1")"
}
stop_agent "$work/agent.log"

# Mutual TLS: --tls-client-ca asks every client for a certificate for
# clientAuth signed by those CAs, and refuses any request without one.
refused "--tls-client-ca without --tls-cert is refused" "needs --tls-cert" \
	--tls-client-ca "$pki/ca.pem"
(
	umask 077
	cd "$pki" && pki_ca stranger-ca sigmig-stranger-ca &&
		pki_leaf stranger stranger-ca sigmig-stranger "extendedKeyUsage=clientAuth"
) || tap 1 "a stranger's client certificate made at run time"
"${agent[@]}" --tls-cert "$pki/agent.pem" --tls-key "$pki/agent.key" \
	--tls-client-ca "$pki/ca.pem" >>"$work/agent-mtls.log" 2>&1 &
agent_pid=$!
for _ in $(seq 1 100); do
	curl -s -m 2 --cacert "$pki/ca.pem" -o /dev/null "$url/v1/health" && break
	sleep 0.1
done
# mtls_reply NAME CURL_ARGS...: the status and code of GET /v1/health, the
# reply checked against docs/openapi.yaml
mtls_reply() {
	local name=$1 status
	shift
	status=$(curl -s -m 5 --cacert "$pki/ca.pem" -D "$work/$name.h" -o "$work/$name.json" \
		-w '%{http_code}' "$@" "$url/v1/health")
	echo "$status $(jq -r '.code // .status' "$work/$name.json" 2>/dev/null)"
}
conforms() {	# NAME STATUS
	/usr/bin/python3 "$HERE/../orchestrate/lib/openapi_check.py" reply GET /v1/health "$2" \
		--body "$work/$1.json" --headers "$work/$1.h" >/dev/null 2>&1
}
got=$(mtls_reply none)
[ "$got" = "403 client_certificate_required" ] && conforms none 403
tap $? "mutual TLS, no client certificate: $got, as docs/openapi.yaml says ($(jq -r .detail "$work/none.json" 2>/dev/null))"
got=$(mtls_reply operator --cert "$pki/client.pem" --key "$pki/client.key")
[ "$got" = "200 ok" ] && conforms operator 200
tap $? "an operator's certificate from the CA: $got"
got=$(mtls_reply peer --cert "$pki/agent.pem" --key "$pki/agent.key")
[ "$got" = "200 ok" ]
tap $? "an agent's own certificate (serverAuth and clientAuth): $got"
got=$(mtls_reply stranger --cert "$pki/stranger.pem" --key "$pki/stranger.key")
[ "$got" = "403 client_certificate_required" ] && grep -q "issuer is unknown" "$work/stranger.json"
tap $? "a certificate another CA signed: $got ($(jq -r .detail "$work/stranger.json" 2>/dev/null))"
code=$(curl -s -m 5 --cacert "$pki/ca.pem" --cert "$pki/stranger.pem" --key "$pki/stranger.key" \
	-o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$work/token")" "$url/v1/workloads")
[ "$code" = 403 ]
tap $? "the token does not replace the certificate: GET /v1/workloads with it is $code"
"$TEST_HTTPC" --mtls "$url" "$pki/ca.pem" "$pki/agent.pem" "$pki/agent.key" >"$work/mtls.tap" 2>&1
rc=$?
tail -n 4 "$work/mtls.tap" | head -n 3 | diag
tap_output "$rc" "the agent's own client: refused without a certificate, answered with its own" "$(cat "$work/mtls.tap")"
stop_agent "$work/agent-mtls.log"
tap_done
