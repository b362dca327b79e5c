// SPDX-License-Identifier: GPL-2.0
/*
 * Restoring into a fresh process. Order matters:
 *  1. decode and validate the image, check it fits this process and the
 *     RLIMIT_SIGPENDING budget: a bad image changes nothing;
 *  2. with every signal blocked, wait for the application threads to
 *     register, check every named handler exists, recreate the POSIX timers
 *     with their original ids (disarmed);
 *  3. each thread requeues its private queue to itself (rt_tgsigqueueinfo),
 *     the restorer requeues the shared queue (rt_sigqueueinfo), in order;
 *  4. every queue is peeked again and compared byte for byte with the image;
 *  5. only then: arm the timers, restore dispositions and masks, run.
 * Any failure prints one line and exits with status 3: nothing resumed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sigmig/runtime.h>
#include "internal.h"

#define REGISTER_TIMEOUT_MS	30000
#define STEP_TIMEOUT_MS		120000
#define MAX_FILLER_TIMERS	(1 << 20)

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sigmig_rt.restore_err, sizeof(sigmig_rt.restore_err), fmt, ap);
	va_end(ap);
	sigmig_rt.restore_result = code;
	return code;
}

/* Signals queued right now for this user, from the "SigQ: n/limit" line. */
static long queued_for_user(void)
{
	char line[256];
	long queued = 0, limit;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigQ: %ld/%ld", &queued, &limit) == 2)
			break;
	fclose(f);
	return queued;
}

/*
 * Every requeued signal counts against RLIMIT_SIGPENDING (per user). Raise
 * the limit if needed (the hard one too when we hold CAP_SYS_RESOURCE);
 * fail before anything is requeued when that is not possible.
 */
