// SPDX-License-Identifier: GPL-2.0
/*
 * linkbench: how long BYTES take to cross a TCP link, for comparison with
 * a migration's transfer phase.  Installed into the guests by
 * orchestrate/downtime-bench.sh and started through the agents' API.
 *
 *   linkbench recv PORT              accept one connection, read to EOF,
 *                                    answer one byte, print the result
 *   linkbench send HOST PORT BYTES   connect, send BYTES, half-close, wait
 *                                    for the answer: connect to answer timed
 *   linkbench recv-tls PORT CERT KEY
 *   linkbench send-tls HOST PORT BYTES CA
 *                                    the same over TLS (GnuTLS, the agents'
 *                                    certificates): the floor of an image
 *                                    POSTed over https. The handshake is
 *                                    timed apart ("handshake_ns"): a
 *                                    migration makes it before the freeze.
 * Prints one JSON line: {"role":...,"bytes":N,"ns":N}.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <gnutls/gnutls.h>

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int do_recv(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, lfd, fd;
	static char buf[65536];
	int64_t total = 0, start;
	ssize_t n;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
		perror("linkbench: listen");
		return 1;
	}
	printf("{\"role\":\"recv\",\"listening\":%d}\n", port);
	fflush(stdout);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0) {
		perror("linkbench: accept");
		return 1;
	}
	start = now_ns();
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	if (n < 0) {
		perror("linkbench: read");
		return 1;
	}
	if (write(fd, "k", 1) != 1)
		return 1;
	printf("{\"role\":\"recv\",\"bytes\":%lld,\"ns\":%lld}\n", (long long)total,
	       (long long)(now_ns() - start));
	close(fd);
	return 0;
}

static int do_send(const char *host, int port, long long bytes)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	static char buf[65536];
	int64_t start, left = bytes;
	char ack;
	int fd;

	memset(buf, 0x5a, sizeof(buf));
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "linkbench: bad address %s\n", host);
		return 2;
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	start = now_ns();
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("linkbench: connect");
		return 1;
	}
	while (left > 0) {
		ssize_t n = write(fd, buf, left < (int64_t)sizeof(buf) ? (size_t)left : sizeof(buf));

		if (n <= 0) {
			perror("linkbench: write");
			return 1;
		}
		left -= n;
	}
	shutdown(fd, SHUT_WR);
	if (read(fd, &ack, 1) != 1) {
		fprintf(stderr, "linkbench: no answer\n");
		return 1;
	}
	printf("{\"role\":\"send\",\"bytes\":%lld,\"ns\":%lld}\n", bytes,
	       (long long)(now_ns() - start));
	return 0;
}

static int tls_fail(const char *what, int err)
{
	fprintf(stderr, "linkbench: %s: %s\n", what, gnutls_strerror(err));
	return 1;
}

static int handshake(gnutls_session_t s, int fd)
{
	int err;

	gnutls_transport_set_int(s, fd);
	gnutls_handshake_set_timeout(s, GNUTLS_DEFAULT_HANDSHAKE_TIMEOUT);
	do
		err = gnutls_handshake(s);
	while (err < 0 && !gnutls_error_is_fatal(err));
	return err < 0 ? tls_fail("handshake", err) : 0;
}

static int listen_on(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0);

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
		perror("linkbench: listen");
		return -1;
	}
	printf("{\"role\":\"recv\",\"listening\":%d}\n", port);
	fflush(stdout);
	return lfd;
}

static int do_recv_tls(int port, const char *cert, const char *key)
{
	gnutls_certificate_credentials_t cred;
	gnutls_session_t s;
	static char buf[65536];
	int64_t total = 0, start;
	ssize_t n;
	int lfd, fd, err;

	gnutls_certificate_allocate_credentials(&cred);
	err = gnutls_certificate_set_x509_key_file(cred, cert, key, GNUTLS_X509_FMT_PEM);
	if (err < 0)
		return tls_fail(cert, err);
	lfd = listen_on(port);
	fd = lfd < 0 ? -1 : accept(lfd, NULL, NULL);
	if (fd < 0)
		return 1;
	gnutls_init(&s, GNUTLS_SERVER);
	gnutls_set_default_priority(s);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred);
	if (handshake(s, fd))
		return 1;
	start = now_ns();
	while ((n = gnutls_record_recv(s, buf, sizeof(buf))) > 0 ||
	       n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
		total += n > 0 ? n : 0;
	if (n < 0)
		return tls_fail("receive", (int)n);
	if (gnutls_record_send(s, "k", 1) != 1)
		return 1;
	gnutls_bye(s, GNUTLS_SHUT_WR);
	printf("{\"role\":\"recv\",\"tls\":true,\"bytes\":%lld,\"ns\":%lld}\n",
	       (long long)total, (long long)(now_ns() - start));
	return 0;
}

static int do_send_tls(const char *host, int port, long long bytes, const char *ca)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	gnutls_certificate_credentials_t cred;
	static char buf[65536];
	int64_t t0, start, left = bytes;
	gnutls_session_t s;
	char ack;
	int fd, err;

	memset(buf, 0x5a, sizeof(buf));
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return 2;
	gnutls_certificate_allocate_credentials(&cred);
	err = gnutls_certificate_set_x509_trust_file(cred, ca, GNUTLS_X509_FMT_PEM);
	if (err < 0)
		return tls_fail(ca, err);
	gnutls_init(&s, GNUTLS_CLIENT);
	gnutls_set_default_priority(s);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred);
	gnutls_session_set_verify_cert(s, host, 0);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	t0 = now_ns();
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("linkbench: connect");
		return 1;
	}
	if (handshake(s, fd))
		return 1;
	start = now_ns();
	while (left > 0) {
		ssize_t n = gnutls_record_send(s, buf, left < (int64_t)sizeof(buf) ?
					       (size_t)left : sizeof(buf));

		if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
			continue;
		if (n <= 0)
			return tls_fail("send", (int)n);
		left -= n;
	}
	gnutls_bye(s, GNUTLS_SHUT_WR);
	if (gnutls_record_recv(s, &ack, 1) != 1) {
		fprintf(stderr, "linkbench: no answer\n");
		return 1;
	}
	printf("{\"role\":\"send\",\"tls\":true,\"bytes\":%lld,\"ns\":%lld,"
	       "\"handshake_ns\":%lld}\n", bytes, (long long)(now_ns() - start),
	       (long long)(start - t0));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "recv"))
		return do_recv(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "send"))
		return do_send(argv[2], atoi(argv[3]), atoll(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "recv-tls"))
		return do_recv_tls(atoi(argv[2]), argv[3], argv[4]);
	if (argc == 6 && !strcmp(argv[1], "send-tls"))
		return do_send_tls(argv[2], atoi(argv[3]), atoll(argv[4]), argv[5]);
	fprintf(stderr, "usage: linkbench recv PORT | send HOST PORT BYTES |\n"
		"       recv-tls PORT CERT KEY | send-tls HOST PORT BYTES CA\n");
	return 2;
}
