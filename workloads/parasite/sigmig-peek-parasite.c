// SPDX-License-Identifier: GPL-2.0
/*
 * Read a process's pending signals from inside it: seize every thread
 * (ptrace), infect the process with a compel parasite, have it peek each
 * thread's private queue (and, from the leader, the process-wide queue
 * once) through an SFD_RAW signalfd, cure, detach. The target runs on
 * exactly as before, its signals still pending. With --drain the parasite
 * also dequeues them; what is saved is what left the process, in queue
 * order (a signal that arrived between the peek and the dequeue goes
 * last). With --requeue DIR it writes the records of DIR back, each thread
 * its own, in front of anything the queue holds by then (which came
 * later), and peeks every queue to verify it.
 *
 *   sigmig-peek-parasite [--out DIR] [--drain [--seal] | --requeue DIR
 *                        [--requeue-with write|sigqueueinfo] [--behind]]
 *                        [--max-records N] [--thaw CG] [--freeze CG] [-v] PID
 *
 * --requeue-with sigqueueinfo: one rt_(tg)sigqueueinfo() per record, as on a
 * kernel without the batched write() (default: write()).
 * --behind: the records go behind what the queues hold (a commit delta
 * into a copy that holds the earlier ones), not in front.
 * --seal (with --drain): the parasite seals the process (SFD_IOC_SEAL)
 * before its drain, so that a signal sent after the drain fails with ESRCH
 * instead of being lost with the process; for the last read of an
 * original that is then killed. stdout gets "seal 0", or "seal -ERRNO"
 * on a kernel without it.
 *
 * --thaw CG / --freeze CG: CG is the target's cgroup (v2). A target held
 * frozen there cannot run the parasite: --thaw thaws CG once every thread
 * is seized (ptrace holds them from then on). --freeze freezes CG before
 * the threads are released, so that they go on being held, with no signal
 * sent to them, until the next tool (CRIU) takes over: SIGSTOP/SIGCONT
 * would queue a SIGCONT record in a process that blocks SIGCONT and flush
 * pending stop signals or a pending SIGCONT from its queues.
 *
 * stdout: "private TID N crc32 X" for each thread, "shared N crc32 X"
 * (REQUEUE: "requeued private|shared TID N late L merged M timers T arrived A
 * verified", T of the L late ones SI_TIMER records, A records that arrived
 * meanwhile and stand in front of the N), then
 * "total N records, T us seized" (T: from the first seize to the last
 * detach). With --out, DIR/private.TID.bin and DIR/shared.bin get the
 * 128-byte records, in queue order; TID is the thread's id in its own PID
 * namespace, so that a copy CRIU restored into a new one finds its
 * records. --requeue reads the same files; with --out (in front) it saves
 * there what each queue holds behind the records written: the ones found
 * queued first (CRIU's, in a copy it restored), put back.
 */
#include <dirent.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
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
#include "requeue-check.h"
#include "parasite-blob.h"

#define MAX_THREADS	1024

struct thread {
	int tid;		/* in our PID namespace: what we seize */
	int own_tid;		/* in the target's: what it calls itself */
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

/*
 * CRC-32 (IEEE), a table lookup per byte: it runs while the target is
 * seized, over every record (a bit at a time took a visible part of the
 * drain of 100k records under TCG).
 */
static uint32_t crc32(const unsigned char *p, size_t len)
{
	static uint32_t table[256];
	uint32_t crc = 0xffffffff, c;
	int i, k;

	if (!table[1]) {
		for (i = 0; i < 256; i++) {
			c = (uint32_t)i;
			for (k = 0; k < 8; k++)
				c = (c >> 1) ^ (0xedb88320 & -(c & 1));
			table[i] = c;
		}
	}
	while (len--)
		crc = (crc >> 8) ^ table[(crc ^ *p++) & 0xff];
	return ~crc;
}

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* The line of /proc/@pid/status that starts with @key, into @line; 0 or -1. */
static int status_line(int pid, const char *key, char *line, size_t len)
{
	char path[64];
	int ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, (int)len, f))
		if (!strncmp(line, key, strlen(key))) {
			ret = 0;
			break;
		}
	fclose(f);
	return ret;
}

