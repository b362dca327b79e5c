# shellcheck shell=bash
# Certificates made at run time for the agents' HTTPS (sourced): a CA of
# the run's own and one server certificate it signs, valid for the given
# IP addresses. The demo and the tests use them; an operator brings their
# own (docs/security.md). Keys are private to the owner.

# make_pki DIR IP...: DIR/ca.pem, DIR/agent.pem and DIR/agent.key (the
# agent's certificate for every IP), DIR/other-ca.pem (a CA that signed
# nothing here: what a client must not trust). Prints openssl's errors only.
make_pki() {
	local dir=$1 san="" ip
	shift
	for ip in "$@"; do
		san+="${san:+,}IP:$ip"
	done
	mkdir -p "$dir"
	(
		umask 077
		cd "$dir" || exit 1
		pki_ca ca sigmig-run-ca && pki_ca other-ca sigmig-other-ca &&
			openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
				-keyout agent.key -out agent.csr -subj /CN=sigmig-agent 2>/dev/null &&
			printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" >agent.ext &&
			openssl x509 -req -in agent.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
				-days 7 -out agent.pem -extfile agent.ext 2>/dev/null &&
			rm -f agent.csr agent.ext ca.srl ca.key other-ca.key
	)
}

pki_ca() {	# NAME CN: NAME.pem and NAME.key, a self-signed CA
	openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-keyout "$1.key" -out "$1.pem" -days 7 -subj "/CN=$2" 2>/dev/null
}
