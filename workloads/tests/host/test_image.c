// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the image codec: round trip and every rejection.
 * With --write-seeds DIR it writes valid images as a fuzzing corpus.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sigmig/image.h>
#include "../../lib/image_priv.h"
#include "tap.h"

#define HDR 160

static void fill_siginfo(struct sigmig_siginfo *si, int signo, uint32_t seq)
{
	memset(si, 0, sizeof(*si));
	memcpy(si->bytes, &signo, 4);
	si->bytes[8] = 0xff;			/* si_code = SI_QUEUE (-1) */
	si->bytes[9] = si->bytes[10] = si->bytes[11] = 0xff;
	memcpy(si->bytes + 24, &seq, 4);	/* si_value */
	si->bytes[127] = (uint8_t)seq;
}

static struct sigmig_siginfo *make_queue(uint32_t n, int signo, uint32_t base)
{
	struct sigmig_siginfo *q = calloc(n ? n : 1, sizeof(*q));
	uint32_t i;

	for (i = 0; i < n; i++)
		fill_siginfo(&q[i], signo + (int)(i % 3), base + i);
	return q;
}

/* A sample image with @nthreads threads of @per signals and @nshared shared. */
static void make_image(struct sigmig_image *img, uint32_t nthreads,
		       uint32_t per, uint32_t nshared)
{
	uint32_t i;

	memset(img, 0, sizeof(*img));
	img->version = SIGMIG_IMAGE_VERSION;
	img->arch = EM_X86_64;
	img->created_ns = 0x1122334455667788ull;
	img->pid = 4242;
	strcpy(img->program, "sigstorm");
	img->dispositions[9].kind = SIGMIG_HANDLER_NAMED;
	img->dispositions[9].sa_flags = 0x14;
	img->dispositions[9].sa_mask = 0x8000000000000001ull;
	strcpy(img->dispositions[9].handler, "ledger");
	img->dispositions[12].kind = SIGMIG_HANDLER_IGNORE;
	img->nthreads = nthreads;
	img->threads = calloc(nthreads ? nthreads : 1, sizeof(*img->threads));
	for (i = 0; i < nthreads; i++) {
		img->threads[i].index = i;
		img->threads[i].tid = 100 + (int32_t)i;
		img->threads[i].blocked = 0xffull << i;
		img->threads[i].pending.count = per + i;
		img->threads[i].pending.entries = make_queue(per + i, 34, i * 1000);
	}
	img->shared.count = nshared;
	img->shared.entries = make_queue(nshared, 40, 50000);
	img->ntimers = 2;
	img->timers = calloc(2, sizeof(*img->timers));
	img->timers[0] = (struct sigmig_timer){ .id = 0, .clock = 1, .notify = 0,
		.signo = 44, .value = 0xdeadbeefcafeull, .overrun = 3,
		.interval_ns = 1000000, .remaining_ns = 12345 };
	img->timers[1] = (struct sigmig_timer){ .id = 7, .clock = 0, .notify = 4,
		.signo = 45, .thread_index = 1, .interval_ns = 0,
		.remaining_ns = 0 };
}

static int images_equal(const struct sigmig_image *a, const struct sigmig_image *b)
{
	uint32_t i;

	if (a->version != b->version || a->arch != b->arch ||
	    a->created_ns != b->created_ns || a->pid != b->pid ||
	    strcmp(a->program, b->program) ||
	    memcmp(a->dispositions, b->dispositions, sizeof(a->dispositions)) ||
	    a->nthreads != b->nthreads || a->ntimers != b->ntimers ||
	    a->shared.count != b->shared.count)
		return 0;
	for (i = 0; i < a->nthreads; i++) {
		const struct sigmig_thread *x = &a->threads[i], *y = &b->threads[i];

		if (x->index != y->index || x->tid != y->tid ||
		    x->blocked != y->blocked || x->pending.count != y->pending.count ||
		    (x->pending.count && memcmp(x->pending.entries, y->pending.entries,
						x->pending.count * 128)))
			return 0;
	}
	if (a->ntimers && memcmp(a->timers, b->timers, a->ntimers * sizeof(*a->timers)))
		return 0;
	return !a->shared.count ||
	       !memcmp(a->shared.entries, b->shared.entries, a->shared.count * 128);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v; p[1] = v >> 8; p[2] = v >> 16; p[3] = v >> 24;
}

