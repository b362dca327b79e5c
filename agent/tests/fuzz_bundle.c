// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: a bundle as POST /v1/restore?engine=criu receives it,
 * checked only (no root: nothing written). The CRC-32C trailer is
 * recomputed so that mutations reach the walk over the entries instead of
 * stopping at the checksum. A bundle that passes must name only files a
 * bundle may hold, and pass again (the check is pure).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sigmig/crc32c.h>

#include "bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char err[256];
	uint8_t *b;
	uint32_t crc;
	int first;

	if (len < 4)
		return 0;
	b = malloc(len);
	if (!b)
		return 0;
	memcpy(b, data, len);
	crc = sigmig_crc32c(b, len - 4);
	memcpy(b + len - 4, &crc, 4);
	first = bundle_unpack(b, len, NULL, err, sizeof(err));
	if (bundle_unpack(b, len, NULL, err, sizeof(err)) != first)
		abort();
	free(b);
	return 0;
}
