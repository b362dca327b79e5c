// SPDX-License-Identifier: GPL-2.0
/* libFuzzer target: the decoder must reject or accept, never crash or leak,
 * an accepted image must re-encode to the same bytes, and its head must
 * pass sigmig_image_check_head().
 *
 * Built with -DFUZZ_FIX_CRC (build/fuzz/fuzz_image_fixcrc), the harness
 * first rewrites the CRC-32C trailer (the last four bytes) to match the
 * rest, so that mutated inputs get past the checksum and reach the checks
 * of counts, lengths, records and timers behind it. */
#include <stdlib.h>
#include <string.h>
#include <sigmig/image.h>
#include "../../lib/image_priv.h"

static void decode_and_check(const uint8_t *data, size_t size)
{
	struct sigmig_image img;
	uint8_t *out;
	size_t len;
	char err[256];

	int head = sigmig_image_check_head(data, size, size, err, sizeof(err));

	if (sigmig_image_decode(data, size, &img, err, sizeof(err)))
		return;
	if (head)	/* the head's checks are a part of the whole decode's */
		abort();
	if (sigmig_image_encode(&img, &out, &len) || len != size ||
	    memcmp(out, data, size))
		abort();
	free(out);
	sigmig_image_free(&img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
#ifdef FUZZ_FIX_CRC
	uint8_t *copy;
	uint32_t crc;

	if (size < 4)
		return 0;
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	crc = sigmig_crc32c(copy, size - 4);
	copy[size - 4] = crc;		/* little-endian, as the encoder writes */
	copy[size - 3] = crc >> 8;
	copy[size - 2] = crc >> 16;
	copy[size - 1] = crc >> 24;
	decode_and_check(copy, size);
	free(copy);
#else
	decode_and_check(data, size);
#endif
	return 0;
}