/* Recompute the trailer so that a test reaches the check after the CRC. */
static void reseal(uint8_t *buf, size_t len)
{
	put32(buf + len - 4, sigmig_crc32c(buf, len - 4));
}

/* sigmig_image_check() calls that did not give the decoder's answer */
static int check_disagrees;

static void compare_check(const uint8_t *buf, size_t len, int ret, const char *err)
{
	char why[256];

	if (sigmig_image_check(buf, len, why, sizeof(why)) != ret ||
	    (ret && strcmp(why, err))) {
		printf("# check disagrees: %s vs %s\n", why, ret ? err : "(ok)");
		check_disagrees++;
	}
}

static int decode_fails(const uint8_t *buf, size_t len, const char *expect)
{
	struct sigmig_image img;
	char err[256];
	int ret = sigmig_image_decode(buf, len, &img, err, sizeof(err));

	compare_check(buf, len, ret, err);

	if (ret == 0) {
		sigmig_image_free(&img);
		return 0;
	}
	if (expect && !strstr(err, expect)) {
		printf("# unexpected error: %s (wanted \"%s\")\n", err, expect);
		return 0;
	}
	/* a failed decode leaves nothing behind */
	return !img.threads && !img.timers && !img.shared.entries && !img.nthreads &&
	       strchr(err, '\n') == NULL && err[0];
}

/* The definition, a bit at a time: what the sliced tables must agree with. */
static uint32_t crc32c_bitwise(const uint8_t *p, size_t len)
{
	uint32_t c = ~0u;
	int k;

	while (len--) {
		c ^= *p++;
		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & -(c & 1));
	}
	return ~c;
}

static void test_crc(void)
{
	uint8_t buf[96];
	size_t off, len, i;
	int bad = 0;

	ok(sigmig_crc32c((const uint8_t *)"123456789", 9) == 0xe3069283u,
	   "crc32c check value of \"123456789\"");
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 11);
	for (off = 0; off < 8; off++)
		for (len = 0; off + len <= sizeof(buf); len++)
			bad += sigmig_crc32c(buf + off, len) != crc32c_bitwise(buf + off, len);
	ok(bad == 0, "crc32c of every length 0..%zu at every alignment agrees with "
	   "the bitwise definition (%d differ)", sizeof(buf) - 8, bad);
}

static void test_round_trip(uint32_t nthreads, uint32_t per, uint32_t nshared)
{
	struct sigmig_image in, out;
	uint8_t *buf = NULL, *buf2 = NULL;
	size_t len = 0, len2 = 0;
	char err[256];
	int ret;

	make_image(&in, nthreads, per, nshared);
	ret = sigmig_image_encode(&in, &buf, &len);
	ok(ret == 0, "encode %u threads x %u + %u shared", nthreads, per, nshared);
	ret = sigmig_image_decode(buf, len, &out, err, sizeof(err));
	compare_check(buf, len, ret, err);
	ok(ret == 0 && images_equal(&in, &out), "round trip %u/%u/%u %s",
	   nthreads, per, nshared, ret ? err : "");
	ok(sigmig_image_pending_total(&out) == sigmig_image_pending_total(&in),
	   "pending total %llu", (unsigned long long)sigmig_image_pending_total(&out));
	ret = sigmig_image_encode(&out, &buf2, &len2);
	ok(ret == 0 && len == len2 && !memcmp(buf, buf2, len),
	   "re-encoding the decoded image is byte-identical");
	if (!ret)
		sigmig_image_free(&out);
	sigmig_image_free(&in);
	free(buf);
	free(buf2);
}

/* Collects what the streaming encoder gives; fails once @fail_at is passed. */
struct collector {
	uint8_t *buf;
	size_t len, cap, calls;
	size_t fail_at;		/* 0: never */
};

static int collect(void *arg, const uint8_t *p, size_t len)
{
	struct collector *c = arg;

	c->calls++;
	if (c->fail_at && c->len + len > c->fail_at)
		return -EPIPE;
	if (c->len + len > c->cap)
		return -ENOSPC;
	memcpy(c->buf + c->len, p, len);
	c->len += len;
	return 0;
}

