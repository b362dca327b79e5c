// SPDX-License-Identifier: GPL-2.0
/*
 * held_set.c: the commit delta loses exactly the records the copy holds,
 * by content, one for one, in the same queue only; timer records never
 * match; files that are not whole records are refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "held_set.h"
#include "tap.h"

#define SI_TIMER_CODE	(-2)

static void record(uint8_t *rec, int32_t signo, int32_t code, int32_t value)
{
	memset(rec, 0, HELD_RECORD_BYTES);
	memcpy(rec, &signo, sizeof(signo));
	memcpy(rec + 8, &code, sizeof(code));
	memcpy(rec + 24, &value, sizeof(value));
}

/* Writes @n records: pairs (signo, value) with si_code SI_QUEUE, or SI_TIMER for signo < 0. */
static void put(const char *path, const int32_t *pairs, int n)
{
	uint8_t rec[HELD_RECORD_BYTES];
	FILE *f = fopen(path, "w");
	int i;

	for (i = 0; f && i < n; i++) {
		int32_t signo = pairs[2 * i];

		record(rec, signo < 0 ? -signo : signo, signo < 0 ? SI_TIMER_CODE : -1,
		       pairs[2 * i + 1]);
		fwrite(rec, sizeof(rec), 1, f);
	}
	if (f)
		fclose(f);
}

/* The values of the records left in @path, in order, as "v,v,v". */
static void values(const char *path, char *out, size_t len)
{
	uint8_t rec[HELD_RECORD_BYTES];
	FILE *f = fopen(path, "r");
	size_t used = 0;
	int32_t v;

	out[0] = '\0';
	while (f && fread(rec, sizeof(rec), 1, f) == 1 && used < len) {
		memcpy(&v, rec + 24, sizeof(v));
		used += (size_t)snprintf(out + used, len - used, "%s%d", used ? "," : "", v);
	}
	if (f)
		fclose(f);
}

/* The delta @name (@n pairs) less what late/@name holds: the count, the values kept in @got. */
static long filter_queue(const char *dir, const char *name, const int32_t *pairs, int n,
			 char *got, size_t len)
{
	char held[256], delta[256], why[256];
	struct held_set s;
	long left;

	snprintf(held, sizeof(held), "%s/late", dir);
	snprintf(delta, sizeof(delta), "%s/%s", dir, name);
	put(delta, pairs, n);
	if (held_set_load(&s, held, name, why, sizeof(why)))
		return -2;
	left = held_set_filter(&s, delta, why, sizeof(why));
	held_set_free(&s);
	values(delta, got, len);
	return left;
}

int main(void)
{
	char dir[] = "/tmp/test_held_set.XXXXXX", held[256], delta[256], got[256], why[256];
	const int32_t copy_shared[] = { 34, 1, 35, 2, -34, 0 };
	const int32_t copy_private[] = { 36, 3, 34, 1 };
	const int32_t shared[] = { 35, 2, 34, 1, 40, 7, 34, 1, 34, 1, -34, 0, 36, 3, 41, 8 };
	const int32_t private2[] = { 36, 3, 34, 1, 34, 1 };
	const int32_t private3[] = { 36, 3, 35, 2 };
	struct held_set s;
	long n;

	printf("TAP version 13\n");
	if (!mkdtemp(dir))
		return 1;
	snprintf(held, sizeof(held), "%s/late", dir);
	mkdir(held, 0700);
	put(strcat(strcpy(got, held), "/shared.bin"), copy_shared, 3);
	put(strcat(strcpy(got, held), "/private.2.bin"), copy_private, 2);
	ok(!held_set_load(&s, held, "shared.bin", why, sizeof(why)) && s.nr == 2,
	   "the copy's shared records load, its timer record left out (%zu)", s.nr);
	snprintf(delta, sizeof(delta), "%s/shared.bin", dir);
	put(delta, shared, 8);
	n = held_set_filter(&s, delta, why, sizeof(why));
	values(delta, got, sizeof(got));
	ok(n == 2 && !strcmp(got, "7,1,1,0,3,8"),
	   "each held record leaves one equal delta record of its queue out, timers never "
	   "(left out %ld, kept %s)", n, got);
	n = held_set_filter(&s, delta, why, sizeof(why));
	values(delta, got, sizeof(got));
	ok(n == 0 && !strcmp(got, "7,1,1,0,3,8"), "a held record is matched once only (%s)", got);
	held_set_free(&s);

	n = filter_queue(dir, "private.2.bin", private2, 3, got, sizeof(got));
	ok(n == 2 && !strcmp(got, "1"), "a thread's queue against its own held records "
	   "(left out %ld, kept %s)", n, got);
	n = filter_queue(dir, "private.3.bin", private3, 2, got, sizeof(got));
	ok(n == 0 && !strcmp(got, "3,2"), "equal records held in another thread's queue or "
	   "the shared one are other signals: none left out (%ld, kept %s)", n, got);

	ok(!held_set_load(&s, "/nonexistent/late", "shared.bin", why, sizeof(why)) && s.nr == 0,
	   "no directory: nothing held");
	ok(held_set_filter(&s, delta, why, sizeof(why)) == 0, "an empty set changes nothing");
	ok(held_set_load(&s, held, "../late/shared.bin", why, sizeof(why)) == -1 &&
	   held_set_load(&s, held, "shared", why, sizeof(why)) == -1,
	   "a queue name is a records file's name, no path: %s", why);

	put(strcat(strcpy(got, held), "/bad.bin"), copy_shared, 1);
	if (truncate(got, 100))
		return 1;
	ok(held_set_load(&s, held, "bad.bin", why, sizeof(why)) == -1 &&
	   strstr(why, "not whole records"),
	   "a file that is not whole records is refused: %s", why);
	snprintf(got, sizeof(got), "rm -rf '%s'", dir);
	if (system(got))
		return 1;
	return tap_done();
}
