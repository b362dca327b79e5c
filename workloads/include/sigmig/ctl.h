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
#include <sys/types.h>

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

/*
 * The same exchange with the image left on the socket, for a reader that
 * passes it on while the runtime is still writing it (the agent sends a
 * DUMP to the target as it is encoded). sigmig_ctl_open() reads the line
 * into @reply (reply->image stays NULL); when the line announces an image,
 * stream->size says how many bytes sigmig_ctl_read() then gives, within
 * the same @timeout_ms and, when @stall_ms > 0, waiting at most that long
 * for the next byte: up to @len at a time, 0 once all were given, or
 * -errno (-EPROTO the runtime closed early, -ETIMEDOUT). Both return
 * values of sigmig_ctl_open() are as sigmig_ctl_request()'s; close the
 * stream with sigmig_ctl_close() whatever was read.
 */
struct sigmig_ctl_stream {
	int fd;
	uint64_t deadline;
	uint64_t size, done;	/* of the image */
	uint8_t *head;		/* its bytes that came with the line */
	size_t head_len, head_off;
};

int sigmig_ctl_open(const char *sock_path, const char *verb, int timeout_ms,
		    struct sigmig_ctl_reply *reply, struct sigmig_ctl_stream *stream);
ssize_t sigmig_ctl_read(struct sigmig_ctl_stream *stream, uint8_t *buf, size_t len,
			int stall_ms);
void sigmig_ctl_close(struct sigmig_ctl_stream *stream);

/* 1 when the reply's top-level "ok" member is true. */
int sigmig_ctl_reply_ok(const struct sigmig_ctl_reply *reply);

#endif /* SIGMIG_CTL_H */
