// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

int buf_append(char **data, size_t *len, size_t *cap, const void *p, size_t n,
	       size_t limit)
{
	size_t want = *cap ? *cap : 4096;
	char *bigger;

	if (n > limit - *len)
		return -EMSGSIZE;
	if (*len + n + 1 > *cap) {
		while (want < *len + n + 1)
			want *= 2;
		bigger = realloc(*data, want);
		if (!bigger)
			return -ENOMEM;
		*data = bigger;
		*cap = want;
	}
	memcpy(*data + *len, p, n);
	*len += n;
	(*data)[*len] = '\0';
	return 0;
}
