/* SPDX-License-Identifier: GPL-2.0 */
/* Minimal TAP 13 producer for the host unit tests. */
#ifndef AGENT_TAP_H
#define AGENT_TAP_H

#include <stdio.h>

static int tap_count, tap_failed;

#define ok(cond, ...) do {						\
	tap_count++;							\
	if (!(cond)) {							\
		tap_failed++;						\
		printf("not ok %d - ", tap_count);			\
		printf(__VA_ARGS__);					\
		printf("\n#   %s:%d: %s\n", __FILE__, __LINE__, #cond);	\
	} else {							\
		printf("ok %d - ", tap_count);				\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	}								\
} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif
