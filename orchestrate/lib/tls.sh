# shellcheck shell=bash
# Certificates made at run time for the agents' HTTPS (sourced): a CA of
# the run's own and one server certificate it signs, valid for the given
# IP addresses. The demo and the tests use them; an operator brings their
# own (docs/security.md). Keys are private to the owner.

# make_pki DIR IP...: DIR/ca.pem, DIR/agent.pem and DIR/agent.key (the
# agent's certificate for every IP, for serverAuth and clientAuth: it is
# also what an agent presents to a peer that asks for a client
# certificate), DIR/client.pem and DIR/client.key (an operator's, for
# clientAuth only), DIR/other-ca.pem (a CA that signed nothing here: what a
# client must not trust). Prints openssl's errors only.
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
			pki_leaf agent ca sigmig-agent "subjectAltName=$san" \
				"extendedKeyUsage=serverAuth,clientAuth" &&
			pki_leaf client ca sigmig-operator "extendedKeyUsage=clientAuth" &&
			rm -f ca.srl ca.key other-ca.key
	)
}

# pki_leaf NAME CA CN EXTENSION...: NAME.pem and NAME.key, signed by CA
# (CA.pem, CA.key), with these X.509v3 extensions; in the current directory
pki_leaf() {
	local name=$1 ca=$2 cn=$3
	shift 3
	openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-keyout "$name.key" -out "$name.csr" -subj "/CN=$cn" 2>/dev/null &&
		printf '%s\n' "$@" >"$name.ext" &&
		openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca.key" -CAcreateserial \
			-days 7 -out "$name.pem" -extfile "$name.ext" 2>/dev/null &&
		rm -f "$name.csr" "$name.ext"
}

pki_ca() {	# NAME CN: NAME.pem and NAME.key, a self-signed CA
	openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-keyout "$1.key" -out "$1.pem" -days 7 -subj "/CN=$2" 2>/dev/null
}
