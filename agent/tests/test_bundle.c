// SPDX-License-Identifier: GPL-2.0
/*
 * The bundle codec: a directory tree packs and unpacks byte for byte; a
 * bundle with any byte flipped, cut short, or naming a path outside its
 * directories writes nothing at all.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sigmig/crc32c.h>

#include "bundle.h"
#include "tap.h"

static const char *const dirs[] = { "criu", "signals", NULL };

static void put(const char *dir, const char *name, const char *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fwrite(data, 1, len, f);
		fclose(f);
	}
}

static bool same_file(const char *a, const char *b)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", a, b);
	return system(cmd) == 0;
}

static bool empty_dir(const char *path)
{
	struct dirent *de;
	bool empty = true;
	DIR *d = opendir(path);

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			empty = false;
	if (d)
		closedir(d);
	return empty;
}

static void clear(const char *root)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/*", root);
	if (system(cmd))
		return;
}

/* The CRC recomputed, so that only the structure is judged. */
static void reseal(uint8_t *b, size_t len)
{
	uint32_t crc = sigmig_crc32c(b, len - 4);

	memcpy(b + len - 4, &crc, 4);
}

static void hostile_names(uint8_t *b, size_t len, const char *out)
{
	static const char *const names[] = { "../x/evil", "criu/../../e", "/etc/passw",
					     "criu/.hidden", "criu", "a/b/c", "cr u/x" };
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		uint8_t *c = malloc(len + 64);
		size_t nlen = strlen(names[i]), first = 8, oldlen = b[first];
		size_t clen = len - oldlen + nlen;

		memcpy(c, b, first);
		c[first] = (uint8_t)nlen;
		c[first + 1] = 0;
		memcpy(c + first + 2, names[i], nlen);
		memcpy(c + first + 2 + nlen, b + first + 2 + oldlen, len - first - 2 - oldlen);
		reseal(c, clen);
		ok(bundle_unpack(c, clen, out, err, sizeof(err)) == -1 && empty_dir(out),
		   "a file named \"%s\" is refused, nothing written (%s)", names[i], err);
		clear(out);
		free(c);
	}
}

int main(void)
{
	char in[] = "/tmp/test-bundle-in.XXXXXX", out[] = "/tmp/test-bundle-out.XXXXXX";
	char path[512], path2[512], err[256], big[70000];
	unsigned int flips = 0, refused = 0;
	uint8_t *b = NULL;
	size_t len = 0, i;

	if (!mkdtemp(in) || !mkdtemp(out))
		return 1;
	snprintf(path, sizeof(path), "%s/criu", in);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/signals", in);
	mkdir(path, 0700);
	memset(big, 'x', sizeof(big));
	put(in, "criu/core-1.img", big, sizeof(big));
	put(in, "criu/empty.img", "", 0);
	put(in, "signals/shared.bin", "0123456789", 10);

	ok(bundle_pack(in, dirs, &b, &len, err, sizeof(err)) == 0, "packs a tree (%zu bytes)", len);
	ok(bundle_unpack(b, len, out, err, sizeof(err)) == 0, "unpacks it");
	snprintf(path, sizeof(path), "%s/criu/core-1.img", in);
	snprintf(path2, sizeof(path2), "%s/criu/core-1.img", out);
	ok(same_file(path, path2), "a 70 KB file comes back byte for byte");
	snprintf(path, sizeof(path), "%s/criu/empty.img", out);
	ok(access(path, F_OK) == 0, "an empty file comes back");
	ok(bundle_unpack(b, len, out, err, sizeof(err)) == -1,
	   "unpacking over existing files is refused (%s)", err);
	clear(out);

	for (i = 0; i < len; i += len / 97 + 1) {
		b[i] ^= 0x40;
		flips++;
		if (bundle_unpack(b, len, out, err, sizeof(err)) == -1 && empty_dir(out))
			refused++;
		b[i] ^= 0x40;
		clear(out);
	}
	ok(refused == flips, "%u of %u bundles with one byte flipped refused, nothing written",
	   refused, flips);
	for (i = 0, refused = 0; i < len; i += len / 31 + 1)
		if (bundle_unpack(b, i, out, err, sizeof(err)) == -1 && empty_dir(out))
			refused++;
	ok(refused == (unsigned int)((len - 1) / (len / 31 + 1) + 1),
	   "every truncated bundle refused, nothing written");
	hostile_names(b, len, out);
	free(b);

	put(in, "criu/bad name", "x", 1);
	ok(bundle_pack(in, dirs, &b, &len, err, sizeof(err)) == -1,
	   "a file whose name a bundle cannot hold is not packed (%s)", err);
	snprintf(path, sizeof(path), "rm -rf '%s' '%s'", in, out);
	if (system(path))
		return 1;
	return tap_done();
}
