// SPDX-License-Identifier: GPL-2.0
/*
 * sigmig-agent: the per-host daemon that starts, inspects, checkpoints,
 * restores and migrates sigmig workloads over an HTTP/JSON API.
 *
 * Shutdown signals are blocked in every thread and taken synchronously by
 * the main thread, so that shutdown runs as ordinary code: stop accepting,
 * let in-flight requests finish (a migration ends committed or thawed),
 * then thaw anything still frozen.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "caps.h"
#include "config.h"
#include "forward.h"
#include "httpc.h"
#include "log.h"
#include "server.h"
#include "workload.h"

static struct agent_config config;

static void block_shutdown_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void log_startup(void)
{
	const struct kernel_caps *c = &agent.caps;

	log_info("sigmig-agent %s on Linux %s (%s): SFD_RAW %s, queue pread %s%s%s",
		 AGENT_VERSION, c->release, c->machine,
		 c->sfd.raw ? "yes" : "no", c->sfd.peek ? "yes" : "no",
		 caps_missing(c)[0] ? " - " : "", caps_missing(c));
	if (!config.token)
		log_warn("--insecure-loopback without a token: every endpoint is "
			 "open to any local user of %s", config.listen_addr);
	log_info("programs from %s, state in %s, body cap %llu, image cap %llu",
		 config.bin_dir, config.state_dir,
		 (unsigned long long)config.max_body,
		 (unsigned long long)config.max_image);
}

int main(int argc, char **argv)
{
	char err[256];
	sigset_t set;
	int sig, ret;

	ret = config_parse(argc, argv, &config, err, sizeof(err));
	if (ret) {
		if (ret < 0)
			fprintf(stderr, "sigmig-agent: %s\n", err);
		config_free(&config);
		return ret < 0 ? 2 : 0;
	}
	log_set_level(config.log_level);
	block_shutdown_signals(&set);
	agent.cfg = &config;
	agent.started = time(NULL);
	caps_probe(&agent.caps);
	log_startup();
	if (httpc_init(config.tls_ca) || (config.tls_cert &&
	    httpc_set_client_cert(config.tls_cert, config.tls_key))) {
		fprintf(stderr, "sigmig-agent: cannot initialise libcurl\n");
		config_free(&config);
		return 1;
	}
	if (workloads_init(&config)) {
		httpc_cleanup();
		config_free(&config);
		return 1;
	}
	/* before the API: a lease must not meet a request that ends the forwarder */
	forward_resume_adopted();
	if (server_start()) {
		httpc_cleanup();
		config_free(&config);
		return 1;
	}
	do {
		sig = sigwaitinfo(&set, NULL);
	} while (sig < 0);
	log_info("%s: shutting down", strsignal(sig));
	server_stop();
	workloads_shutdown();
	log_info("stopped");
	httpc_cleanup();
	config_free(&config);
	return 0;
}