/*
 * The tid thread @tid has in its own PID namespace (the last NSpid field):
 * records are filed under it, so that a process CRIU restored into a new
 * namespace finds its threads' records whatever tids it has out here.
 */
static int own_tid(int tid)
{
	char line[256], *last;
	int own = tid;

	if (!status_line(tid, "NSpid:", line, sizeof(line))) {
		last = strrchr(line, '\t');
		if (last)
			own = atoi(last + 1);
	}
	return own > 0 ? own : tid;
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
				th[nr].own_tid = own_tid(pid);
				th[nr].state = compel_stop_task(pid);
				if (th[nr].state < 0)
					goto fail;
				nr++;
				if (seized(th, nr, tid))
					continue;
			}
			th[nr].tid = tid;
			th[nr].own_tid = own_tid(tid);
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

static int write_file(const char *dir, const char *name, const char *val)
{
	return save(dir, name, val, strlen(val));
}

/* cgroup.events says "frozen 1": every task of @cg is held, ours included */
static int cgroup_frozen(const char *cg)
{
	char path[512], line[64];
	int frozen = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.events", cg);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strcmp(line, "frozen 1\n"))
			frozen = 1;
	fclose(f);
	return frozen;
}

/*
 * Freeze @cg and wait (5 s at most) until it is frozen. Our threads are
 * in ptrace stops, which count as frozen, so this takes no longer than
 * the kernel's bookkeeping.
 */
static int freeze_cgroup(const char *cg)
{
	int i;

	if (write_file(cg, "cgroup.freeze", "1"))
		return -1;
	for (i = 0; i < 5000; i++) {
		if (cgroup_frozen(cg) == 1)
			return 0;
		usleep(1000);
	}
	fprintf(stderr, "%s: not frozen after 5 s\n", cg);
	return -1;
}

static void resume_threads(struct thread *th, int nr)
{
	int i;

	for (i = 0; i < nr; i++)
		if (compel_resume_task(th[i].tid, th[i].state, th[i].state))
			fprintf(stderr, "cannot resume thread %d\n", th[i].tid);
}


static unsigned int cmd = PEEK_CMD;
static const char *requeue_dir;
static int by_sigqueueinfo;
static bool behind;	/* --behind */
static bool seal;	/* --seal */

/*
 * The args area, in --max-records: DRAIN the peeked records and the
 * dequeued ones; REQUEUE the records, the late ones (peeked and dequeued)
 * and the queues peeked afterwards.
 */
static unsigned int area_factor(void)
{
	return cmd == DRAIN_CMD ? 2 : cmd == REQUEUE_CMD ? 4 : 1;
}

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

/* The records --requeue writes into the @nr threads @th: stat()s of their files. */
static unsigned long records_to_requeue(const struct thread *th, int nr)
{
	char path[4096];
	unsigned long records = 0;
	struct stat st;
	int i;

	for (i = 0; i <= nr; i++) {
		if (i < nr)
			snprintf(path, sizeof(path), "%s/private.%d.bin", requeue_dir,
				 th[i].own_tid);
		else
			snprintf(path, sizeof(path), "%s/shared.bin", requeue_dir);
		if (!stat(path, &st))
			records += (unsigned long)st.st_size / PEEK_RECORD_SIZE;
	}
	return records;
}

/* The signals queued for the user of @pid ("SigQ: queued/limit"), or -1. */
static long queued_for_user(int pid)
{
	char line[256];
	long queued;

	if (status_line(pid, "SigQ:", line, sizeof(line)) ||
	    sscanf(line, "SigQ: %ld/", &queued) != 1)
		return -1;
	return queued;
}

/*
 * Every requeued record counts against the target's RLIMIT_SIGPENDING (the
 * count is its user's). A copy that holds its moved records gets the
 * commit delta behind them: more than the original ever held at once,
 * since the delta arrived after its drain. Past the limit the kernel
 * refuses a record with EAGAIN, after the ones before it went in. So the
 * limit is raised before the parasite runs (nothing is written if it
 * cannot be) and @saved is put back after: the program keeps the limit it
 * had, and until its queues drain below it a new send fails with EAGAIN,
 * as at any limit. The margin is for senders that queue meanwhile.
 */
#define SIGPENDING_MARGIN	1024

