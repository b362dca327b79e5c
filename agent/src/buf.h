/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A byte buffer that grows as data arrives (a request body, a peer's
 * reply) and stays NUL-terminated, so that JSON and text parsers can take
 * it as it is.
 */
#ifndef AGENT_BUF_H
#define AGENT_BUF_H

#include <stddef.h>

/*
 * Appends @n bytes of @p to *@data (*@len used, *@cap allocated; all zero
 * at first) and a NUL after them. -EMSGSIZE when *@len would pass @limit
 * (nothing appended), -ENOMEM.
 */
int buf_append(char **data, size_t *len, size_t *cap, const void *p, size_t n,
	       size_t limit);

#endif
