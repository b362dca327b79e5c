// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sigmig/crc32c.h>

#include "bundle.h"
#include "why.h"

#define MAGIC		"SGMB"
#define VERSION		1u
#define HEADER		8
#define TRAILER		4
#define NAME_MAX_LEN	255

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* One path component: no '.', '..' or hidden name, nothing but name_char. */
static bool component_valid(const char *p, size_t len)
{
	size_t i;

	if (!len || p[0] == '.')
		return false;
	for (i = 0; i < len; i++)
		if (!name_char(p[i]))
			return false;
	return true;
}

int bundle_name_valid(const char *name, size_t len)
{
	const char *slash = memchr(name, '/', len);

	if (!slash || len > NAME_MAX_LEN)
		return 0;
	return component_valid(name, (size_t)(slash - name)) &&
	       component_valid(slash + 1, len - (size_t)(slash - name) - 1);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
	int i;

	for (i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	int i;

	for (i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

struct packer {
	uint8_t *data;
	size_t len, cap;
};

static int reserve(struct packer *pk, size_t more)
{
	size_t cap = pk->cap ? pk->cap : 65536;
	uint8_t *p;

	if (more > SIZE_MAX / 2 - pk->len)
		return -1;
	while (cap < pk->len + more)
		cap *= 2;
	if (cap == pk->cap)
		return 0;
	p = realloc(pk->data, cap);
	if (!p)
		return -1;
	pk->data = p;
	pk->cap = cap;
	return 0;
}

static int read_all(int fd, uint8_t *p, size_t n)
{
	ssize_t r;

	while (n) {
		r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int pack_file(struct packer *pk, const char *path, const char *name,
		     char *err, size_t errlen)
{
	size_t nlen = strlen(name);
	struct stat st;
	int fd, ret = -1;

	if (!bundle_name_valid(name, nlen))
		return why_fail(err, errlen, "%s: not a name a bundle holds", name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		why_fail(err, errlen, "%s: %s", path, fd < 0 ? strerror(errno) : "not a regular file");
		goto out;
	}
	if (reserve(pk, 2 + nlen + 8 + (size_t)st.st_size)) {
		why_fail(err, errlen, "%s: out of memory", path);
		goto out;
	}
	put16(pk->data + pk->len, (uint16_t)nlen);
	memcpy(pk->data + pk->len + 2, name, nlen);
	put_le(pk->data + pk->len + 2 + nlen, (uint64_t)st.st_size, 8);
	if (read_all(fd, pk->data + pk->len + 10 + nlen, (size_t)st.st_size)) {
		why_fail(err, errlen, "%s: short read", path);
		goto out;
	}
	pk->len += 10 + nlen + (size_t)st.st_size;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

static int pack_dir(struct packer *pk, const char *root, const char *dir,
		    unsigned int *files, char *err, size_t errlen)
{
	char path[4096], name[NAME_MAX_LEN + 1];
	struct dirent *de;
	int ret = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", root, dir);
	d = opendir(path);
	if (!d)
		return why_fail(err, errlen, "%s: %s", path, strerror(errno));
	while (!ret && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (++*files > BUNDLE_FILES_MAX) {
			ret = why_fail(err, errlen, "more than %d files", BUNDLE_FILES_MAX);
			break;
		}
		snprintf(path, sizeof(path), "%s/%s/%s", root, dir, de->d_name);
		if (snprintf(name, sizeof(name), "%s/%s", dir, de->d_name) >= (int)sizeof(name))
			ret = why_fail(err, errlen, "%s: name too long", de->d_name);
		else
			ret = pack_file(pk, path, name, err, errlen);
	}
	closedir(d);
	return ret;
}

int bundle_pack(const char *root, const char *const *dirs, uint8_t **out,
		size_t *len, char *err, size_t errlen)
{
	struct packer pk = { 0 };
	unsigned int files = 0;

	if (reserve(&pk, HEADER))
		return why_fail(err, errlen, "out of memory");
	memcpy(pk.data, MAGIC, 4);
	put_le(pk.data + 4, VERSION, 4);
	pk.len = HEADER;
	for (; *dirs; dirs++)
		if (pack_dir(&pk, root, *dirs, &files, err, errlen))
			goto fail;
	if (reserve(&pk, 2 + TRAILER)) {
		why_fail(err, errlen, "out of memory");
		goto fail;
	}
	put16(pk.data + pk.len, 0);
	pk.len += 2;
	put_le(pk.data + pk.len, sigmig_crc32c(pk.data, pk.len), 4);
	*out = pk.data;
	*len = pk.len + TRAILER;
	return 0;
fail:
	free(pk.data);
	return -1;
}

/* @path "ROOT/DIR/FILE": DIR created when missing, FILE must be new. */
static int write_file(const char *path, const uint8_t *p, size_t n, char *err,
		      size_t errlen)
{
	char dir[4096];
	ssize_t w;
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	if (mkdir(dir, 0700) && errno != EEXIST)
		return why_fail(err, errlen, "%s: %s", dir, strerror(errno));
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return why_fail(err, errlen, "%s: %s", path, strerror(errno));
	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			return why_fail(err, errlen, "%s: %s", path, strerror(errno));
		}
		p += w;
		n -= (size_t)w;
	}
	return close(fd) ? why_fail(err, errlen, "%s: %s", path, strerror(errno)) : 0;
}

/* Walks the entries; with @root NULL only checks them. */
static int walk(const uint8_t *data, size_t len, const char *root, char *err,
		size_t errlen)
{
	size_t off = HEADER, end = len - TRAILER;
	unsigned int files = 0;
	uint64_t size;
	uint16_t nlen;
	char name[NAME_MAX_LEN + 1], path[4096];

	for (;;) {
		if (end - off < 2)
			return why_fail(err, errlen, "truncated at byte %zu", off);
		nlen = (uint16_t)get_le(data + off, 2);
		off += 2;
		if (!nlen)
			break;
		if (++files > BUNDLE_FILES_MAX)
			return why_fail(err, errlen, "more than %d files", BUNDLE_FILES_MAX);
		if (end - off < (size_t)nlen + 8 || !bundle_name_valid((const char *)data + off, nlen))
			return why_fail(err, errlen, "bad file name at byte %zu", off);
		memcpy(name, data + off, nlen);
		name[nlen] = '\0';
		size = get_le(data + off + nlen, 8);
		off += (size_t)nlen + 8;
		if (size > end - off)
			return why_fail(err, errlen, "%s: size %llu past the end", name,
				    (unsigned long long)size);
		if (root) {
			snprintf(path, sizeof(path), "%s/%s", root, name);
			if (write_file(path, data + off, (size_t)size, err, errlen))
				return -1;
		}
		off += (size_t)size;
	}
	if (off != end)
		return why_fail(err, errlen, "%zu bytes after the last file", end - off);
	return 0;
}

int bundle_unpack(const uint8_t *data, size_t len, const char *root,
		  char *err, size_t errlen)
{
	uint32_t crc;

	if (len < HEADER + 2 + TRAILER || memcmp(data, MAGIC, 4))
		return why_fail(err, errlen, "not a bundle (%zu bytes, no SGMB magic)", len);
	if (get_le(data + 4, 4) != VERSION)
		return why_fail(err, errlen, "bundle version %u, this agent reads %u",
			    (unsigned int)get_le(data + 4, 4), VERSION);
	crc = sigmig_crc32c(data, len - TRAILER);
	if (crc != (uint32_t)get_le(data + len - TRAILER, 4))
		return why_fail(err, errlen, "CRC-32C mismatch: computed %08x, bundle says %08x",
			    crc, (unsigned int)get_le(data + len - TRAILER, 4));
	if (walk(data, len, NULL, err, errlen))
		return -1;
	return walk(data, len, root, err, errlen);
}