/*
 * Sent as it is encoded, an image is the same bytes: with queues and
 * timers larger than the encoder's chunk, so that every flush is taken.
 */
static void test_streamed_encode(void)
{
	struct sigmig_image in;
	struct collector c = { 0 };
	uint8_t *buf = NULL;
	uint64_t size = 0;
	size_t len = 0, calls;
	uint32_t i;
	int ret;

	make_image(&in, 3, 3000, 2500);
	free(in.timers);
	in.ntimers = 2000;
	in.timers = calloc(in.ntimers, sizeof(*in.timers));
	for (i = 0; i < in.ntimers; i++)
		in.timers[i] = (struct sigmig_timer){ .id = (int32_t)i, .signo = 40,
			.value = i * 3ull, .overrun = (int32_t)i };
	ret = sigmig_image_encode(&in, &buf, &len);
	ok(!ret && !sigmig_image_encoded_size(&in, &size) && size == len,
	   "the size announced before encoding is the image's (%llu, %zu)",
	   (unsigned long long)size, len);
	c.cap = len;
	c.buf = malloc(len);
	ret = sigmig_image_encode_to(&in, collect, &c);
	ok(!ret && c.len == len && !memcmp(c.buf, buf, len) && c.calls > 4,
	   "streamed in %zu pieces, the image is byte for byte the encoded one", c.calls);
	calls = c.calls;
	c = (struct collector){ .buf = c.buf, .cap = len, .fail_at = len / 2 };
	ret = sigmig_image_encode_to(&in, collect, &c);
	ok(ret == -EPIPE && c.len <= len / 2 && c.calls < calls,
	   "a sink's error stops the encoder and is returned (%d after %zu bytes)",
	   ret, c.len);
	memset(in.program, 'x', sizeof(in.program));
	c = (struct collector){ .buf = c.buf, .cap = len };
	ret = sigmig_image_encode_to(&in, collect, &c);
	ok(ret == -EINVAL && c.calls == 0,
	   "a bad image is refused before any byte goes to the sink (%d)", ret);
	free(c.buf);
	free(buf);
	sigmig_image_free(&in);
}

static void test_truncation_and_corruption(void)
{
	struct sigmig_image in;
	uint8_t *buf, *copy;
	size_t len, i;
	int bad_trunc = 0, bad_flip = 0;

	make_image(&in, 3, 4, 5);
	sigmig_image_encode(&in, &buf, &len);
	copy = malloc(len + 1);
	for (i = 0; i < len; i++) {
		memcpy(copy, buf, i);
		if (!decode_fails(copy, i, "truncated"))
			bad_trunc++;
	}
	ok(bad_trunc == 0, "truncation at every length 0..%zu rejected as truncated (%d missed)",
	   len - 1, bad_trunc);
	for (i = 0; i < len; i++) {
		memcpy(copy, buf, len);
		copy[i] ^= 0x01;
		if (!decode_fails(copy, len, NULL))
			bad_flip++;
		copy[i] ^= 0x81;
		if (!decode_fails(copy, len, NULL))
			bad_flip++;
	}
	ok(bad_flip == 0, "a corrupted byte at each of %zu offsets detected (%d missed)",
	   len, bad_flip);
	memcpy(copy, buf, len);
	copy[len - 100] ^= 0x10;
	ok(decode_fails(copy, len, "checksum mismatch"), "payload corruption reported as checksum mismatch");
	memcpy(copy, buf, len);
	copy[len] = 0;
	ok(decode_fails(copy, len + 1, "trailing garbage"), "one byte of trailing garbage rejected");
	free(copy);
	free(buf);
	sigmig_image_free(&in);
}

struct field_case {
	size_t off;
	int width;
	uint64_t value;
	const char *expect;
	const char *name;
};