static int make_room(int pid, unsigned long records, struct rlimit *saved, bool *raised)
{
	long queued = queued_for_user(pid);
	struct rlimit want;
	rlim_t need;

	*raised = false;
	if (prlimit(pid, RLIMIT_SIGPENDING, NULL, saved)) {
		fprintf(stderr, "prlimit(%d, RLIMIT_SIGPENDING): %s\n", pid, strerror(errno));
		return -1;
	}
	if (queued < 0) {
		fprintf(stderr, "cannot read SigQ of %d\n", pid);
		return -1;
	}
	need = (rlim_t)records + (rlim_t)queued + SIGPENDING_MARGIN;
	if (saved->rlim_cur == RLIM_INFINITY || saved->rlim_cur >= need)
		return 0;
	want.rlim_cur = need;
	want.rlim_max = saved->rlim_max != RLIM_INFINITY && saved->rlim_max < need ?
			need : saved->rlim_max;
	if (prlimit(pid, RLIMIT_SIGPENDING, &want, NULL)) {
		fprintf(stderr, "RLIMIT_SIGPENDING of %d is %llu and %lu records are to be "
			"requeued (%ld signals queued for its user): raising it to %llu "
			"failed: %s: nothing requeued\n", pid,
			(unsigned long long)saved->rlim_cur, records, queued,
			(unsigned long long)need, strerror(errno));
		return -1;
	}
	fprintf(stderr, "RLIMIT_SIGPENDING of %d raised from %llu to %llu for %lu records "
		"(%ld queued for its user), put back after\n", pid,
		(unsigned long long)saved->rlim_cur, (unsigned long long)need, records, queued);
	*raised = true;
	return 0;
}

static int put_back_limit(int pid, const struct rlimit *saved)
{
	if (!prlimit(pid, RLIMIT_SIGPENDING, saved, NULL))
		return 0;
	fprintf(stderr, "cannot put RLIMIT_SIGPENDING of %d back to %llu: %s\n", pid,
		(unsigned long long)saved->rlim_cur, strerror(errno));
	return -1;
}

/* What left one queue, in that queue's order. */
struct left_queue {
	unsigned char *rec;
	uint32_t nr;
	uint32_t arrived;	/* dequeued, but not there when peeked */
	uint32_t kept;		/* peeked, but still in the queue */
};

/*
 * DRAIN: the peek gives the queue's order, the dequeue what actually left,
 * in delivery order: by signal number, each signal's records in queue
 * order. So a peeked record that left is the next dequeued one of its
 * signal. One that was not dequeued (the drain failed part way) is still
 * in the process and is not saved; one that was dequeued without having
 * been peeked arrived in between (senders do not stop for ptrace) and
 * goes behind the peeked ones, which it was queued after.
 */
static int drained_in_order(const unsigned char *peeked, uint32_t np,
			    const unsigned char *drained, uint32_t nd,
			    struct left_queue *q)
{
	uint32_t next[PEEK_NR_SIGNALS + 1] = { 0 }, i;
	unsigned char *taken = calloc(nd + 1, 1);

	memset(q, 0, sizeof(*q));
	q->rec = malloc(((size_t)nd + 1) * PEEK_RECORD_SIZE);
	if (!taken || !q->rec) {
		free(taken);
		free(q->rec);
		q->rec = NULL;
		return -1;
	}
	for (i = 0; i < np; i++) {
		int signo = record_signo(RECORD(peeked, i));
		uint32_t *j = &next[signo];

		while (*j < nd && (taken[*j] || record_signo(RECORD(drained, *j)) != signo))
			(*j)++;
		if (!signo || *j == nd ||
		    !sigmig_same_entry(RECORD(peeked, i), RECORD(drained, *j))) {
			q->kept++;
			continue;
		}
		/* as dequeued: a timer's entry with the overrun it left with */
		memcpy(RECORD(q->rec, q->nr++), RECORD(drained, *j), PEEK_RECORD_SIZE);
		taken[(*j)++] = 1;
	}
	for (i = 0; i < nd; i++) {
		if (taken[i])
			continue;
		memcpy(RECORD(q->rec, q->nr++), RECORD(drained, i), PEEK_RECORD_SIZE);
		q->arrived++;
	}
	free(taken);
	return 0;
}

