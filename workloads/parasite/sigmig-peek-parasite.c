// SPDX-License-Identifier: GPL-2.0
/*
 * Read a process's pending signals from inside it: seize every thread
 * (ptrace), infect the process with a compel parasite, have it peek each
 * thread's private queue (and, from the leader, the process-wide queue
 * once) through an SFD_RAW signalfd, cure, detach. The target runs on
 * exactly as before, its signals still pending. With --drain the parasite
 * also dequeues what it peeked (the queues are then empty); with
 * --requeue DIR it writes the records of DIR back, each thread its own.
 *
 *   sigmig-peek-parasite [--out DIR] [--drain | --requeue DIR
 *                        [--requeue-with write|sigqueueinfo]] [--max-records N] [-v] PID
 *
 * --requeue-with sigqueueinfo: one rt_(tg)sigqueueinfo() per record, as on a
 * kernel without the batched write() (default: write()).
 *
 * stdout: "private TID N crc32 X" for each thread, "shared N crc32 X",
 * then "total N records, T us seized" (T: from the first seize to the
 * last detach). With --out, DIR/private.TID.bin and DIR/shared.bin get the
 * 128-byte records, in queue order. --requeue reads the same files.
 */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
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

static unsigned int cmd = PEEK_CMD;
static const char *requeue_dir;
static int by_sigqueueinfo;

/* @dir/@name into @buf (at most @max records): records read, or -1. */
static long load(const char *dir, const char *name, unsigned char *buf, uint32_t max)
{
	char path[4096];
	struct stat st;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT)
			return 0;	/* an empty queue */
		perror(path);
		return -1;
	}
	if (fstat(fileno(f), &st) || st.st_size % PEEK_RECORD_SIZE ||
	    (uint64_t)st.st_size > (uint64_t)max * PEEK_RECORD_SIZE) {
		fprintf(stderr, "%s: not whole records, or more than %u\n", path, max);
		fclose(f);
		return -1;
	}
	n = (long)(st.st_size / PEEK_RECORD_SIZE);
	if (n && fread(buf, PEEK_RECORD_SIZE, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "%s: short read\n", path);
		n = -1;
	}
	fclose(f);
	return n;
}

/* REQUEUE: thread @tid's records (and the shared ones) into @a. */
static int fill(struct peek_args *a, int tid, uint32_t max)
{
	char name[64];
	long np, ns = 0;

	snprintf(name, sizeof(name), "private.%d.bin", tid);
	np = load(requeue_dir, name, a->rec, max);
	if (np >= 0 && a->want_shared)
		ns = load(requeue_dir, "shared.bin", a->rec + np * PEEK_RECORD_SIZE,
			  max - (uint32_t)np);
	if (np < 0 || ns < 0)
		return -1;
	a->nr_private = (uint32_t)np;
	a->nr_shared = (uint32_t)ns;
	return 0;
}

/* Each record of @want once in @got: the same multiset of 128-byte records. */
static int same_records(const unsigned char *want, uint32_t nw,
			const unsigned char *got, uint32_t ng)
{
	unsigned char *taken;
	uint32_t i, j;
	int ok = nw == ng;

	taken = calloc(ng + 1, 1);
	for (i = 0; ok && taken && i < nw; i++) {
		for (j = 0; j < ng; j++)
			if (!taken[j] && !memcmp(want + (size_t)i * PEEK_RECORD_SIZE,
						 got + (size_t)j * PEEK_RECORD_SIZE,
						 PEEK_RECORD_SIZE))
				break;
		if (j == ng)
			ok = 0;
		else
			taken[j] = 1;
	}
	ok = ok && taken;
	free(taken);
	return ok;
}

/*
 * DRAIN: what was dequeued must be what was peeked (a signal sent to the
 * seized process in between would be one more); the peeked order is the
 * queue's.
 */
static int check_drained(const struct peek_args *a, int tid)
{
	const unsigned char *peeked = a->rec, *drained;
	size_t lp = (size_t)a->nr_private * PEEK_RECORD_SIZE;

	drained = a->rec + lp + (size_t)a->nr_shared * PEEK_RECORD_SIZE;
	if (!same_records(peeked, a->nr_private, drained, a->nr_drained_private) ||
	    !same_records(peeked + lp, a->nr_shared,
			  drained + (size_t)a->nr_drained_private * PEEK_RECORD_SIZE,
			  a->nr_drained_shared)) {
		fprintf(stderr, "thread %d: drained %u + %u records, peeked %u + %u: "
			"they differ\n", tid, a->nr_drained_private, a->nr_drained_shared,
			a->nr_private, a->nr_shared);
		return -1;
	}
	return 0;
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
	if (cmd == DRAIN_CMD && check_drained(a, tid))
		return -1;
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

/* compel_get_thread_regs()'s callback: compel keeps the registers itself. */
static int keep_regs(void *arg, user_regs_struct_t *regs, user_fpregs_struct_t *ext)
{
	(void)arg;
	(void)regs;
	(void)ext;
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
		a->max_records = cmd == DRAIN_CMD ? 2 * max : max;
		a->want_shared = i == 0;
		a->by_sigqueueinfo = (uint32_t)by_sigqueueinfo;
		if (cmd == REQUEUE_CMD && fill(a, th[i].tid, max))
			return -1;
		if (i == 0) {
			ret = compel_rpc_call_sync(cmd, ctl);
			if (!ret && compel_stop_daemon(ctl)) {
				fprintf(stderr, "compel_stop_daemon() failed\n");
				return -1;
			}
		} else {
			tctl = compel_prepare_thread(ctl, th[i].tid);
			if (!tctl)
				return -1;
			/*
			 * compel_prepare_thread() saves the general registers
			 * only, but the trap puts back the FPU/xstate ones too:
			 * from uninitialised memory, unless they are read
			 * first (as CRIU does): EINVAL, or a thread whose FPU
			 * state was silently replaced.
			 */
			ret = compel_get_thread_regs(tctl, keep_regs, NULL);
			if (!ret)
				ret = compel_run_in_thread(tctl, cmd);
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
	fprintf(stderr, "usage: sigmig-peek-parasite [--out DIR] [--drain | --requeue DIR "
		"[--requeue-with write|sigqueueinfo]] [--max-records N] [-v] PID\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", 1, 0, 'o' }, { "max-records", 1, 0, 'm' },
		{ "drain", 0, 0, 'd' }, { "requeue", 1, 0, 'r' },
		{ "requeue-with", 1, 0, 'w' },
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
		else if (c == 'd' && cmd == PEEK_CMD)
			cmd = DRAIN_CMD;
		else if (c == 'r' && cmd == PEEK_CMD) {
			cmd = REQUEUE_CMD;
			requeue_dir = optarg;
		} else if (c == 'w' && !strcmp(optarg, "sigqueueinfo"))
			by_sigqueueinfo = 1;
		else if (c == 'w' && !strcmp(optarg, "write"))
			by_sigqueueinfo = 0;
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
	/* DRAIN: the peeked records, then the dequeued ones */
	size = sizeof(*a) + (unsigned long)max * PEEK_RECORD_SIZE * (cmd == DRAIN_CMD ? 2 : 1);
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
