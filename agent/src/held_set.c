// SPDX-License-Identifier: GPL-2.0
/*
 * Matching by content, not by count: which records of the original's last
 * queues the copy already holds cannot be told from per-queue counts, as
 * CRIU's dump and restore do not promise that the records they carry are
 * the first ones of each queue. Each record is one signal: its bytes
 * (sender, payload, code) tell it apart, and two equal records are two
 * signals, so a held record stands in for one delta record only, and only
 * in its own queue: CRIU puts each thread's records back into that thread
 * (same tid in the copy's PID namespace) and the shared ones into the
 * shared queue, and the same signal sent alike to two threads (tgkill of
 * SIGURG from outside the namespace: equal bytes) is two signals.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "held_set.h"
#include "why.h"

#define SI_CODE_OFFSET	8
#define CODE_SI_TIMER	(-2)

static int is_timer(const uint8_t *rec)
{
	int32_t code;

	memcpy(&code, rec + SI_CODE_OFFSET, sizeof(code));
	return code == CODE_SI_TIMER;
}

static int cmp_record(const void *a, const void *b)
{
	return memcmp(a, b, HELD_RECORD_BYTES);
}

/* Appends the non-timer records of @path to @s->rec (@cap records of room). */
static int load_file(struct held_set *s, size_t *cap, const char *path, char *why,
		     size_t len)
{
	uint8_t rec[HELD_RECORD_BYTES], *grown;
	FILE *f = fopen(path, "re");
	size_t got;

	if (!f)
		return why_fail(why, len, "%s: %s", path, strerror(errno));
	while ((got = fread(rec, 1, sizeof(rec), f)) == sizeof(rec)) {
		if (is_timer(rec))
			continue;
		if (s->nr == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			grown = realloc(s->rec, *cap * HELD_RECORD_BYTES);
			if (!grown) {
				fclose(f);
				return why_fail(why, len, "out of memory");
			}
			s->rec = grown;
		}
		memcpy(s->rec + s->nr++ * HELD_RECORD_BYTES, rec, sizeof(rec));
	}
	fclose(f);
	if (got)
		return why_fail(why, len, "%s: not whole records", path);
	return 0;
}

static int has_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);

	return n > k && !strcmp(name + n - k, suffix);
}

int held_set_load(struct held_set *s, const char *dir, const char *queue,
		  char *why, size_t len)
{
	char path[4096];
	struct stat st;
	size_t cap = 0;
	int ret = 0;

	memset(s, 0, sizeof(*s));
	if (!has_suffix(queue, ".bin") || strchr(queue, '/'))
		return why_fail(why, len, "%s: not a queue's records file", queue);
	snprintf(path, sizeof(path), "%s/%s", dir, queue);
	if (stat(path, &st) && errno == ENOENT)
		return 0;
	ret = load_file(s, &cap, path, why, len);
	if (!ret && s->nr) {
		qsort(s->rec, s->nr, HELD_RECORD_BYTES, cmp_record);
		s->taken = calloc(s->nr, 1);
		if (!s->taken)
			ret = why_fail(why, len, "out of memory");
	}
	if (ret)
		held_set_free(s);
	return ret;
}

/* Takes a record of @s equal to @rec: 1, or 0 when none is left. */
static int take(struct held_set *s, const uint8_t *rec)
{
	size_t lo = 0, hi = s->nr, i;

	while (lo < hi) {	/* the first record not below @rec */
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_record(s->rec + mid * HELD_RECORD_BYTES, rec) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < s->nr && !cmp_record(s->rec + i * HELD_RECORD_BYTES, rec); i++)
		if (!s->taken[i]) {
			s->taken[i] = 1;
			return 1;
		}
	return 0;
}

long held_set_filter(struct held_set *s, const char *path, char *why, size_t len)
{
	uint8_t rec[HELD_RECORD_BYTES];
	char tmp[4200];
	FILE *in, *out;
	long left_out = 0;
	size_t got;
	int bad = 0;

	if (!s->nr)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.filtered", path);
	in = fopen(path, "re");
	if (!in)
		return why_fail(why, len, "%s: %s", path, strerror(errno));
	out = fopen(tmp, "we");
	if (!out) {
		fclose(in);
		return why_fail(why, len, "%s: %s", tmp, strerror(errno));
	}
	while ((got = fread(rec, 1, sizeof(rec), in)) == sizeof(rec)) {
		if (take(s, rec))
			left_out++;
		else if (fwrite(rec, sizeof(rec), 1, out) != 1)
			bad = 1;
	}
	fclose(in);
	if (fclose(out) || bad || got || rename(tmp, path)) {
		remove(tmp);
		return why_fail(why, len, "%s: %s", path,
			    got ? "not whole records" : "cannot rewrite it");
	}
	return left_out;
}

void held_set_free(struct held_set *s)
{
	free(s->rec);
	free(s->taken);
	memset(s, 0, sizeof(*s));
}
