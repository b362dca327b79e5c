// SPDX-License-Identifier: GPL-2.0
/*
 * Read a process's pending signals from inside it, without dequeuing them:
 * seize every thread (ptrace), infect the process with a compel parasite,
 * have it peek each thread's private queue (and, from the leader, the
 * process-wide queue once) through an SFD_RAW signalfd, cure, detach.
 * The target runs on exactly as before, its signals still pending.
 *
 *   sigmig-peek-parasite [--out DIR] [--max-records N] [-v] PID
 *
 * stdout: "private TID N crc32 X" for each thread, "shared N crc32 X",
 * then "total N records, T us seized" (T: from the first seize to the
 * last detach). With --out, DIR/private.TID.bin and DIR/shared.bin get the
 * 128-byte records, in queue order.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <compel/log.h>
#include <compel/infect-rpc.h>
#include <compel/infect.h>

#include "peek-args.h"
#include "parasite-blob.h"

#define MAX_THREADS	1024

struct thread {
	int tid;
	int state;		/* compel_stop_task()'s, for compel_resume_task() */
};

static unsigned int log_level = COMPEL_LOG_ERROR;

static void log_compel(unsigned int lvl, const char *fmt, va_list parms)
{
	if (lvl > log_level)
		return;
	fprintf(stderr, "compel[%u]: ", lvl);
	vfprintf(stderr, fmt, parms);
}

static uint32_t crc32(const unsigned char *p, size_t len)
{
	uint32_t crc = 0xffffffff;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
	}
	return ~crc;
}

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int seized(const struct thread *th, int nr, int tid)
{
	int i;

	for (i = 0; i < nr; i++)
		if (th[i].tid == tid)
			return 1;
	return 0;
}

/*
 * Seize the threads of @pid, leader first, until a pass over
 * /proc/PID/task finds none left to seize: a running thread may have
 * created one meanwhile. Returns the number seized, or -1.
 */
static int seize_threads(int pid, struct thread *th)
{
	char path[64];
	struct dirent *de;
	int nr = 0, added;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	do {
		added = 0;
		dir = opendir(path);
		if (!dir) {
			perror(path);
			return -1;
		}
		while ((de = readdir(dir))) {
			int tid = atoi(de->d_name);

			if (tid <= 0 || seized(th, nr, tid))
				continue;
			if (nr == MAX_THREADS) {
				fprintf(stderr, "more than %d threads\n", MAX_THREADS);
				closedir(dir);
				return -1;
			}
			/* the leader goes first: th[0] is the one compel infects */
			if (!nr && tid != pid) {
				th[nr].tid = pid;
				th[nr].state = compel_stop_task(pid);
				if (th[nr].state < 0)
					goto fail;
				nr++;
				if (seized(th, nr, tid))
					continue;
			}
			th[nr].tid = tid;
			th[nr].state = compel_stop_task(tid);
			if (th[nr].state < 0)
				goto fail;
			nr++;
			added = 1;
		}
		closedir(dir);
	} while (added);
	return nr;
fail:
	fprintf(stderr, "cannot seize thread %d of %d\n", th[nr].tid, pid);
	closedir(dir);
	return -1;
}

static void resume_threads(struct thread *th, int nr)
{
	int i;

	for (i = 0; i < nr; i++)
		if (compel_resume_task(th[i].tid, th[i].state, th[i].state))
			fprintf(stderr, "cannot resume thread %d\n", th[i].tid);
}

static int save(const char *dir, const char *name, const void *buf, size_t len)
{
	char path[4096];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return -1;
	}
	ret = fwrite(buf, 1, len, f) == len ? 0 : -1;
	if (fclose(f))
		ret = -1;
	if (ret)
		fprintf(stderr, "%s: write failed\n", path);
	return ret;
}

/* Report what the parasite left in @a for thread @tid, save it under @out. */
static int report(const struct peek_args *a, int tid, const char *out)
{
	size_t lp = (size_t)a->nr_private * PEEK_RECORD_SIZE;
	size_t ls = (size_t)a->nr_shared * PEEK_RECORD_SIZE;
	char name[64];

	if (a->tid != tid) {
		fprintf(stderr, "the parasite ran in thread %d, not %d\n", a->tid, tid);
		return -1;
	}
	if (a->err) {
		fprintf(stderr, "thread %d: the parasite failed: %s\n", tid, strerror(-a->err));
		return -1;
	}
	if (a->truncated) {
		fprintf(stderr, "thread %d: more than %u records pending, raise --max-records\n",
			tid, a->max_records);
		return -1;
	}
	printf("private %d %u crc32 %08x\n", tid, a->nr_private, crc32(a->rec, lp));
	if (a->want_shared)
		printf("shared %u crc32 %08x\n", a->nr_shared, crc32(a->rec + lp, ls));
	if (!out)
		return 0;
	snprintf(name, sizeof(name), "private.%d.bin", tid);
	if (save(out, name, a->rec, lp))
		return -1;
	if (a->want_shared && save(out, "shared.bin", a->rec + lp, ls))
		return -1;
	return 0;
}