static const struct field_case field_cases[] = {
	{ 0, 1, 'X', "bad magic", "bad magic" },
	{ 8, 4, 2, "unsupported image version 2", "unknown version" },
	{ 8, 4, 0, "unsupported image version 0", "version 0" },
	{ 12, 4, 0x0d0c0b0a, "foreign byte order", "big-endian byte order marker" },
	{ 16, 2, EM_AARCH64, "foreign architecture", "foreign arch (aarch64)" },
	{ 18, 2, 64, "siginfo size 64", "siginfo size 64" },
	{ 18, 2, 256, "siginfo size 256", "siginfo size 256" },
	{ 20, 4, 128, "header size", "header size" },
	{ 36, 4, SIGMIG_MAX_THREADS + 1, "thread count", "thread count over limit" },
	{ 40, 4, SIGMIG_MAX_TIMERS + 1, "timer count", "timer count over limit" },
	{ 44, 4, SIGMIG_MAX_SIGNALS + 1, "shared queue count", "shared count over limit" },
	{ 44, 4, 4, "shared queue section length", "shared count inconsistent" },
	{ 40, 4, 3, "timer section length", "timer count inconsistent" },
	{ 56, 4, 1, "thread section length", "thread section too short" },
	{ 152, 1, 1, "reserved header byte", "reserved header byte" },
	{ 80, 4, 99999, "truncated", "declared total longer than data" },
};

