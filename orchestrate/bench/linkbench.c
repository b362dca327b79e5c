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

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "recv"))
		return do_recv(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "send"))
		return do_send(argv[2], atoi(argv[3]), atoll(argv[4]));
	fprintf(stderr, "usage: linkbench recv PORT | linkbench send HOST PORT BYTES\n");
	return 2;
}
