/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A workload's control socket, seen through JSON: the exchange itself is
 * libsigmig's client (<sigmig/ctl.h>, bounded in time and size); this
 * parses its reply line with jansson for the rest of the agent.
 */
#ifndef AGENT_CTL_H
#define AGENT_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <sigmig/ctl.h>

struct ctl_reply {
	json_t *json;		/* the reply line, an object */
	uint8_t *payload;	/* image bytes for DUMP/PEEK, else NULL */
	size_t payload_len;
};

/*
 * Returns 0 with @reply filled (free with ctl_reply_free), or -errno:
 * -ENOENT/-ECONNREFUSED no runtime listening, -ETIMEDOUT, -EPROTO for a
 * reply that breaks the protocol (or is not a JSON object).
 */
int ctl_request(const char *sock_path, const char *verb, int timeout_ms,
		struct ctl_reply *reply);
/*
 * The same, with the image (if the line announces one) left in @stream
 * for sigmig_ctl_read(); the stream is closed when this fails, else by
 * the caller (sigmig_ctl_close()).
 */
int ctl_open(const char *sock_path, const char *verb, int timeout_ms,
	     struct ctl_reply *reply, struct sigmig_ctl_stream *stream);
void ctl_reply_free(struct ctl_reply *reply);

/* {"ok":true}? Otherwise the runtime's "error" and "message" (or ""). */
int ctl_reply_ok(const struct ctl_reply *reply);
const char *ctl_reply_error(const struct ctl_reply *reply);
const char *ctl_reply_message(const struct ctl_reply *reply);

#endif