/* Print and save one queue's records: "private TID N crc32 X" / "shared N ...". */
static int emit(const char *out, const char *label, int tid,
		const unsigned char *rec, uint32_t nr)
{
	char name[64];

	if (tid)
		printf("%s %d %u crc32 %08x\n", label, tid, nr,
		       crc32(rec, (size_t)nr * PEEK_RECORD_SIZE));
	else
		printf("%s %u crc32 %08x\n", label, nr,
		       crc32(rec, (size_t)nr * PEEK_RECORD_SIZE));
	if (!out)
		return 0;
	if (tid)
		snprintf(name, sizeof(name), "%s.%d.bin", label, tid);
	else
		snprintf(name, sizeof(name), "%s.bin", label);
	return save(out, name, rec, (size_t)nr * PEEK_RECORD_SIZE);
}

/*
 * DRAIN's report: whatever left the thread is saved, even when the drain
 * failed part way, so that it can be put back; "arrived" and "kept" say
 * where the dequeue and the peek differed.
 */
static int report_drained(const struct peek_args *a, int tid, const char *out)
{
	const unsigned char *drained = RECORD(a->rec, a->nr_private + a->nr_shared);
	struct left_queue priv, shared = { 0 };
	int ret;

	if (drained_in_order(a->rec, a->nr_private, drained,
			     a->nr_drained_private, &priv))
		return -1;
	if (a->want_shared &&
	    drained_in_order(RECORD(a->rec, a->nr_private), a->nr_shared,
			     RECORD(drained, a->nr_drained_private),
			     a->nr_drained_shared, &shared)) {
		free(priv.rec);
		return -1;
	}
	ret = emit(out, "private", tid, priv.rec, priv.nr);
	if (!ret && a->want_shared)
		ret = emit(out, "shared", 0, shared.rec, shared.nr);
	if (priv.arrived + priv.kept + shared.arrived + shared.kept)
		fprintf(stderr, "thread %d: %u + %u arrived after the peek, %u + %u "
			"peeked were not dequeued\n", tid, priv.arrived, shared.arrived,
			priv.kept, shared.kept);
	free(priv.rec);
	free(shared.rec);
	return ret;
}

/*
 * REQUEUE: each queue, peeked after the write, must hold the records
 * written exactly once and in order (requeue-check.c says how).
 */
static int check_queue(int tid, const char *label, const unsigned char *want,
		       uint32_t nr, uint32_t late, uint32_t late_timers,
		       const unsigned char *after, uint32_t nr_after, const char *out)
{
	const struct requeue_queue q = {
		.want = want, .nr = nr, .after = after, .nr_after = nr_after,
		.late = late, .behind = behind,
	};
	struct requeue_verdict v;

	if (requeue_check(&q, &v)) {
		fprintf(stderr, "thread %d: the %s queue %s: %u %s the %u there before "
			"(%u queued)\n", tid, label, v.why, nr,
			behind ? "behind" : "in front of", late, nr_after);
		return -1;
	}
	printf("requeued %s %d %u late %u merged %u timers %u arrived %u verified\n", label,
	       tid, nr, late, v.merged, behind ? peek_timer_records(after, late) : late_timers,
	       v.arrived);
	/* in front, with --out: what the queue holds behind the records written */
	if (!out || behind)
		return 0;
	return emit(out, label, strcmp(label, "shared") ? tid : 0, RECORD(after, v.end),
		    nr_after - v.end);
}

static int check_requeued(const struct peek_args *a, int tid, const char *out)
{
	const unsigned char *after = RECORD(a->rec, a->nr_private + a->nr_shared);

	if (check_queue(tid, "private", a->rec, a->nr_private, a->nr_late_private,
			a->nr_late_timers_private, after, a->nr_after_private, out))
		return -1;
	if (!a->want_shared)
		return 0;
	return check_queue(tid, "shared", RECORD(a->rec, a->nr_private), a->nr_shared,
			   a->nr_late_shared, a->nr_late_timers_shared,
			   RECORD(after, a->nr_after_private), a->nr_after_shared, out);
}

