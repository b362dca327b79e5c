// SPDX-License-Identifier: GPL-2.0
/*
 * sigmig-ctl SOCKET VERB [--out FILE] [--timeout MS]: one control request;
 * prints the reply's JSON line, writes image bytes (DUMP/PEEK) to FILE.
 * Exit status: 0 if the reply says "ok":true, 1 if it says false, 2 on a
 * transport error.
 * sigmig-ctl --inspect IMAGE: decode an image file and print a JSON summary
 * (exit 1 and the decoder's reason if it is invalid).
 * sigmig-ctl --xor FILE OFFSET BYTE: XOR one byte of FILE in place (tests).
 * sigmig-ctl --records IMAGE: one line per queued record, oldest first:
 * "<queue> <si_signo> <si_code> <si_pid> <si_uid>", queue being "shared"
 * or "thread.<index>".
 * sigmig-ctl --craft FILE FIELD=VALUE...: set 32-bit fields of an image in
 * place and recompute its CRC, as a malicious peer would (tests). FIELD is
 * a header count (nthreads, ntimers, shared_count), thread.I.index,
 * thread.I.count, timer.I.{id,clock,notify,signo,thread_index} or
 * shared.I.signo (record I of its section, counted from 0).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sigmig/ctl.h>
#include <sigmig/image.h>
#include "../../lib/image_priv.h"	/* sigmig_crc32c */

static int xor_byte(const char *path, long off, int x)
{
	FILE *f = fopen(path, "r+b");
	int c;

	if (!f || fseek(f, off, SEEK_SET) || (c = fgetc(f)) == EOF ||
	    fseek(f, off, SEEK_SET) || fputc(c ^ x, f) == EOF || fclose(f)) {
		perror(path);
		return 2;
	}
	return 0;
}

/* One image at a time, as big as any test makes. */
static uint8_t image_buf[64 << 20];

/* Offsets of docs/image-format.md. */
#define HDR_SIZE	160
#define DISP_SECTION	(64 * 48)
#define THREAD_REC	24
#define TIMER_REC	48
#define ENTRY_SIZE	128

