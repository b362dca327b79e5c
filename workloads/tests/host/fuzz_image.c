// SPDX-License-Identifier: GPL-2.0
/* libFuzzer target: the decoder must reject or accept, never crash or leak,
 * and an accepted image must re-encode to the same bytes. */
#include <stdlib.h>
#include <string.h>
#include <sigmig/image.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sigmig_image img;
	uint8_t *out;
	size_t len;
	char err[256];

	if (sigmig_image_decode(data, size, &img, err, sizeof(err)))
		return 0;
	if (sigmig_image_encode(&img, &out, &len) || len != size ||
	    memcmp(out, data, size))
		abort();
	free(out);
	sigmig_image_free(&img);
	return 0;
}
