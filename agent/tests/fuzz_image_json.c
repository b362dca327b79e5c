// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: an image as GET /v1/workloads/{id}/signals renders
 * it. The first byte is the signal limit per queue, the rest the image,
 * whose CRC-32C trailer is recomputed so that mutations reach the decoder
 * and image_to_json() instead of stopping at the checksum.
 *
 * There is no JSON-to-image direction; the round trips checked are image
 * bytes -> image -> bytes (identical) and image -> JSON -> text -> JSON
 * (equal), and the document must agree with the image: counts, the
 * truncation flag, the number of signals listed and the pending total.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image_json.h"
#include "../../workloads/lib/image_priv.h"

static void check_queue(json_t *q, const struct sigmig_queue *queue,
			unsigned int limit)
{
	size_t listed = queue->count < limit ? queue->count : limit;

	if (json_integer_value(json_object_get(q, "count")) != queue->count ||
	    json_array_size(json_object_get(q, "signals")) != listed ||
	    json_is_true(json_object_get(q, "truncated")) != (listed < queue->count))
		abort();
}

static void check_document(json_t *doc, const struct sigmig_image *img,
			   unsigned int limit)
{
	json_t *threads = json_object_get(doc, "threads");
	uint32_t i;

	if (json_integer_value(json_object_get(doc, "pending_total")) !=
	    (json_int_t)sigmig_image_pending_total(img) ||
	    json_array_size(threads) != img->nthreads ||
	    json_array_size(json_object_get(doc, "timers")) != img->ntimers ||
	    !json_is_string(json_object_get(doc, "program")))
		abort();
	check_queue(json_object_get(doc, "shared"), &img->shared, limit);
	for (i = 0; i < img->nthreads; i++)
		check_queue(json_object_get(json_array_get(threads, i), "pending"),
			    &img->threads[i].pending, limit);
}

static void check_json(const struct sigmig_image *img, unsigned int limit)
{
	json_t *doc = image_to_json(img, limit), *back;
	char *text;

	if (!doc)
		abort();	/* the handler would answer 500 for a valid image */
	check_document(doc, img, limit);
	text = json_dumps(doc, JSON_COMPACT);
	back = text ? json_loads(text, 0, NULL) : NULL;
	if (!back || !json_equal(doc, back))
		abort();
	json_decref(back);
	free(text);
	json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sigmig_image img;
	unsigned int limit;
	uint8_t *buf, *out;
	size_t len, olen;
	uint32_t crc;

	if (size < 5)
		return 0;
	limit = data[0];
	len = size - 1;
	buf = malloc(len);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, len);
	crc = sigmig_crc32c(buf, len - 4);
	memcpy(buf + len - 4, &crc, 4);		/* little-endian host */
	if (sigmig_image_decode(buf, len, &img, NULL, 0) == 0) {
		if (sigmig_image_encode(&img, &out, &olen) || olen != len ||
		    memcmp(out, buf, len))
			abort();
		free(out);
		check_json(&img, limit);
		sigmig_image_free(&img);
	}
	free(buf);
	return 0;
}