static uint32_t get_le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p)
{
	return get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

struct craft_field {
	const char *section;	/* NULL: a header field */
	const char *name;
	size_t off;		/* in the header, or in record I of the section */
};

static const struct craft_field craft_fields[] = {
	{ NULL, "nthreads", 36 }, { NULL, "ntimers", 40 },
	{ NULL, "shared_count", 44 },
	{ "thread", "index", 0 }, { "thread", "count", 16 },
	{ "timer", "id", 0 }, { "timer", "clock", 4 }, { "timer", "notify", 8 },
	{ "timer", "signo", 12 }, { "timer", "thread_index", 24 },
	{ "shared", "signo", 0 },
};

/* Offset of SECTION.INDEX.NAME (or of header field NAME) in buf, or -1. */
static long craft_offset(const uint8_t *buf, size_t len, const char *spec)
{
	size_t threads_off = HDR_SIZE + DISP_SECTION, timers_off, shared_off;
	char section[16], name[16];
	unsigned long i;
	size_t k, base, rec, count;

	if (len < HDR_SIZE + DISP_SECTION)
		return -1;
	timers_off = threads_off + get_le64(buf + 56);
	shared_off = timers_off + get_le64(buf + 64);
	for (k = 0; k < sizeof(craft_fields) / sizeof(craft_fields[0]); k++) {
		const struct craft_field *f = &craft_fields[k];

		if (!f->section) {
			if (!strcmp(spec, f->name))
				return (long)f->off;
			continue;
		}
		if (sscanf(spec, "%15[a-z].%lu.%15[a-z_]", section, &i, name) != 3 ||
		    strcmp(section, f->section) || strcmp(name, f->name))
			continue;
		if (!strcmp(section, "thread")) {
			base = threads_off, rec = THREAD_REC, count = get_le32(buf + 36);
		} else if (!strcmp(section, "timer")) {
			base = timers_off, rec = TIMER_REC, count = get_le32(buf + 40);
		} else {
			base = shared_off, rec = ENTRY_SIZE, count = get_le32(buf + 44);
		}
		if (i >= count || base + i * rec + f->off + 4 > len - 4)
			return -1;
		return (long)(base + i * rec + f->off);
	}
	return -1;
}

static int craft(const char *path, int nspecs, char **specs)
{
	uint8_t *buf = image_buf;
	char field[48];
	long long value;
	long off;
	size_t len;
	FILE *f = fopen(path, "r+b");
	int i;

	if (!f) {
		perror(path);
		return 2;
	}
	len = fread(buf, 1, sizeof(image_buf), f);
	for (i = 0; i < nspecs; i++) {
		if (sscanf(specs[i], "%47[a-z_.0-9]=%lli", field, &value) != 2 ||
		    (off = craft_offset(buf, len, field)) < 0) {
			fprintf(stderr, "sigmig-ctl: %s: no such field in %s\n", specs[i], path);
			fclose(f);
			return 2;
		}
		put_le32(buf + off, (uint32_t)value);
	}
	put_le32(buf + len - 4, sigmig_crc32c(buf, len - 4));
	if (fseek(f, 0, SEEK_SET) || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		return 2;
	}
	return 0;
}

/* 0, 2 (unreadable: said on stderr) or 1 (invalid: the reason in @err). */
static int decode_file(const char *path, struct sigmig_image *img, char *err,
		       size_t errlen)
{
	uint8_t *buf = image_buf;
	size_t len;
	FILE *f = fopen(path, "rb");

	if (!f) {
		perror(path);
		return 2;
	}
	len = fread(buf, 1, sizeof(image_buf), f);
	fclose(f);
	return sigmig_image_decode(buf, len, img, err, errlen) ? 1 : 0;
}

/* The union of fields follows si_code, 8-byte aligned on x86_64. */
static void print_records(const char *queue, const struct sigmig_queue *q,
			  uint32_t arch)
{
	size_t fields = arch == 3 /* EM_386 */ ? 12 : 16;
	int32_t signo, code, pid;
	uint32_t i, uid;

	for (i = 0; i < q->count; i++) {
		const uint8_t *b = q->entries[i].bytes;

		memcpy(&signo, b, 4);
		memcpy(&code, b + 8, 4);
		memcpy(&pid, b + fields, 4);
		memcpy(&uid, b + fields + 4, 4);
		printf("%s %d %d %d %u\n", queue, signo, code, pid, uid);
	}
}

static int records(const char *path)
{
	struct sigmig_image img;
	char queue[32], err[256];
	uint32_t i;
	int ret = decode_file(path, &img, err, sizeof(err));

	if (ret == 1)
		fprintf(stderr, "sigmig-ctl: %s: %s\n", path, err);
	if (ret)
		return ret;
	for (i = 0; i < img.nthreads; i++) {
		snprintf(queue, sizeof(queue), "thread.%u", img.threads[i].index);
		print_records(queue, &img.threads[i].pending, img.arch);
	}
	print_records("shared", &img.shared, img.arch);
	sigmig_image_free(&img);
	return 0;
}

static int inspect(const char *path)
{
	struct sigmig_image img;
	char err[256];
	uint32_t i, timer_entries = 0;
	int ret = decode_file(path, &img, err, sizeof(err));

	if (ret == 1)
		printf("{\"valid\":false,\"error\":\"%s\"}\n", err);
	if (ret)
		return ret;
	for (i = 0; i < img.shared.count; i++)
		timer_entries += img.shared.entries[i].bytes[8] == 0xfe;	/* SI_TIMER */
	printf("{\"valid\":true,\"program\":\"%s\",\"pid\":%d,\"total\":%llu,\"shared\":%u,\"shared_timer_entries\":%u,\"timers\":%u,\"threads\":[",
	       img.program, img.pid, (unsigned long long)sigmig_image_pending_total(&img),
	       img.shared.count, timer_entries, img.ntimers);
	for (i = 0; i < img.nthreads; i++)
		printf("%s{\"index\":%u,\"pending\":%u,\"blocked\":\"%016llx\"}", i ? "," : "",
		       img.threads[i].index, img.threads[i].pending.count,
		       (unsigned long long)img.threads[i].blocked);
	printf("]}\n");
	sigmig_image_free(&img);
	return 0;
}

int main(int argc, char **argv)
{
	struct sigmig_ctl_reply reply;
	const char *out = NULL;
	int timeout = 120000, i, ret;
	FILE *f;

	if (argc == 5 && !strcmp(argv[1], "--xor"))
		return xor_byte(argv[2], atol(argv[3]), (int)strtol(argv[4], NULL, 0));
	if (argc >= 4 && !strcmp(argv[1], "--craft"))
		return craft(argv[2], argc - 3, argv + 3);
	if (argc == 3 && !strcmp(argv[1], "--inspect"))
		return inspect(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--records"))
		return records(argv[2]);
	if (argc < 3) {
		fprintf(stderr, "usage: sigmig-ctl SOCKET VERB [--out FILE] [--timeout MS]\n");
		return 2;
	}
	for (i = 3; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--out"))
			out = argv[i + 1];
		else if (!strcmp(argv[i], "--timeout"))
			timeout = atoi(argv[i + 1]);
	}
	ret = sigmig_ctl_request(argv[1], argv[2], timeout, &reply);
	if (ret) {
		fprintf(stderr, "sigmig-ctl: %s %s: %s\n", argv[1], argv[2], strerror(-ret));
		return 2;
	}
	printf("%s\n", reply.line);
	if (out && reply.image_len) {
		f = fopen(out, "wb");
		if (!f || fwrite(reply.image, 1, reply.image_len, f) != reply.image_len ||
		    fclose(f)) {
			perror(out);
			sigmig_ctl_reply_free(&reply);
			return 2;
		}
	}
	ret = sigmig_ctl_reply_ok(&reply) ? 0 : 1;
	sigmig_ctl_reply_free(&reply);
	return ret;
}
