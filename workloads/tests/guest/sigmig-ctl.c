// SPDX-License-Identifier: GPL-2.0
/*
 * sigmig-ctl SOCKET VERB [--out FILE] [--timeout MS]: one control request;
 * prints the reply's JSON line, writes image bytes (DUMP/PEEK) to FILE.
 * Exit status: 0 if the reply says "ok":true, 1 if it says false, 2 on a
 * transport error.
 * sigmig-ctl --inspect IMAGE: decode an image file and print a JSON summary
 * (exit 1 and the decoder's reason if it is invalid).
 * sigmig-ctl --xor FILE OFFSET BYTE: XOR one byte of FILE in place (tests).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sigmig/ctl.h>
#include <sigmig/image.h>

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

static int inspect(const char *path)
{
	static uint8_t buf[64 << 20];
	struct sigmig_image img;
	char err[256];
	size_t len;
	uint32_t i, timer_entries = 0;
	FILE *f = fopen(path, "rb");

	if (!f) {
		perror(path);
		return 2;
	}
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (sigmig_image_decode(buf, len, &img, err, sizeof(err))) {
		printf("{\"valid\":false,\"error\":\"%s\"}\n", err);
		return 1;
	}
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
	if (argc == 3 && !strcmp(argv[1], "--inspect"))
		return inspect(argv[2]);
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