static void set_field(uint8_t *p, int width, uint64_t v)
{
	int i;

	for (i = 0; i < width; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void test_bad_fields(void)
{
	struct sigmig_image in;
	uint8_t *buf, *copy;
	size_t len, i;

	make_image(&in, 2, 3, 5);
	sigmig_image_encode(&in, &buf, &len);
	copy = malloc(len);
	for (i = 0; i < sizeof(field_cases) / sizeof(field_cases[0]); i++) {
		const struct field_case *c = &field_cases[i];

		memcpy(copy, buf, len);
		set_field(copy + c->off, c->width, c->value);
		reseal(copy, len);
		ok(decode_fails(copy, len, c->expect), "rejects %s", c->name);
	}
	free(copy);
	free(buf);
	sigmig_image_free(&in);
}

static int head_fails(const uint8_t *buf, size_t len, uint64_t total,
		      const char *expect)
{
	char err[256];

	if (!sigmig_image_check_head(buf, len, total, err, sizeof(err)))
		return 0;
	if (!strstr(err, expect)) {
		printf("# unexpected error: %s (wanted \"%s\")\n", err, expect);
		return 0;
	}
	return 1;
}

/* What a receiver checks before the rest of the image has arrived. */
static void test_head(void)
{
	struct sigmig_image in;
	uint8_t *buf, *copy;
	size_t len, i;
	int missed = 0;

	make_image(&in, 2, 3, 5);
	sigmig_image_encode(&in, &buf, &len);
	copy = malloc(len);
	ok(sigmig_image_check_head(buf, HDR, len, NULL, 0) == 0,
	   "the head of a valid image passes");
	ok(head_fails(buf, HDR - 1, len, "head truncated"), "159 bytes are not a head");
	ok(head_fails(buf, HDR, len - 1, "truncated"),
	   "an announced length shorter than the image's is truncated");
	ok(head_fails(buf, HDR, len + 1, "trailing garbage"),
	   "an announced length longer than the image's is trailing garbage");
	for (i = 0; i < sizeof(field_cases) / sizeof(field_cases[0]); i++) {
		const struct field_case *c = &field_cases[i];

		memcpy(copy, buf, len);
		set_field(copy + c->off, c->width, c->value);
		if (!head_fails(copy, HDR, len, c->expect))
			missed++;
	}
	ok(missed == 0, "every bad header field is refused from the head, with the "
	   "decoder's reason (%d missed)", missed);
	memcpy(copy, buf, len);
	copy[len - 100] ^= 0x10;
	ok(sigmig_image_check_head(copy, HDR, len, NULL, 0) == 0 &&
	   decode_fails(copy, len, "checksum mismatch"),
	   "a corrupt payload passes the head and fails the whole decode");
	free(copy);
	free(buf);
	sigmig_image_free(&in);
}

/* Corruptions behind a valid checksum, in the sections. */
static void test_bad_records(void)
{
	struct sigmig_image in;
	uint8_t *buf, *copy;
	size_t len, thr = HDR + 64 * 48, data, timers;

	make_image(&in, 2, 3, 5);
	sigmig_image_encode(&in, &buf, &len);
	copy = malloc(len);
	data = thr + 2 * 24;
	timers = data + (3 + 4) * 128;

	memcpy(copy, buf, len);
	set_field(copy + HDR + 5 * 48, 4, 7);
	reseal(copy, len);
	ok(decode_fails(copy, len, "unknown disposition kind"), "rejects unknown disposition kind");
	memcpy(copy, buf, len);
	memset(copy + HDR + 9 * 48 + 16, 'a', 32);
	reseal(copy, len);
	ok(decode_fails(copy, len, "not NUL-terminated"), "rejects unterminated handler name");
	memcpy(copy, buf, len);
	set_field(copy + thr + 24 + 16, 4, 5);
	reseal(copy, len);
	ok(decode_fails(copy, len, "per-thread counts"), "rejects per-thread count inconsistent with the section");
	memcpy(copy, buf, len);
	set_field(copy + thr + 24 + 16, 4, SIGMIG_MAX_SIGNALS + 1);
	reseal(copy, len);
	ok(decode_fails(copy, len, "exceeds the limit"), "rejects per-thread count over the limit");
	memcpy(copy, buf, len);
	set_field(copy + thr + 24, 4, 0);
	reseal(copy, len);
	ok(decode_fails(copy, len, "duplicate thread index"), "rejects duplicate thread index");
	memcpy(copy, buf, len);
	set_field(copy + data + 128, 4, 65);
	reseal(copy, len);
	ok(decode_fails(copy, len, "out of range"), "rejects si_signo 65");
	memcpy(copy, buf, len);
	set_field(copy + data, 4, 64);
	reseal(copy, len);
	ok(decode_fails(copy, len, "freeze signal"), "rejects the freeze signal in a queue");
	memcpy(copy, buf, len);
	set_field(copy + timers + 48, 4, 0);
	reseal(copy, len);
	ok(decode_fails(copy, len, "duplicate id"), "rejects duplicate timer id");
	memcpy(copy, buf, len);
	set_field(copy + timers + 8, 4, 2);
	reseal(copy, len);
	ok(decode_fails(copy, len, "unsupported notify"), "rejects SIGEV_THREAD timer");
	memcpy(copy, buf, len);
	set_field(copy + len - 4 - 128, 4, 0);
	reseal(copy, len);
	ok(decode_fails(copy, len, "shared queue 0 entry 4"), "rejects si_signo 0 in the shared queue");
	free(copy);
	free(buf);
	sigmig_image_free(&in);
}

static void test_encode_limits(void)
{
	struct sigmig_image in;
	uint8_t *buf = NULL;
	size_t len;

	make_image(&in, 1, 1, 1);
	in.nthreads = SIGMIG_MAX_THREADS + 1;
	ok(sigmig_image_encode(&in, &buf, &len) == -E2BIG, "encoder refuses too many threads");
	in.nthreads = 1;
	memset(in.program, 'x', sizeof(in.program));
	ok(sigmig_image_encode(&in, &buf, &len) == -EINVAL, "encoder refuses an unterminated program name");
	sigmig_image_free(&in);
}

static int write_seeds(const char *dir)
{
	static const uint32_t shapes[][3] = { {0, 0, 0}, {1, 1, 0}, {2, 3, 5}, {4, 0, 9} };
	struct sigmig_image in;
	char path[4096];
	uint8_t *buf;
	size_t len, i;
	FILE *f;

	for (i = 0; i < 4; i++) {
		make_image(&in, shapes[i][0], shapes[i][1], shapes[i][2]);
		if (sigmig_image_encode(&in, &buf, &len))
			return 1;
		snprintf(path, sizeof(path), "%s/seed-%zu.img", dir, i);
		f = fopen(path, "wb");
		if (!f || fwrite(buf, 1, len, f) != len || fclose(f))
			return 1;
		free(buf);
		sigmig_image_free(&in);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write-seeds"))
		return write_seeds(argv[2]);
	tap_plan_start();
	test_crc();
	test_round_trip(0, 0, 0);
	test_round_trip(1, 1, 1);
	test_round_trip(4, 250, 1000);
	test_streamed_encode();
	test_truncation_and_corruption();
	test_bad_fields();
	test_head();
	test_bad_records();
	test_encode_limits();
	ok(check_disagrees == 0, "sigmig_image_check() gives the decoder's answer and "
	   "reason for every image above (%d disagree)", check_disagrees);
	return tap_done();
}
