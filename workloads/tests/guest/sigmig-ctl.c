// SPDX-License-Identifier: GPL-2.0
/*
 * sigmig-ctl SOCKET VERB [--out FILE] [--timeout MS]: one control request;
 * prints the reply's JSON line, writes image bytes (DUMP/PEEK) to FILE.
 * Exit status: 0 if the reply says "ok":true, 1 if it says false, 2 on a
 * transport error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sigmig/ctl.h>

int main(int argc, char **argv)
{
	const char *out = NULL;
	int timeout = 120000, i, ret;
	uint8_t *payload = NULL;
	size_t len = 0;
	char *json = NULL;
	FILE *f;

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
	ret = sigmig_ctl_request(argv[1], argv[2], &json, &payload, &len, timeout);
	if (ret) {
		fprintf(stderr, "sigmig-ctl: %s %s: %s\n", argv[1], argv[2], strerror(-ret));
		return 2;
	}
	printf("%s\n", json);
	if (out && len) {
		f = fopen(out, "wb");
		if (!f || fwrite(payload, 1, len, f) != len || fclose(f)) {
			perror(out);
			return 2;
		}
	}
	ret = strstr(json, "\"ok\":true") ? 0 : 1;
	free(json);
	free(payload);
	return ret;
}
