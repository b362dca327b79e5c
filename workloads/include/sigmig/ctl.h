/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The client of the sigmig control protocol (docs/control-protocol.md),
 * the one the agent and the tools use: one request per connection, a VERB
 * line out, a JSON line back, and for DUMP/PEEK exactly "image_size" bytes
 * of image after it. Every step is bounded by the caller's timeout and
 * every read by a size limit.
 */
#ifndef SIGMIG_CTL_H
#define SIGMIG_CTL_H

#include <stddef.h>
#include <stdint.h>

#define SIGMIG_CTL_LINE_MAX	(1u << 20)	/* the JSON reply line */
#define SIGMIG_CTL_IMAGE_MAX	(1ull << 31)	/* the image after it */

struct sigmig_ctl_reply {
	char *line;		/* the JSON line, NUL-terminated, no newline */
	uint8_t *image;		/* DUMP/PEEK: the image bytes, else NULL */
	size_t image_len;
};

/*
 * Send @verb to the runtime listening on @sock_path and read its whole
 * reply within @timeout_ms. Returns 0 with @reply filled (free it with
 * sigmig_ctl_reply_free(); the runtime's own verdict is its "ok" member),
 * or -errno with @reply empty: -ENOENT/-ECONNREFUSED nothing listens,
 * -ETIMEDOUT the deadline passed (a busy runtime's full backlog included),
 * -EPROTO a reply that breaks the protocol (no line, a line or an image
 * over the limits, bytes after the image), -EINVAL a bad verb.
 */
int sigmig_ctl_request(const char *sock_path, const char *verb, int timeout_ms,
		       struct sigmig_ctl_reply *reply);
void sigmig_ctl_reply_free(struct sigmig_ctl_reply *reply);

/* 1 when the reply's top-level "ok" member is true. */
int sigmig_ctl_reply_ok(const struct sigmig_ctl_reply *reply);

#endif /* SIGMIG_CTL_H */
