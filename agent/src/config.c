// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "validate.h"

/* A smaller cap ends a workload at its first lines: a mistake, not a policy. */
#define MAX_OUTPUT_MIN	(64 << 10)

enum {
	OPT_LISTEN = 256,
	OPT_PORT,
	OPT_TOKEN,
	OPT_TOKEN_FILE,
	OPT_MAX_BODY,
	OPT_MAX_IMAGE,
	OPT_MAX_OUTPUT,
	OPT_LOG_LEVEL,
	OPT_BIN_DIR,
	OPT_STATE_DIR,
	OPT_RESTORE_TIMEOUT,
	OPT_MAX_WORKLOADS,
	OPT_MAX_CONNECTIONS,
	OPT_INSECURE_LOOPBACK,
	OPT_MAX_PER_CLIENT,
	OPT_IDLE_TIMEOUT,
	OPT_TLS_CERT,
	OPT_TLS_KEY,
	OPT_TLS_CA,
	OPT_TLS_CLIENT_CA,
	OPT_HELP,
	OPT_VERSION,
};

static const struct option long_options[] = {
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "token", required_argument, NULL, OPT_TOKEN },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "max-body", required_argument, NULL, OPT_MAX_BODY },
	{ "max-image", required_argument, NULL, OPT_MAX_IMAGE },
	{ "max-output", required_argument, NULL, OPT_MAX_OUTPUT },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "bin-dir", required_argument, NULL, OPT_BIN_DIR },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "restore-timeout-ms", required_argument, NULL, OPT_RESTORE_TIMEOUT },
	{ "max-workloads", required_argument, NULL, OPT_MAX_WORKLOADS },
	{ "max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS },
	{ "insecure-loopback", no_argument, NULL, OPT_INSECURE_LOOPBACK },
	{ "max-connections-per-client", required_argument, NULL, OPT_MAX_PER_CLIENT },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
	{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
	{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
	{ "tls-ca", required_argument, NULL, OPT_TLS_CA },
	{ "tls-client-ca", required_argument, NULL, OPT_TLS_CLIENT_CA },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

void config_usage(FILE *out)
{
	fprintf(out,
		"usage: sigmig-agent [options]\n"
		"  --listen ADDR:PORT        bind address (default 0.0.0.0:8080)\n"
		"  --port PORT               same as --listen 0.0.0.0:PORT\n"
		"  --token TOKEN             bearer token (shows in ps: prefer the file)\n"
		"  --token-file FILE         read the token from FILE (first line)\n"
		"                            (default: $SIGMIG_AGENT_TOKEN, which is then\n"
		"                            removed from the environment)\n"
		"  --insecure-loopback       run without a token, on 127.0.0.1 only\n"
		"                            (without it, no token: the agent refuses to start)\n"
		"  --max-body BYTES          JSON body cap, K/M/G suffixes (default 64K)\n"
		"  --max-image BYTES         image upload cap (default 256M)\n"
		"  --max-output BYTES        largest file a workload may write, its log and\n"
		"                            ledger among them (RLIMIT_FSIZE; default 1G,\n"
		"                            at least 64K; 0: no limit)\n"
		"  --log-level LEVEL         error|warn|info|debug (default info)\n"
		"  --bin-dir DIR             programs that may be started (default /sigmig/bin)\n"
		"  --state-dir DIR           sockets, ledgers, images (default /run/sigmig)\n"
		"  --restore-timeout-ms MS   wait for a restore (default 120000)\n"
		"  --max-workloads N         tracked workloads (default 64)\n"
		"  --max-connections N       concurrent connections (default 64)\n"
		"  --max-connections-per-client N\n"
		"                            from one IP address (default 16)\n"
		"  --idle-timeout S          close a connection idle for S s (default 15)\n"
		"  --tls-cert FILE, --tls-key FILE\n"
		"                            serve HTTPS with this PEM certificate (chain)\n"
		"                            and key (both or neither)\n"
		"  --tls-ca FILE             verify https:// peer agents against these PEM\n"
		"                            CAs (default: the system's)\n"
		"  --tls-client-ca FILE      mutual TLS: every request needs a client\n"
		"                            certificate for clientAuth signed by one of\n"
		"                            these PEM CAs (with --tls-cert); the agent\n"
		"                            presents its own --tls-cert to peers\n"
		"  --version, --help\n");
}

static void set_defaults(struct agent_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->listen_addr, "0.0.0.0");
	cfg->port = 8080;
	cfg->max_body = 64 << 10;
	cfg->max_image = 256 << 20;
	cfg->max_output = 1ull << 30;
	cfg->log_level = LOG_LVL_INFO;
	cfg->bin_dir = "/sigmig/bin";
	cfg->state_dir = "/run/sigmig";
	cfg->restore_timeout_ms = 120000;
	cfg->max_workloads = 64;
	cfg->max_connections = 64;
	cfg->max_per_client = 16;
	cfg->idle_timeout_s = 15;
}

static int set_token(struct agent_config *cfg, const char *token)
{
	free(cfg->token);
	cfg->token = NULL;
	if (!token || !*token)
		return 0;
	cfg->token = strdup(token);
	return cfg->token ? 0 : -1;
}

/*
 * The token in SIGMIG_AGENT_TOKEN is taken, not borrowed: the variable is
 * removed so that no program the agent starts inherits it, and its bytes
 * in the original environment block are zeroed, which is what
 * /proc/PID/environ shows whatever unsetenv() did to environ.
 */
static int take_env_token(struct agent_config *cfg)
{
	char *value = getenv("SIGMIG_AGENT_TOKEN");
	int ret;

	if (!value)
		return 0;
	ret = set_token(cfg, value);
	explicit_bzero(value, strlen(value));
	unsetenv("SIGMIG_AGENT_TOKEN");
	return ret;
}

static int read_token_file(struct agent_config *cfg, const char *path,
			   char *err, size_t errlen)
{
	char line[512];
	FILE *f;

	f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "--token-file %s: %s", path, strerror(errno));
		return -1;
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	if (!*line) {
		snprintf(err, errlen, "--token-file %s: empty", path);
		return -1;
	}
	return set_token(cfg, line);
}

/* A PEM file, whole, NUL-terminated: the TLS library takes it from memory. */
static int read_pem(char **out, const char *opt, const char *path, char *err,
		    size_t errlen)
{
	enum { PEM_MAX = 1 << 20 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	f = fopen(path, "r");
	if (f) {
		buf = calloc(1, PEM_MAX + 1);
		if (buf)
			len = fread(buf, 1, PEM_MAX + 1, f);
		fclose(f);
	}
	if (!f || !buf || len == 0 || len > PEM_MAX ||
	    !strstr(buf, "-----BEGIN ")) {
		snprintf(err, errlen, "--%s %s: %s", opt, path,
			 !f ? strerror(errno) : !buf ? "out of memory" :
			 len > PEM_MAX ? "larger than 1 MiB" : "not a PEM file");
		free(buf);
		return -1;
	}
	free(*out);
	*out = buf;
	return 0;
}

static int parse_uint(const char *text, unsigned int min, unsigned int max,
		      unsigned int *out)
{
	uint64_t v;

	if (parse_size(text, &v) || v < min || v > max)
		return -1;
	*out = (unsigned int)v;
	return 0;
}

static int bad(char *err, size_t errlen, const char *opt, const char *value)
{
	snprintf(err, errlen, "invalid value for --%s: '%s'", opt, value);
	return -1;
}

static int apply_option(struct agent_config *cfg, int opt, const char *arg,
			char *err, size_t errlen)
{
	switch (opt) {
	case OPT_LISTEN:
		if (parse_listen(arg, cfg->listen_addr, sizeof(cfg->listen_addr),
				 &cfg->port))
			return bad(err, errlen, "listen", arg);
		cfg->addr_given = arg[0] != ':' && strchr(arg, ':');
		return 0;
	case OPT_PORT:
		if (parse_listen(arg, cfg->listen_addr, sizeof(cfg->listen_addr),
				 &cfg->port) || strchr(arg, ':'))
			return bad(err, errlen, "port", arg);
		cfg->addr_given = false;
		return 0;
	case OPT_TOKEN:
		return set_token(cfg, arg);
	case OPT_TOKEN_FILE:
		return read_token_file(cfg, arg, err, errlen);
	case OPT_MAX_BODY:
		if (parse_size(arg, &cfg->max_body) || cfg->max_body == 0)
			return bad(err, errlen, "max-body", arg);
		return 0;
	case OPT_MAX_IMAGE:
		if (parse_size(arg, &cfg->max_image) || cfg->max_image == 0)
			return bad(err, errlen, "max-image", arg);
		return 0;
	case OPT_MAX_OUTPUT:
		if (parse_size(arg, &cfg->max_output) ||
		    (cfg->max_output && cfg->max_output < MAX_OUTPUT_MIN))
			return bad(err, errlen, "max-output", arg);
		return 0;
	case OPT_LOG_LEVEL:
		if (log_parse_level(arg, &cfg->log_level))
			return bad(err, errlen, "log-level", arg);
		return 0;
	case OPT_BIN_DIR:
		cfg->bin_dir = arg;
		return 0;
	case OPT_STATE_DIR:
		cfg->state_dir = arg;
		return 0;
	case OPT_RESTORE_TIMEOUT:
		if (parse_uint(arg, 100, 3600000, &cfg->restore_timeout_ms))
			return bad(err, errlen, "restore-timeout-ms", arg);
		return 0;
	case OPT_MAX_WORKLOADS:
		if (parse_uint(arg, 1, 4096, &cfg->max_workloads))
			return bad(err, errlen, "max-workloads", arg);
		return 0;
	case OPT_INSECURE_LOOPBACK:
		cfg->insecure_loopback = true;
		return 0;
	case OPT_MAX_PER_CLIENT:
		if (parse_uint(arg, 1, 4096, &cfg->max_per_client))
			return bad(err, errlen, "max-connections-per-client", arg);
		return 0;
	case OPT_IDLE_TIMEOUT:
		if (parse_uint(arg, 1, 3600, &cfg->idle_timeout_s))
			return bad(err, errlen, "idle-timeout", arg);
		return 0;
	case OPT_TLS_CERT:
		return read_pem(&cfg->tls_cert, "tls-cert", arg, err, errlen);
	case OPT_TLS_KEY:
		return read_pem(&cfg->tls_key, "tls-key", arg, err, errlen);
	case OPT_TLS_CA:
		cfg->tls_ca = arg;
		return 0;
	case OPT_TLS_CLIENT_CA:
		return read_pem(&cfg->tls_client_ca, "tls-client-ca", arg, err, errlen);
	case OPT_MAX_CONNECTIONS:
		if (parse_uint(arg, 2, 4096, &cfg->max_connections))
			return bad(err, errlen, "max-connections", arg);
		return 0;
	}
	snprintf(err, errlen, "unknown option (see --help)");
	return -1;
}

/*
 * Authentication fails closed: an agent without a token runs only when the
 * operator says so, and then only where no one else can reach it.
 */
static int check_auth(struct agent_config *cfg, char *err, size_t errlen)
{
	if (!cfg->insecure_loopback) {
		if (cfg->token)
			return 0;
		snprintf(err, errlen, "no token (--token-file FILE or "
			 "$SIGMIG_AGENT_TOKEN): refusing to serve an open API; "
			 "--insecure-loopback runs without one on 127.0.0.1 only");
		return -1;
	}
	if (!cfg->addr_given) {
		strcpy(cfg->listen_addr, "127.0.0.1");
		return 0;
	}
	if (strncmp(cfg->listen_addr, "127.", 4) == 0)
		return 0;
	snprintf(err, errlen, "--insecure-loopback binds a 127.x.x.x address only, "
		 "not %s", cfg->listen_addr);
	return -1;
}

int config_parse(int argc, char **argv, struct agent_config *cfg, char *err,
		 size_t errlen)
{
	int opt;

	set_defaults(cfg);
	if (take_env_token(cfg))
		return -1;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
		if (opt == OPT_HELP) {
			config_usage(stdout);
			return 1;
		}
		if (opt == OPT_VERSION) {
			printf("sigmig-agent %s\n", AGENT_VERSION);
			return 1;
		}
		if (opt == '?' || opt == ':') {
			snprintf(err, errlen, "unknown option or missing value: %s",
				 argv[optind - 1]);
			return -1;
		}
		if (apply_option(cfg, opt, optarg, err, errlen))
			return -1;
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!cfg->tls_cert != !cfg->tls_key) {
		snprintf(err, errlen, "--tls-cert and --tls-key go together");
		return -1;
	}
	if (cfg->tls_client_ca && !cfg->tls_cert) {
		snprintf(err, errlen, "--tls-client-ca needs --tls-cert: client "
			 "certificates are asked for over HTTPS only");
		return -1;
	}
	return check_auth(cfg, err, errlen);
}

void config_free(struct agent_config *cfg)
{
	free(cfg->token);
	cfg->token = NULL;
	if (cfg->tls_key)
		explicit_bzero(cfg->tls_key, strlen(cfg->tls_key));
	free(cfg->tls_key);
	free(cfg->tls_cert);
	free(cfg->tls_client_ca);
	cfg->tls_key = cfg->tls_cert = cfg->tls_client_ca = NULL;
}
