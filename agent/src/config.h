/* SPDX-License-Identifier: GPL-2.0 */
#ifndef AGENT_CONFIG_H
#define AGENT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "log.h"

#define AGENT_VERSION		"0.1.0"
#define AGENT_API_VERSION	"v1"

struct agent_config {
	char listen_addr[64];
	uint16_t port;
	bool addr_given;		/* --listen named an address */
	bool insecure_loopback;		/* no token needed, 127.x only */
	char *token;			/* NULL only with insecure_loopback */
	uint64_t max_body;		/* JSON request bodies */
	uint64_t max_image;		/* image uploads (POST /v1/restore) */
	uint64_t max_output;		/* a workload's files, each (RLIMIT_FSIZE); 0: none */
	enum log_level log_level;
	const char *bin_dir;		/* programs that may be started */
	const char *state_dir;		/* sockets, ledgers, images, logs */
	unsigned int restore_timeout_ms;
	unsigned int max_workloads;
	unsigned int max_connections;
	unsigned int max_per_client;	/* connections from one IP address */
	unsigned int idle_timeout_s;	/* a connection without traffic is closed */
	char *tls_cert;			/* PEM: serve HTTPS; NULL: HTTP */
	char *tls_key;			/* PEM, with tls_cert */
	const char *tls_ca;		/* file to verify https:// peers, or NULL */
	char *tls_client_ca;		/* PEM: every client must present a
					 * certificate one of these signed */
};

/*
 * Fills @cfg from the command line (and SIGMIG_AGENT_TOKEN). Returns 0, 1
 * when --help/--version was printed, or -1 with a message in @err.
 */
int config_parse(int argc, char **argv, struct agent_config *cfg, char *err,
		 size_t errlen);
void config_free(struct agent_config *cfg);
void config_usage(FILE *out);

#endif
