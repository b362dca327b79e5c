// SPDX-License-Identifier: GPL-2.0
/*
 * sigmig-loadgen: N concurrent clients each send M requests round-robin
 * over a plan of "METHOD PATH EXPECTED_STATUS" entries, one connection per
 * request, and count every unexpected status or I/O error as a failure.
 *
 *   sigmig-loadgen --url http://127.0.0.1:8080 --clients 4 --requests 1000 \
 *                  --plan 'GET /v1/health 200' --plan 'PUT /v1/health 405'
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "validate.h"

#define PLAN_MAX 32
#define KEEP 4096

struct plan_entry {
	char method[16];
	char path[256];
	unsigned int expect;
};

static struct plan_entry plan[PLAN_MAX];
static unsigned int nplan, requests_per_client = 1000;
static struct target_url target;
static const char *token;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long done, failures, skipped;
static double max_seconds = 300;
static struct timespec started;

static double elapsed(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - started.tv_sec) +
	       (double)(now.tv_nsec - started.tv_nsec) / 1e9;
}

static int connect_once(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct timeval tv = { .tv_sec = 90 };	/* above the agent's runtime timeouts */
	struct addrinfo *ai;
	char port[8];
	int fd;

	snprintf(port, sizeof(port), "%u", target.port);
	if (getaddrinfo(target.host, port, &hints, &ai))
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	return fd;
}

/* Returns the HTTP status, or 0 on an I/O or protocol error. */
static unsigned int one_request(const struct plan_entry *e, char *excerpt,
				size_t excerpt_len)
{
	char buf[65536], head[1024];
	unsigned int status = 0;
	size_t len = 0;
	ssize_t n;
	int fd, hl;

	hl = snprintf(head, sizeof(head),
		      "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n"
		      "Content-Length: 0\r\n%s%s%s\r\n", e->method, e->path,
		      target.host, token ? "Authorization: Bearer " : "",
		      token ? token : "", token ? "\r\n" : "");
	fd = connect_once();
	if (fd < 0)
		return 0;
	if (send(fd, head, (size_t)hl, MSG_NOSIGNAL) != hl)
		goto out;
	/* Read to EOF so that the server finishes the exchange. */
	/* Keep the first KEEP bytes (status, headers, start of body). */
	while ((n = recv(fd, buf + (len < KEEP ? len : KEEP),
			 sizeof(buf) - KEEP - 1, 0)) > 0)
		len += (size_t)n;
	if (n == 0 && len >= 12)
		sscanf(buf, "HTTP/1.%*d %u", &status);
	/* What a failure said, for the report: the start of its body. */
	buf[len < KEEP ? len : KEEP] = '\0';
	if (strstr(buf, "\r\n\r\n"))
		snprintf(excerpt, excerpt_len, "%s", strstr(buf, "\r\n\r\n") + 4);
	else
		excerpt[0] = '\0';
out:
	close(fd);
	return status;
}

static void *client_main(void *arg)
{
	unsigned long id = (unsigned long)arg, bad = 0, ran = 0;
	unsigned int i, got;
	const struct plan_entry *e;
	char excerpt[64];

	for (i = 0; i < requests_per_client && elapsed() < max_seconds; i++) {
		e = &plan[(i + id) % nplan];
		ran++;
		if (id == 0 && i && i % 100 == 0)
			fprintf(stderr, "# client 0: %u requests after %.1fs\n", i,
				elapsed());
		got = one_request(e, excerpt, sizeof(excerpt));
		if (got != e->expect) {
			if (bad < 5)
				fprintf(stderr, "# client %lu: %s %s -> %u, expected %u: %s\n",
					id, e->method, e->path, got, e->expect,
					excerpt);
			bad++;
		}
	}
	pthread_mutex_lock(&lock);
	done += ran;
	skipped += requests_per_client - ran;
	failures += bad;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static int add_plan(const char *text)
{
	struct plan_entry *e;

	if (nplan >= PLAN_MAX)
		return -1;
	e = &plan[nplan];
	if (sscanf(text, "%15s %255s %u", e->method, e->path, &e->expect) != 3)
		return -1;
	nplan++;
	return 0;
}

/* The token from a file: on the command line, ps would show it. */
static int read_token_file(const char *path)
{
	static char line[512];
	FILE *f = fopen(path, "r");

	if (!f) {
		perror(path);
		return -1;
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	token = line[0] ? line : NULL;
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: sigmig-loadgen --url http://HOST:PORT [--clients N] "
		"[--requests PER_CLIENT] [--token-file F] [--max-seconds S]\n"
		"       --plan 'METHOD PATH STATUS'...\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "clients", required_argument, NULL, 'c' },
		{ "requests", required_argument, NULL, 'n' },
		{ "token", required_argument, NULL, 't' },
		{ "token-file", required_argument, NULL, 'T' },
		{ "plan", required_argument, NULL, 'p' },
		{ "max-seconds", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long i, clients = 4;
	pthread_t threads[64];
	struct timespec t0, t1;
	struct verror err;
	double secs;
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'u':
			if (parse_target_url(optarg, &target, &err))
				return usage();
			break;
		case 'c':
			clients = strtoul(optarg, NULL, 10);
			break;
		case 'n':
			requests_per_client = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 't':
			token = optarg;
			break;
		case 'T':
			if (read_token_file(optarg))
				return usage();
			break;
		case 'p':
			if (add_plan(optarg))
				return usage();
			break;
		case 's':
			max_seconds = strtod(optarg, NULL);
			break;
		default:
			return usage();
		}
	}
	if (!target.host[0] || !nplan || clients < 1 || clients > 64)
		return usage();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	started = t0;
	for (i = 0; i < clients; i++)
		pthread_create(&threads[i], NULL, client_main, (void *)i);
	for (i = 0; i < clients; i++)
		pthread_join(threads[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("requests=%lu failures=%lu not_sent=%lu seconds=%.2f rps=%.0f\n",
	       done, failures, skipped, secs, (double)done / secs);
	return failures || skipped ? 1 : 0;
}
