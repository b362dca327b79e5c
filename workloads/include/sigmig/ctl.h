/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Client side of the sigmig control protocol (docs/control-protocol.md).
 */
#ifndef SIGMIG_CTL_H
#define SIGMIG_CTL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Send one VERB to the runtime listening on @sock_path and read its reply.
 * *json_reply receives the reply's JSON line (malloc()ed, no newline).
 * For DUMP and PEEK the image bytes that follow the line are returned in
 * *payload / *payload_len (malloc()ed); pass NULL to discard them.
 * Returns 0 when a reply was read (check its "ok" field) or -errno.
 */
int sigmig_ctl_request(const char *sock_path, const char *verb,
		       char **json_reply, uint8_t **payload,
		       size_t *payload_len, int timeout_ms);

#endif /* SIGMIG_CTL_H */