static int check_sigpending(uint64_t total)
{
	struct rlimit rl, want;
	long queued = queued_for_user();
	uint64_t need = total + (uint64_t)queued + 16;

	if (getrlimit(RLIMIT_SIGPENDING, &rl))
		return fail(-errno, "getrlimit(RLIMIT_SIGPENDING): %s", strerror(errno));
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return 0;
	want.rlim_cur = need;
	want.rlim_max = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? need : rl.rlim_max;
	if (setrlimit(RLIMIT_SIGPENDING, &want))
		return fail(-EAGAIN, "RLIMIT_SIGPENDING soft %llu hard %llu is below the %llu needed (%llu signals to requeue + %ld queued for this user + 16) and raising it failed: %s: nothing requeued",
			    (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
			    (unsigned long long)need, (unsigned long long)total, queued,
			    strerror(errno));
	return 0;
}

static int check_fits(const struct sigmig_image *img)
{
	uint32_t i;

	if (img->arch != sigmig_native_arch())
		return fail(-EINVAL, "image is for e_machine %u, this process is %u",
			    img->arch, sigmig_native_arch());
	if (sigmig_rt.program[0] && strcmp(img->program, sigmig_rt.program))
		return fail(-EINVAL, "image of program \"%s\" cannot restore into \"%s\"",
			    img->program, sigmig_rt.program);
	for (i = 0; i < img->nthreads; i++)
		if (img->threads[i].index >= sigmig_rt.nthreads)
			return fail(-EINVAL, "image thread index %u, this process has %u threads",
				    img->threads[i].index, sigmig_rt.nthreads);
	for (i = 0; i < img->ntimers; i++)
		if (img->timers[i].notify == SIGEV_THREAD_ID &&
		    img->timers[i].thread_index >= sigmig_rt.nthreads)
			return fail(-EINVAL, "timer %d targets thread %u, this process has %u threads",
				    img->timers[i].id, img->timers[i].thread_index,
				    sigmig_rt.nthreads);
	return 0;
}

int sigmig_restore_prepare(const char *path)
{
	char err[256];
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret;

	ret = sigmig_read_file(path, &buf, &len);
	if (ret)
		return fail(ret, "cannot read image %s: %s", path, strerror(-ret));
	ret = sigmig_image_decode(buf, len, &sigmig_rt.image, err, sizeof(err));
	free(buf);
	if (ret)
		return fail(ret, "%s: %s", path, err);
	ret = check_fits(&sigmig_rt.image);
	if (!ret)
		ret = check_sigpending(sigmig_image_pending_total(&sigmig_rt.image));
	return ret;
}

static const struct sigmig_thread *image_thread(unsigned int index)
{
	uint32_t i;

	for (i = 0; i < sigmig_rt.image.nthreads; i++)
		if (sigmig_rt.image.threads[i].index == index)
			return &sigmig_rt.image.threads[i];
	return NULL;
}

/* ---- application thread side ---- */

static int requeue_private(struct rt_thread *t)
{
	const struct sigmig_queue *q = &t->image->pending;
	pid_t pid = getpid();
	siginfo_t info;
	uint32_t i;

	for (i = 0; i < q->count; i++) {
		memcpy(&info, q->entries[i].bytes, sizeof(info));
		if (syscall(SYS_rt_tgsigqueueinfo, pid, t->tid, info.si_signo, &info)) {
			snprintf(t->err, sizeof(t->err),
				 "rt_tgsigqueueinfo(signal %d, entry %u of %u): %s",
				 info.si_signo, i, q->count, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

static void enter_image_mask(struct rt_thread *t)
{
	sigset_t set;

	if (!t->image)
		return;
	sigmig_u64_to_sigset(t->image->blocked, &set);
	sigdelset(&set, SIGMIG_FREEZE_SIGNAL);
	pthread_sigmask(SIG_SETMASK, &set, NULL);
}

/* Execute one restore command on the calling thread, which must be @t. */
static int run_cmd(struct rt_thread *t, uint32_t cmd)
{
	if (cmd == CMD_REQUEUE)
		return t->image ? requeue_private(t) : 0;
	if (cmd == CMD_PEEK)
		return sigmig_peek_queue(0, &t->peek, t->err, sizeof(t->err));
	if (cmd == CMD_GO)
		enter_image_mask(t);
	return 0;
}

static void *restorer_main(void *arg);
static _Atomic int restorer_claimed;

static int is_leader(void)
{
	return syscall(SYS_gettid) == getpid();
}

/*
 * rt_sigqueueinfo() accepts a si_code >= 0 only from the thread whose tid
 * is the pid it targets (kernel: task_pid_vnr(current) != pid -> EPERM), so
 * the restore, which requeues the shared queue, runs on the main thread:
 * in sigmig_thread_register() if main is an application thread, else in
 * sigmig_runtime_wait_ready(), which main must then call.
 */
int sigmig_restore_claim_leader(void)
{
	int expected = 0;

	if (!is_leader() || !atomic_compare_exchange_strong(&restorer_claimed, &expected, 1))
		return 0;
	restorer_main(NULL);
	return 1;
}

/* Called from sigmig_thread_register(): serve the restorer until GO. */
int sigmig_restore_thread(struct rt_thread *t)
{
	t->image = image_thread((unsigned int)(t - sigmig_rt.threads));
	/* what a PEEK of the held copy reports: the mask it resumes with */
	t->blocked = t->image ? t->image->blocked : 0;
	if (sigmig_restore_claim_leader())
		return 0;
	sigmig_serve(t, run_cmd, CMD_GO);
	return 0;
}

/* ---- restorer side ---- */

static int wait_registered(void)
{
	uint64_t deadline = sigmig_now_ns() + REGISTER_TIMEOUT_MS * 1000000ull;
	uint32_t v;

	while ((v = atomic_load(&sigmig_rt.nregistered)) < sigmig_rt.nthreads) {
		if (sigmig_now_ns() >= deadline)
			return fail(-ETIMEDOUT, "only %u of %u threads registered within %d ms",
				    v, sigmig_rt.nthreads, REGISTER_TIMEOUT_MS);
		sigmig_futex_wait(&sigmig_rt.nregistered, v, 100);
	}
	return 0;
}

static int check_handlers(void)
{
	int i;

	for (i = 0; i < SIGMIG_NSIG; i++) {
		const struct sigmig_disposition *d = &sigmig_rt.image.dispositions[i];

		if (d->kind == SIGMIG_HANDLER_NAMED && !sigmig_handler_fn(d->handler))
			return fail(-ENOENT, "signal %d: handler \"%s\" is not registered in this process",
				    i + 1, d->handler);
	}
	return 0;
}

static int create_one_timer(const struct sigmig_timer *t, int *id)
{
	struct sigevent sev;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = t->notify;
	sev.sigev_signo = t->signo;
	sev.sigev_value.sival_ptr = (void *)(uintptr_t)t->value;
	if (t->notify == SIGEV_THREAD_ID)
		sev._sigev_un._tid = sigmig_rt.threads[t->thread_index].tid;
	return syscall(SYS_timer_create, t->clock, &sev, id) ? -errno : 0;
}

static int cmp_timer_id(const void *a, const void *b)
{
	const struct sigmig_timer *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/*
 * Timer ids are allocated sequentially per process (6.1): create in
 * ascending id order, burning ids below each target with fillers that are
 * deleted afterwards.
 */
static int recreate_timers(void)
{
	struct sigmig_timer *sorted = sigmig_rt.image.timers;
	uint32_t i, n = sigmig_rt.image.ntimers, nfill = 0;
	int id, ret = 0;

	qsort(sorted, n, sizeof(*sorted), cmp_timer_id);
	for (i = 0; i < n && !ret; i++) {
		for (;;) {
			ret = create_one_timer(&sorted[i], &id);
			if (ret) {
				fail(ret, "timer_create(for id %d, clock %d, signal %d): %s",
				     sorted[i].id, sorted[i].clock, sorted[i].signo,
				     strerror(-ret));
				break;
			}
			if (id == sorted[i].id)
				break;
			if (id > sorted[i].id || ++nfill > MAX_FILLER_TIMERS) {
				ret = fail(-EEXIST, "timer id %d is no longer available (got %d)",
					   sorted[i].id, id);
				break;
			}
			/* id < target: a filler, deleted below */
		}
	}
	for (id = 0; n && id < sorted[n - 1].id; id++) {
		struct sigmig_timer key = { .id = id };

		if (!bsearch(&key, sorted, n, sizeof(*sorted), cmp_timer_id))
			syscall(SYS_timer_delete, id);
	}
	return ret;
}

static void ns_to_ts(int64_t ns, struct timespec *ts)
{
	ts->tv_sec = ns / 1000000000ll;
	ts->tv_nsec = ns % 1000000000ll;
}

static int arm_timers(void)
{
	struct itimerspec its;
	uint32_t i;

	for (i = 0; i < sigmig_rt.image.ntimers; i++) {
		const struct sigmig_timer *t = &sigmig_rt.image.timers[i];

		if (!t->remaining_ns)
			continue;
		ns_to_ts(t->interval_ns, &its.it_interval);
		ns_to_ts(t->remaining_ns, &its.it_value);
		if (syscall(SYS_timer_settime, t->id, 0, &its, NULL))
			return fail(-errno, "timer_settime(%d): %s", t->id, strerror(errno));
	}
	return 0;
}

static int post_all(uint32_t cmd, const char *what)
{
	unsigned int i;
	int ret;

	for (i = 0; i < sigmig_rt.nthreads; i++) {
		struct rt_thread *t = &sigmig_rt.threads[i];

		if (t == sigmig_self) {
			t->err[0] = '\0';
			ret = t->result = run_cmd(t, cmd);
		} else {
			ret = sigmig_post(t, cmd, STEP_TIMEOUT_MS);
		}
		if (ret)
			return fail(ret, "%s, thread %u (tid %d): %s", what, i, t->tid,
				    ret == -ETIMEDOUT ? "timed out" : t->err);
	}
	return 0;
}

static int requeue_shared(void)
{
	const struct sigmig_queue *q = &sigmig_rt.image.shared;
	pid_t pid = getpid();
	siginfo_t info;
	uint32_t i;

	for (i = 0; i < q->count; i++) {
		memcpy(&info, q->entries[i].bytes, sizeof(info));
		if (syscall(SYS_rt_sigqueueinfo, pid, info.si_signo, &info))
			return fail(-errno, "rt_sigqueueinfo(signal %d, shared entry %u of %u): %s",
				    info.si_signo, i, q->count, strerror(errno));
	}
	return 0;
}

/* Byte-for-byte comparison of a re-peeked queue with the image. */
static int compare_queue(const char *what, const struct rawbuf *got,
			 const struct sigmig_queue *want)
{
	uint32_t count = want ? want->count : 0;
	size_t i;

	if (got->count != count)
		return fail(-EIO, "verify %s: %zu signals pending after requeue, image has %u",
			    what, got->count, count);
	for (i = 0; i < count; i++)
		if (memcmp(got->data + i * SI_MAX_SIZE, want->entries[i].bytes,
			   SI_MAX_SIZE))
			return fail(-EIO, "verify %s: entry %zu (signal %d) differs from the image",
				    what, i, want->entries[i].bytes[0]);
	return 0;
}

static int verify_all(void)
{
	struct rawbuf shared = { 0 };
	char what[64], err[160];
	unsigned int i;
	int ret;

	ret = post_all(CMD_PEEK, "verify peek");
	for (i = 0; !ret && i < sigmig_rt.nthreads; i++) {
		const struct sigmig_thread *it = image_thread(i);

		snprintf(what, sizeof(what), "thread %u", i);
		ret = compare_queue(what, &sigmig_rt.threads[i].peek, it ? &it->pending : NULL);
	}
	for (i = 0; i < sigmig_rt.nthreads; i++)
		sigmig_rawbuf_free(&sigmig_rt.threads[i].peek);
	if (ret)
		return ret;
	ret = sigmig_peek_queue(1, &shared, err, sizeof(err));
	if (ret)
		fail(ret, "verify shared queue: %s", err);
	else
		ret = compare_queue("shared queue", &shared, &sigmig_rt.image.shared);
	sigmig_rawbuf_free(&shared);
	return ret;
}

static int restore_dispositions(void)
{
	struct sigaction sa;
	int sig;

	for (sig = 1; sig <= SIGMIG_NSIG; sig++) {
		const struct sigmig_disposition *d = &sigmig_rt.image.dispositions[sig - 1];

		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGMIG_FREEZE_SIGNAL ||
		    sigaction(sig, NULL, &sa))
			continue;	/* not ours to set, or reserved by libc */
		memset(&sa, 0, sizeof(sa));
		sa.sa_flags = (int)d->sa_flags;
		sigmig_u64_to_sigset(d->sa_mask, &sa.sa_mask);
		if (d->kind == SIGMIG_HANDLER_NAMED)
			sa.sa_sigaction = sigmig_handler_fn(d->handler);
		else
			sa.sa_handler = d->kind == SIGMIG_HANDLER_IGNORE ? SIG_IGN : SIG_DFL;
		if (sigaction(sig, &sa, NULL))
			return fail(-errno, "sigaction(%d): %s", sig, strerror(errno));
	}
	return 0;
}

/* The held restorer's thread: PEEK, or RELEASE to go on. */
static int run_held(struct rt_thread *t, uint32_t cmd)
{
	if (cmd == CMD_PEEK)
		return run_cmd(t, cmd);
	return cmd == CMD_RELEASE ? 0 : -EINVAL;
}

/*
 * Held: every thread stays parked with all signals blocked until THAW
 * (sigmig_restore_release) or COMMIT (exits). The restorer's thread, when
 * it is an application thread, serves PEEK meanwhile like the others, so
 * that the held copy's queues can be compared with the image's source.
 */
static void wait_hold_release(void)
{
	if (sigmig_rt.restorer) {
		sigmig_serve(sigmig_rt.restorer, run_held, CMD_RELEASE);
		return;
	}
	while (!atomic_load(&sigmig_rt.hold_release))
		sigmig_futex_wait(&sigmig_rt.hold_release, 0, -1);
}

/* Control thread, lock held, state frozen and held: resume everything. */
int sigmig_restore_release(void)
{
	uint32_t v;
	int ret;

	if (sigmig_rt.restorer) {
		ret = sigmig_post(sigmig_rt.restorer, CMD_RELEASE, STEP_TIMEOUT_MS);
		if (ret)
			return ret;
	} else {
		atomic_store(&sigmig_rt.hold_release, 1);
		sigmig_futex_wake(&sigmig_rt.hold_release);
	}
	while (!(v = atomic_load(&sigmig_rt.restore_done)))
		sigmig_futex_wait(&sigmig_rt.restore_done, 0, 1000);
	return v == 1 ? 0 : -EIO;
}

static void *restorer_main(void *arg)
{
	uint64_t start = sigmig_now_ns();
	int ret;

	(void)arg;
	sigmig_rt.restorer = sigmig_self;
	ret = wait_registered();
	if (!ret)
		ret = check_handlers();
	if (!ret)
		ret = recreate_timers();
	if (!ret)
		ret = post_all(CMD_REQUEUE, "requeue");
	if (!ret)
		ret = requeue_shared();
	if (!ret)
		ret = verify_all();
	if (!ret)
		ret = arm_timers();
	if (!ret)
		ret = restore_dispositions();
	if (ret) {
		pthread_mutex_lock(&sigmig_rt.lock);
		sigmig_rt.state = ST_FAILED;
		pthread_mutex_unlock(&sigmig_rt.lock);
		fprintf(stderr, "sigmig restore: %s\n", sigmig_rt.restore_err);
		fflush(stderr);
		_exit(3);
	}
	pthread_mutex_lock(&sigmig_rt.lock);
	sigmig_rt.requeued = sigmig_image_pending_total(&sigmig_rt.image);
	sigmig_rt.restore_ns = sigmig_now_ns() - start;
	sigmig_rt.restored = 1;
	if (sigmig_rt.restore_hold) {
		sigmig_rt.held = 1;
		sigmig_rt.state = ST_FROZEN;
	} else {
		sigmig_rt.state = ST_RUNNING;
	}
	pthread_mutex_unlock(&sigmig_rt.lock);
	if (sigmig_rt.restore_hold)
		wait_hold_release();
	if (post_all(CMD_GO, "resume")) {
		fprintf(stderr, "sigmig restore: %s\n", sigmig_rt.restore_err);
		_exit(3);
	}
	atomic_store(&sigmig_rt.restore_done, 1);
	sigmig_futex_wake(&sigmig_rt.restore_done);
	return NULL;
}

int sigmig_restore_start(void)
{
	if (!is_leader())
		return fail(-EINVAL, "restore must be started from the main thread");
	return 0;
}