/* Report what the parasite left in @a for thread @tid, save it under @out. */
static int report(const struct peek_args *a, int tid, const char *out)
{
	int ret = 0;

	if (a->tid != tid) {
		fprintf(stderr, "the parasite ran in thread %d, not %d\n", a->tid, tid);
		return -1;
	}
	if (cmd == DRAIN_CMD)
		ret = report_drained(a, tid, out);
	if (a->err) {
		fprintf(stderr, "thread %d: the parasite failed: %s\n", tid, strerror(-a->err));
		return -1;
	}
	if (a->truncated) {
		fprintf(stderr, "thread %d: more than %u records pending, raise --max-records\n",
			tid, a->max_records);
		return -1;
	}
	if (cmd == REQUEUE_CMD)
		return check_requeued(a, tid, out);
	if (cmd == DRAIN_CMD || ret)
		return ret;
	ret = emit(out, "private", tid, a->rec, a->nr_private);
	if (!ret && a->want_shared)
		ret = emit(out, "shared", 0, RECORD(a->rec, a->nr_private), a->nr_shared);
	return ret;
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
		a->max_records = max * area_factor();
		a->want_shared = i == 0;
		a->by_sigqueueinfo = (uint32_t)by_sigqueueinfo;
		a->behind = behind;
		a->seal = seal;
		if (cmd == REQUEUE_CMD && fill(a, th[i].own_tid, max))
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
		if (report(a, th[i].own_tid, out))
			return -1;
		if (seal && i == 0)	/* "seal 0": sealed; else the -errno */
			printf("seal %d\n", a->seal_err);
		*total += a->nr_private + a->nr_shared;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: sigmig-peek-parasite [--out DIR] [--drain | --requeue DIR "
		"[--requeue-with write|sigqueueinfo] [--behind]] [--seal] [--max-records N] "
		"[--thaw CG] [--freeze CG] [-v] PID\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", 1, 0, 'o' }, { "max-records", 1, 0, 'm' },
		{ "drain", 0, 0, 'd' }, { "requeue", 1, 0, 'r' },
		{ "requeue-with", 1, 0, 'w' }, { "behind", 0, 0, 'b' },
		{ "thaw", 1, 0, 't' }, { "freeze", 1, 0, 'f' }, { "seal", 0, 0, 's' },
		{ "verbose", 0, 0, 'v' }, { 0, 0, 0, 0 }
	};
	static struct thread th[MAX_THREADS];
	struct parasite_ctl *ctl;
	struct peek_args *a;
	struct rlimit saved_limit;
	unsigned long total = 0, size;
	bool raised = false;
	const char *out = NULL, *thaw_cg = NULL, *freeze_cg = NULL;
	uint32_t max = 4096;
	long long t0, t1;
	int c, pid, nr, ret = 1;

	while ((c = getopt_long(argc, argv, "v", opts, NULL)) != -1) {
		if (c == 'o')
			out = optarg;
		else if (c == 'm')
			max = (uint32_t)strtoul(optarg, NULL, 0);
		else if (c == 't')
			thaw_cg = optarg;
		else if (c == 'f')
			freeze_cg = optarg;
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
		else if (c == 'b')
			behind = true;
		else if (c == 's')
			seal = true;
		else
			return usage();
	}
	if (optind != argc - 1 || !max || max > (1U << 20) || (behind && cmd != REQUEUE_CMD) ||
	    (seal && cmd != DRAIN_CMD))
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
	if (cmd == REQUEUE_CMD &&
	    make_room(pid, records_to_requeue(th, nr), &saved_limit, &raised))
		goto resume;
	if (thaw_cg && write_file(thaw_cg, "cgroup.freeze", "0"))
		goto resume;
	ctl = compel_prepare(pid);
	if (!ctl) {
		fprintf(stderr, "compel_prepare(%d) failed\n", pid);
		goto resume;
	}
	compel_infect_ctx(ctl)->log_fd = STDERR_FILENO;
	parasite_setup_c_header(ctl);
	size = sizeof(*a) + (unsigned long)max * PEEK_RECORD_SIZE * area_factor();
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
	if (raised && put_back_limit(pid, &saved_limit))
		ret = 1;
	if (freeze_cg && freeze_cgroup(freeze_cg))
		ret = 1;
	resume_threads(th, nr);
	t1 = now_us();
	if (!ret)
		printf("total %lu records, %d threads, %lld us seized\n", total, nr, t1 - t0);
	return ret;
}