/*
 * Run the parasite in every seized thread: the leader through the daemon,
 * which then stops (as CRIU does before dumping threads), so that its
 * SIGCHLD handler, which reaps any stop of the tracees, does not take the
 * trap compel_run_in_thread() waits for in each other thread.
 */
static int peek_threads(struct parasite_ctl *ctl, struct peek_args *a,
			uint32_t max, struct thread *th, int nr,
			const char *out, unsigned long *total)
{
	struct parasite_thread_ctl *tctl;
	int i, ret;

	for (i = 0; i < nr; i++) {
		memset(a, 0, sizeof(*a));
		a->max_records = max;
		a->want_shared = i == 0;
		if (i == 0) {
			ret = compel_rpc_call_sync(PEEK_CMD, ctl);
			if (!ret && compel_stop_daemon(ctl)) {
				fprintf(stderr, "compel_stop_daemon() failed\n");
				return -1;
			}
		} else {
			tctl = compel_prepare_thread(ctl, th[i].tid);
			if (!tctl)
				return -1;
			ret = compel_run_in_thread(tctl, PEEK_CMD);
			compel_release_thread(tctl);
		}
		if (ret) {
			fprintf(stderr, "thread %d: the parasite command failed (%d)\n",
				th[i].tid, ret);
			return -1;
		}
		if (report(a, th[i].tid, out))
			return -1;
		*total += a->nr_private + a->nr_shared;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: sigmig-peek-parasite [--out DIR] [--max-records N] [-v] PID\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", 1, 0, 'o' }, { "max-records", 1, 0, 'm' },
		{ "verbose", 0, 0, 'v' }, { 0, 0, 0, 0 }
	};
	static struct thread th[MAX_THREADS];
	struct parasite_ctl *ctl;
	struct peek_args *a;
	unsigned long total = 0, size;
	const char *out = NULL;
	uint32_t max = 4096;
	long long t0, t1;
	int c, pid, nr, ret = 1;

	while ((c = getopt_long(argc, argv, "v", opts, NULL)) != -1) {
		if (c == 'o')
			out = optarg;
		else if (c == 'm')
			max = (uint32_t)strtoul(optarg, NULL, 0);
		else if (c == 'v')
			log_level = COMPEL_LOG_DEBUG;
		else
			return usage();
	}
	if (optind != argc - 1 || !max || max > (1U << 20))
		return usage();
	pid = atoi(argv[optind]);
	if (pid <= 0)
		return usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	compel_log_init(log_compel, log_level);

	t0 = now_us();
	nr = seize_threads(pid, th);
	if (nr < 0)
		return 1;
	ctl = compel_prepare(pid);
	if (!ctl) {
		fprintf(stderr, "compel_prepare(%d) failed\n", pid);
		goto resume;
	}
	compel_infect_ctx(ctl)->log_fd = STDERR_FILENO;
	parasite_setup_c_header(ctl);
	size = sizeof(*a) + (unsigned long)max * PEEK_RECORD_SIZE;
	if (compel_infect(ctl, nr, size)) {
		fprintf(stderr, "compel_infect(%d) failed\n", pid);
		/* what compel_infect() left behind, as compel's own test does */
		if (compel_cure(ctl))
			fprintf(stderr, "compel_cure(%d) failed\n", pid);
		goto resume;
	}
	a = compel_parasite_args_s(ctl, size);
	ret = peek_threads(ctl, a, max, th, nr, out, &total) ? 1 : 0;
	if (compel_cure(ctl)) {
		fprintf(stderr, "compel_cure(%d) failed\n", pid);
		ret = 1;
	}
resume:
	resume_threads(th, nr);
	t1 = now_us();
	if (!ret)
		printf("total %lu records, %d threads, %lld us seized\n", total, nr, t1 - t0);
	return ret;
}
