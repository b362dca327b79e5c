// SPDX-License-Identifier: GPL-2.0
/*
 * Restoring into a fresh process. Order matters:
 *  1. decode and validate the image, check it fits this process and the
 *     RLIMIT_SIGPENDING budget: a bad image changes nothing;
 *  2. with every signal blocked, wait for the application threads to
 *     register, check every named handler exists, recreate the POSIX timers
 *     with their original ids (disarmed);
 *  3. each thread requeues its private queue to itself, the leader the
 *     shared queue, in order: one write() of the records to a signalfd
 *     where the kernel has it, else one rt_tgsigqueueinfo() (private) or
 *     rt_sigqueueinfo() (shared) per record;
 *  4. every queue is peeked again and compared byte for byte with the image;
 *  5. only then: arm the timers, restore dispositions and masks, run (or,
 *     held, park until THAW resumes or COMMIT ends the process).
 * A failure anywhere before 5 leaves every thread blocked and parked: the
 * leader's caller gets the reason, the other threads -ECANCELED, and the
 * program ends the process (exit status 3 by convention). Nothing here
 * exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sigmig/image.h>
#include <sigmig/runtime.h>
#include <sigmig/sfd.h>
#include <sigmig/sfd_probe.h>
#include "core.h"
#include "handlers.h"
#include "image_priv.h"
#include "peek.h"
#include "restore.h"
#include "util.h"

#define REGISTER_TIMEOUT_MS	30000
#define STEP_TIMEOUT_MS		120000
#define MAX_FILLER_TIMERS	(1 << 16)

enum outcome { RESTORE_PENDING, RESTORE_DONE, RESTORE_FAILED };

static struct {
	int active;			/* set once, before any thread exists */
	int probed;			/* not restored: by_write probed for REQUEUE */
	int hold;
	struct sigmig_image image;
	_Atomic int led;		/* the main thread has taken the lead */
	struct rt_thread *leader_slot;	/* the leader's own slot, or NULL */
	struct rt_thread leader_box;	/* held: its mailbox when it has no slot */
	const struct sigmig_queue *delta_shared;	/* held: for CMD_REQUEUE_SHARED */
	_Atomic uint32_t outcome;	/* futex word: enum outcome */
	_Atomic int verified;
	int error;			/* -errno of the failure */
	char err[256];			/* its one-line reason */
	uint64_t requeued, restore_ns;
	_Atomic uint64_t carried;	/* commit deltas requeued while held */
	int by_write;			/* requeue with write() to a signalfd */
} rs;

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Only the leader (or prepare, before it) records a failure. */
static int fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rs.err, sizeof(rs.err), fmt, ap);
	va_end(ap);
	rs.error = code;
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
static int sigpending_room(uint64_t total, char *why, size_t len)
{
	struct rlimit rl, want;
	long queued = queued_for_user();
	uint64_t need = total + (uint64_t)queued + 16;

	if (getrlimit(RLIMIT_SIGPENDING, &rl)) {
		snprintf(why, len, "getrlimit(RLIMIT_SIGPENDING): %s", strerror(errno));
		return -errno;
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return 0;
	want.rlim_cur = need;
	want.rlim_max = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? need : rl.rlim_max;
	if (!setrlimit(RLIMIT_SIGPENDING, &want))
		return 0;
	snprintf(why, len, "RLIMIT_SIGPENDING soft %llu hard %llu is below the %llu needed (%llu signals to requeue + %ld queued for this user + 16) and raising it failed: %s: nothing requeued",
		 (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
		 (unsigned long long)need, (unsigned long long)total, queued,
		 strerror(errno));
	return -EAGAIN;
}

static int check_sigpending(uint64_t total)
{
	char why[sizeof(rs.err)];
	int ret = sigpending_room(total, why, sizeof(why));

	return ret ? fail(ret, "%s", why) : 0;
}

static int check_fits(const struct sigmig_image *img)
{
	unsigned int nthreads = sigmig_nthreads();
	uint32_t i;

	if (img->arch != sigmig_native_arch())
		return fail(-EINVAL, "image is for e_machine %u, this process is %u",
			    img->arch, sigmig_native_arch());
	if (sigmig_program()[0] && strcmp(img->program, sigmig_program()))
		return fail(-EINVAL, "image of program \"%s\" cannot restore into \"%s\"",
			    img->program, sigmig_program());
	for (i = 0; i < img->nthreads; i++)
		if (img->threads[i].index >= nthreads)
			return fail(-EINVAL, "image thread index %u, this process has %u threads",
				    img->threads[i].index, nthreads);
	for (i = 0; i < img->ntimers; i++)
		if (img->timers[i].notify == SIGEV_THREAD_ID &&
		    img->timers[i].thread_index >= nthreads)
			return fail(-EINVAL, "timer %d targets thread %u, this process has %u threads",
				    img->timers[i].id, img->timers[i].thread_index, nthreads);
	return 0;
}

static int is_main_thread(void)
{
	return syscall(SYS_gettid) == getpid();
}

/* Up to @len bytes, fewer only at EOF: the count, or -errno. */
static ssize_t read_full(int fd, uint8_t *p, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = read(fd, p + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

#define IMAGE_READ_MAX	(1ull << 31)

/*
 * The image's header says how long it is: the buffer is allocated once,
 * to that length. The agent passes a migrated image through a FIFO while
 * it arrives, and a FIFO read to its end would grow a buffer by doubling,
 * copying its way up to twice the image (at 1M signals, 256 MiB of a
 * guest's 1 GiB).
 */
static int read_image(int fd, uint8_t **out, size_t *len, char *err,
		      size_t errlen)
{
	uint8_t head[SIGMIG_IMAGE_HEAD_SIZE], extra, *buf;
	uint64_t total;
	ssize_t got;
	int ret;

	got = read_full(fd, head, sizeof(head));
	if (got < 0)
		return (int)got;
	total = sigmig_image_head_total(head);
	ret = sigmig_image_check_head(head, (size_t)got,
				      got < (ssize_t)sizeof(head) ? (uint64_t)got : total,
				      err, errlen);
	if (ret)
		return ret;
	if (total > IMAGE_READ_MAX) {
		snprintf(err, errlen, "image of %llu bytes: over the %llu-byte limit",
			 (unsigned long long)total, IMAGE_READ_MAX);
		return -E2BIG;
	}
	buf = malloc((size_t)total);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, head, sizeof(head));
	got = read_full(fd, buf + sizeof(head), (size_t)total - sizeof(head));
	if (got >= 0 && (size_t)got < (size_t)total - sizeof(head)) {
		snprintf(err, errlen, "image truncated: %zu bytes of %llu",
			 (size_t)got + sizeof(head), (unsigned long long)total);
		got = -EBADMSG;
	} else if (got >= 0 && read_full(fd, &extra, 1) == 1) {
		snprintf(err, errlen, "trailing garbage after the image's %llu bytes",
			 (unsigned long long)total);
		got = -EBADMSG;
	}
	if (got < 0) {
		free(buf);
		return (int)got;
	}
	*out = buf;
	*len = (size_t)total;
	return 0;
}

static int load_image(const char *path)
{
	char err[256] = "";
	uint8_t *buf = NULL;
	size_t len = 0;
	int fd, ret;

	if (!is_main_thread())
		return fail(-EINVAL, "restore must be started from the main thread");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(-errno, "cannot read image %s: %s", path, strerror(errno));
	ret = read_image(fd, &buf, &len, err, sizeof(err));
	close(fd);
	if (ret && !err[0])
		return fail(ret, "cannot read image %s: %s", path, strerror(-ret));
	if (ret)
		return fail(ret, "%s: %s", path, err);
	ret = sigmig_image_decode(buf, len, &rs.image, err, sizeof(err));
	free(buf);
	if (ret)
		return fail(ret, "%s: %s", path, err);
	ret = check_fits(&rs.image);
	if (!ret)
		ret = check_sigpending(sigmig_image_pending_total(&rs.image));
	if (ret)
		sigmig_image_free(&rs.image);
	return ret;
}

int sigmig_requeue_parse(const char *name, enum sigmig_requeue *out)
{
	static const char *const names[] = {
		[SIGMIG_REQUEUE_AUTO] = "auto",
		[SIGMIG_REQUEUE_WRITE] = "write",
		[SIGMIG_REQUEUE_SIGQUEUEINFO] = "sigqueueinfo",
	};
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (name && !strcmp(name, names[i])) {
			*out = (enum sigmig_requeue)i;
			return 0;
		}
	}
	return -1;
}

static int choose_requeue(enum sigmig_requeue requeue, char *err, size_t errlen)
{
	int can_write = sfd_probe_write();

	if (requeue == SIGMIG_REQUEUE_WRITE && !can_write) {
		snprintf(err, errlen, "requeue by write() was asked for, but this kernel's signalfd has no write(): nothing requeued");
		return -EOPNOTSUPP;
	}
	rs.by_write = requeue != SIGMIG_REQUEUE_SIGQUEUEINFO && can_write;
	return 0;
}

int sigmig_restore_prepare(const char *path, int hold, enum sigmig_requeue requeue,
			   char *err, size_t errlen)
{
	int ret = choose_requeue(requeue, err, errlen);

	if (ret)
		return ret;
	ret = load_image(path);
	if (ret) {
		snprintf(err, errlen, "%s", rs.err);
		return ret;
	}
	rs.hold = hold;
	rs.active = 1;
	return 0;
}

int sigmig_restore_active(void)
{
	return rs.active;
}

static const struct sigmig_thread *image_thread(unsigned int index)
{
	uint32_t i;

	for (i = 0; i < rs.image.nthreads; i++)
		if (rs.image.threads[i].index == index)
			return &rs.image.threads[i];
	return NULL;
}

/* ---- every restoring thread: the commands it runs for the leader ---- */

/*
 * One queue of the calling thread (SFD_PRIVATE: its own, SFD_GROUP: the
 * process's) in as few write()s as the kernel takes: each returns how many
 * records it queued, and stops at one it could not.
 */
static int write_queue(int queue_flag, const struct sigmig_queue *q, char *err,
		       size_t errlen)
{
	uint32_t done = 0;
	sigset_t all;
	ssize_t n;
	int fd;

	if (!q->count)
		return 0;
	/* every signal: glibc's sigfillset() leaves out its own two */
	memset(&all, 0xff, sizeof(all));
	fd = sfd_signalfd(-1, &all, SFD_RAW | queue_flag | SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "signalfd4(SFD_RAW): %s", strerror(errno));
		return -errno;
	}
	while (done < q->count) {
		n = write(fd, &q->entries[done], (size_t)(q->count - done) * SI_MAX_SIZE);
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			siginfo_t info;

			memcpy(&info, q->entries[done].bytes, sizeof(info));
			snprintf(err, errlen, "write(signalfd, signal %d, %s entry %u of %u): %s",
				 info.si_signo, queue_flag == SFD_GROUP ? "shared" : "private",
				 done, q->count, strerror(e));
			close(fd);
			return -e;
		}
		done += (uint32_t)(n / SI_MAX_SIZE);
	}
	close(fd);
	return 0;
}

static int requeue_private(struct rt_thread *t, const struct sigmig_queue *q)
{
	pid_t pid = getpid();
	siginfo_t info;
	uint32_t i;

	if (rs.by_write)
		return write_queue(SFD_PRIVATE, q, t->err, sizeof(t->err));
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

/* Run one restore command on the calling thread, which must be @t. */
static int run_cmd(struct rt_thread *t, uint32_t cmd)
{
	switch (cmd) {
	case CMD_REQUEUE:
		return t->image ? requeue_private(t, &t->image->pending) : 0;
	case CMD_REQUEUE_DELTA:
		return t->delta ? requeue_private(t, &t->delta->pending) : 0;
	case CMD_PEEK:
		return sigmig_peek_queue(PEEK_OWN_QUEUE, &t->peek, t->err, sizeof(t->err));
	case CMD_GO:
		/*
		 * The mask is entered after the acknowledgement (restore_go):
		 * entered here, the thread would run the handlers of its whole
		 * queue before acknowledging, and the leader would let the next
		 * thread go only then.
		 */
		return 0;
	case CMD_ABORT:
		return 0;
	default:
		return -EINVAL;
	}
}

static int requeue_shared_queue(const struct sigmig_queue *q, char *err, size_t errlen)
{
	pid_t pid = getpid();
	siginfo_t info;
	uint32_t i;

	if (rs.by_write)
		return write_queue(SFD_GROUP, q, err, errlen);
	for (i = 0; i < q->count; i++) {
		memcpy(&info, q->entries[i].bytes, sizeof(info));
		if (syscall(SYS_rt_sigqueueinfo, pid, info.si_signo, &info)) {
			snprintf(err, errlen, "rt_sigqueueinfo(signal %d, shared entry %u of %u): %s",
				 info.si_signo, i, q->count, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

/*
 * The held leader (main thread): PEEK of its own queue when it is an
 * application thread, a commit delta for its queue or the shared one,
 * RELEASE to go on.
 */
static int run_held(struct rt_thread *t, uint32_t cmd)
{
	switch (cmd) {
	case CMD_PEEK:
	case CMD_REQUEUE_DELTA:
		return t == rs.leader_slot ? run_cmd(t, cmd) : -EINVAL;
	case CMD_REQUEUE_SHARED:
		return requeue_shared_queue(rs.delta_shared, t->err, sizeof(t->err));
	case CMD_RELEASE:
		return 0;
	default:
		return -EINVAL;
	}
}

/* Where the held leader takes commands: its slot, or its own mailbox. */
static struct rt_thread *held_box(void)
{
	return rs.leader_slot ? rs.leader_slot : &rs.leader_box;
}

/* ---- the leader ---- */

static int check_handlers(void)
{
	int i;

	for (i = 0; i < SIGMIG_NSIG; i++) {
		const struct sigmig_disposition *d = &rs.image.dispositions[i];

		if (d->kind == SIGMIG_HANDLER_NAMED && !sigmig_handler_fn(d->handler))
			return fail(-ENOENT, "signal %d: handler \"%s\" is not registered in this process",
				    i + 1, d->handler);
	}
	return 0;
}

static int wait_registered(void)
{
	unsigned int n;

	if (sigmig_wait_all_registered(REGISTER_TIMEOUT_MS, &n))
		return fail(-ETIMEDOUT, "only %u of %u threads registered within %d ms",
			    n, sigmig_nthreads(), REGISTER_TIMEOUT_MS);
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
		sev._sigev_un._tid = sigmig_thread(t->thread_index)->tid;
	return syscall(SYS_timer_create, t->clock, &sev, id) ? -errno : 0;
}

static int cmp_timer_id(const void *a, const void *b)
{
	const struct sigmig_timer *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/*
 * Timer ids are allocated sequentially per process (6.1) and not reused
 * before the counter wraps: a filler created to burn an id below the
 * target is deleted at once. A far id costs time, bounded by
 * MAX_FILLER_TIMERS, but never holds more than one filler: the ids come
 * from the image, and an image is not trusted to be small.
 */
static int create_timer_with_id(const struct sigmig_timer *t,
				unsigned int *nfill)
{
	int id, ret;

	for (;;) {
		ret = create_one_timer(t, &id);
		if (ret)
			return fail(ret, "timer_create(for id %d, clock %d, signal %d): %s",
				    t->id, t->clock, t->signo, strerror(-ret));
		if (id == t->id)
			return 0;
		syscall(SYS_timer_delete, id);
		if (id > t->id)
			return fail(-EEXIST, "timer id %d is no longer available (got %d)",
				    t->id, id);
		if (++*nfill > MAX_FILLER_TIMERS)
			return fail(-E2BIG, "timer id %d is more than %d ids past the first free one",
				    t->id, MAX_FILLER_TIMERS);
	}
}

static int recreate_timers(void)
{
	struct sigmig_timer *sorted = rs.image.timers;
	uint32_t i, n = rs.image.ntimers;
	unsigned int nfill = 0;
	int ret = 0;

	qsort(sorted, n, sizeof(*sorted), cmp_timer_id);
	for (i = 0; i < n && !ret; i++)
		ret = create_timer_with_id(&sorted[i], &nfill);
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

	for (i = 0; i < rs.image.ntimers; i++) {
		const struct sigmig_timer *t = &rs.image.timers[i];

		if (!t->remaining_ns)
			continue;
		ns_to_ts(t->interval_ns, &its.it_interval);
		ns_to_ts(t->remaining_ns, &its.it_value);
		if (syscall(SYS_timer_settime, t->id, 0, &its, NULL))
			return fail(-errno, "timer_settime(%d): %s", t->id, strerror(errno));
	}
	return 0;
}

/* @cmd on every thread, the leader's own included: the first failure. */
static int post_all(uint32_t cmd, const char *what)
{
	unsigned int i;
	int ret;

	for (i = 0; i < sigmig_nthreads(); i++) {
		struct rt_thread *t = sigmig_thread(i);

		if (t == sigmig_self()) {
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
	char err[sizeof(rs.err)];
	int ret = requeue_shared_queue(&rs.image.shared, err, sizeof(err));

	return ret ? fail(ret, "%s", err) : 0;
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
		if (memcmp(got->data + i * SI_MAX_SIZE, want->entries[i].bytes, SI_MAX_SIZE))
			return fail(-EIO, "verify %s: entry %zu (signal %d) differs from the image",
				    what, i, want->entries[i].bytes[0]);
	return 0;
}

static int verify_threads(void)
{
	char what[64];
	unsigned int i;
	int ret;

	ret = post_all(CMD_PEEK, "verify peek");
	for (i = 0; !ret && i < sigmig_nthreads(); i++) {
		const struct sigmig_thread *it = image_thread(i);

		snprintf(what, sizeof(what), "thread %u", i);
		ret = compare_queue(what, &sigmig_thread(i)->peek, it ? &it->pending : NULL);
	}
	for (i = 0; i < sigmig_nthreads(); i++)
		sigmig_rawbuf_free(&sigmig_thread(i)->peek);
	return ret;
}

static int verify_shared(void)
{
	struct rawbuf shared = { 0 };
	char err[160];
	int ret;

	ret = sigmig_peek_queue(PEEK_SHARED_QUEUE, &shared, err, sizeof(err));
	if (ret)
		fail(ret, "verify shared queue: %s", err);
	else
		ret = compare_queue("shared queue", &shared, &rs.image.shared);
	sigmig_rawbuf_free(&shared);
	return ret;
}

static int restore_dispositions(void)
{
	struct sigaction sa;
	int sig;

	for (sig = 1; sig <= SIGMIG_NSIG; sig++) {
		const struct sigmig_disposition *d = &rs.image.dispositions[sig - 1];

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

/* Steps 2 to 4 and the first half of 5: everything but running. */
static int rebuild(void)
{
	int ret;

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
		ret = verify_threads();
	if (!ret)
		ret = verify_shared();
	if (!ret)
		ret = arm_timers();
	if (!ret)
		ret = restore_dispositions();
	return ret;
}

static void finish(enum outcome outcome)
{
	atomic_store(&rs.outcome, outcome);
	sigmig_futex_wake(&rs.outcome);
}

/*
 * Every thread still waiting for the leader returns -ECANCELED. Not waited
 * for: a thread that registered as the outcome was published may have
 * seen it and returned without serving.
 */
static void abort_threads(void)
{
	unsigned int i;

	for (i = 0; i < sigmig_nthreads(); i++) {
		struct rt_thread *t = sigmig_thread(i);

		if (t != sigmig_self() && atomic_load(&t->registered))
			sigmig_post_nowait(t, CMD_ABORT);
	}
}

/*
 * Failed: the reason is published before the state, so that a STATUS that
 * reads "failed" finds it. Threads still parked are let go with -ECANCELED
 * (a thread that registers later sees the outcome itself); after a failed
 * resume some already run, and the program's exit ends them.
 */
static int give_up(enum rt_state from, int threads_parked)
{
	finish(RESTORE_FAILED);
	sigmig_transition(from, RT_FAILED);
	if (threads_parked)
		abort_threads();
	return rs.error ? rs.error : -EIO;
}

static int resume(enum rt_state from)
{
	if (post_all(CMD_GO, "resume"))
		return give_up(from, 0);
	sigmig_transition(from, RT_RUNNING);
	finish(RESTORE_DONE);
	return 0;
}

/*
 * Held: every thread stays parked with all signals blocked until THAW
 * (sigmig_restore_release) or COMMIT (the program ends the process). The
 * leader's thread, when it is an application thread, serves PEEK meanwhile
 * like the others, so that the held copy's queues can be read.
 */
static int hold_then_resume(void)
{
	rs.leader_box.tid = getpid();
	sigmig_transition(RT_RESTORING, RT_HELD);
	sigmig_serve(held_box(), run_held, CMD_BIT(CMD_RELEASE));
	return resume(RT_HELD);
}

static int lead(void)
{
	uint64_t start = sigmig_now_ns();

	rs.leader_slot = sigmig_self();
	if (rebuild())
		return give_up(RT_RESTORING, 1);
	rs.requeued = sigmig_image_pending_total(&rs.image);
	rs.restore_ns = sigmig_now_ns() - start;
	atomic_store(&rs.verified, 1);
	return rs.hold ? hold_then_resume() : resume(RT_RESTORING);
}

/*
 * rt_sigqueueinfo() accepts a si_code >= 0 only from the thread whose tid
 * is the pid it targets (kernel: task_pid_vnr(current) != pid -> EPERM), so
 * the restore, which requeues the shared queue, is led by the main thread:
 * in sigmig_thread_register() if main is an application thread, else in
 * sigmig_runtime_wait_ready(), which main must then call.
 */
static int take_lead(void)
{
	int expected = 0;

	return is_main_thread() && atomic_compare_exchange_strong(&rs.led, &expected, 1);
}

/* Every thread has been told to go: this one now takes its signals. */
static int restore_go(struct rt_thread *t)
{
	enter_image_mask(t);
	return 0;
}

int sigmig_restore_join(struct rt_thread *t)
{
	t->image = image_thread((unsigned int)(t - sigmig_thread(0)));
	/* what a PEEK of the held copy reports: the mask it resumes with */
	t->blocked = t->image ? t->image->blocked : 0;
	if (take_lead()) {
		int ret = lead();

		return ret ? ret : restore_go(t);
	}
	if (atomic_load(&rs.outcome) == RESTORE_FAILED)
		return -ECANCELED;
	if (sigmig_serve(t, run_cmd, CMD_BIT(CMD_GO) | CMD_BIT(CMD_ABORT)) != CMD_GO)
		return -ECANCELED;
	return restore_go(t);
}

/* 0 once resumed, the failure, or -ETIMEDOUT after @timeout_ms (< 0: none). */
static int wait_outcome(int timeout_ms)
{
	uint64_t deadline = sigmig_deadline(timeout_ms);
	uint32_t v;
	int left = -1;

	while ((v = atomic_load(&rs.outcome)) == RESTORE_PENDING) {
		if (timeout_ms >= 0) {
			left = sigmig_ms_left(deadline);
			if (!left)
				return -ETIMEDOUT;
		}
		sigmig_futex_wait(&rs.outcome, v, left);
	}
	return v == RESTORE_DONE ? 0 : (rs.error ? rs.error : -EIO);
}

int sigmig_restore_wait(char *err, size_t errlen)
{
	int ret;

	if (!rs.active)
		return 0;
	if (take_lead())
		lead();
	ret = wait_outcome(-1);
	if (ret && err && errlen)
		snprintf(err, errlen, "%s", rs.err);
	return ret;
}

int sigmig_restore_release(void)
{
	int ret;

	ret = sigmig_post(held_box(), CMD_RELEASE, STEP_TIMEOUT_MS);
	if (ret)
		return ret;
	return wait_outcome(STEP_TIMEOUT_MS);
}

void sigmig_restore_status(struct restore_status *st)
{
	st->verified = atomic_load(&rs.verified);
	st->requeued = st->verified ? rs.requeued : 0;
	st->restore_ns = st->verified ? rs.restore_ns : 0;
	st->requeue = rs.by_write ? "write" : "sigqueueinfo";
	st->error = atomic_load(&rs.outcome) == RESTORE_FAILED ? rs.err : NULL;
	st->carried = atomic_load(&rs.carried);
}

/* ---- a commit delta, into the held copy ---- */

static int delta_fits(const struct sigmig_image *d, char *err, size_t errlen)
{
	uint32_t i;

	if (d->arch != sigmig_native_arch() || strcmp(d->program, sigmig_program())) {
		snprintf(err, errlen, "delta of program \"%s\" (e_machine %u) cannot go into \"%s\" (%u)",
			 d->program, d->arch, sigmig_program(), sigmig_native_arch());
		return -EINVAL;
	}
	for (i = 0; i < d->nthreads; i++) {
		uint32_t index = d->threads[i].index;

		if (index >= sigmig_nthreads() || !atomic_load(&sigmig_thread(index)->registered)) {
			snprintf(err, errlen, "delta thread index %u is not a thread of this process",
				 index);
			return -EINVAL;
		}
	}
	return sigpending_room(sigmig_image_pending_total(d), err, errlen);
}

static int load_delta(const char *path, struct sigmig_image *d, char *err,
		      size_t errlen)
{
	char why[256];
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret;

	ret = sigmig_read_file(path, &buf, &len);
	if (ret) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-ret));
		return ret;
	}
	ret = sigmig_image_decode(buf, len, d, why, sizeof(why));
	free(buf);
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, why);
		return ret;
	}
	ret = delta_fits(d, err, errlen);
	if (ret)
		sigmig_image_free(d);
	return ret;
}

static int post_delta(struct rt_thread *t, uint32_t cmd, const char *what,
		      char *err, size_t errlen)
{
	int ret = sigmig_post(t, cmd, STEP_TIMEOUT_MS);

	if (ret)
		snprintf(err, errlen, "%s (tid %d): %s", what, t->tid,
			 ret == -ETIMEDOUT ? "timed out" : t->err);
	return ret;
}

typedef int (*post_part)(struct rt_thread *t, const char *what, char *err,
			 size_t errlen);

/* Each thread's part of @d, posted to that thread by @post. */
static int requeue_threads(const struct sigmig_image *d, post_part post, char *err,
			   size_t errlen)
{
	char what[64];
	uint32_t i;
	int ret = 0;

	for (i = 0; i < d->nthreads && !ret; i++) {
		struct rt_thread *t = sigmig_thread(d->threads[i].index);

		t->delta = &d->threads[i];
		snprintf(what, sizeof(what), "requeue, thread %u", d->threads[i].index);
		ret = post(t, what, err, errlen);
		t->delta = NULL;
	}
	return ret;
}

static int post_held_part(struct rt_thread *t, const char *what, char *err, size_t errlen)
{
	return post_delta(t, CMD_REQUEUE_DELTA, what, err, errlen);
}

/* Each thread's part from that thread, then the shared part from main. */
static int requeue_delta(const struct sigmig_image *d, char *err, size_t errlen)
{
	int ret = requeue_threads(d, post_held_part, err, errlen);

	if (ret || !d->shared.count)
		return ret;
	rs.delta_shared = &d->shared;
	ret = post_delta(held_box(), CMD_REQUEUE_SHARED, "requeue delta, shared queue",
			 err, errlen);
	rs.delta_shared = NULL;
	return ret;
}

static size_t next_entry_of(const struct rawbuf *got, size_t from, int sig)
{
	while (from < got->count && got->data[from * SI_MAX_SIZE] != sig)
		from++;
	return from;
}

static int pending_signal(const struct rawbuf *got, int sig)
{
	return next_entry_of(got, 0, sig) < got->count;
}

/*
 * Every entry must be pending afterwards, in order, from @from (behind the
 * moved entries of a held copy; the copy's own timers may have queued
 * entries in between); a timer's entry may show a higher overrun (it is
 * the timer's own and it fired since). A standard signal may be missing when one of it was
 * pending already: the kernel merged them, as it does for any sender
 * (@merged). Anything else missing was dropped.
 */
static int find_forwarded(const char *what, const struct rawbuf *got, size_t from,
			  const struct sigmig_queue *want, uint64_t *merged,
			  char *err, size_t errlen)
{
	size_t i, j = from, at;

	for (i = 0; i < want->count; i++) {
		const uint8_t *e = want->entries[i].bytes;

		for (at = j; at < got->count &&
		     !sigmig_same_entry(got->data + at * SI_MAX_SIZE, e); at++)
			;
		if (at < got->count) {
			j = at + 1;
			continue;
		}
		if (e[0] < SIGRTMIN && pending_signal(got, e[0])) {
			(*merged)++;
			continue;
		}
		snprintf(err, errlen, "verify %s: entry %zu (signal %d) is not pending after the requeue",
			 what, i, e[0]);
		return -EIO;
	}
	return 0;
}

static size_t moved_count(const struct sigmig_queue *q)
{
	return q ? q->count : 0;
}

/*
 * Every requeued entry pending afterwards, in order: in a @held copy behind
 * the restored entries, in a parked one anywhere behind what was pending.
 */
static int verify_requeued(const struct sigmig_image *d, int held, uint64_t *merged,
			   char *err, size_t errlen)
{
	struct rawbuf shared = { 0 };
	char what[64];
	uint32_t i;
	int ret = 0;

	for (i = 0; i < d->nthreads && !ret; i++) {
		struct rt_thread *t = sigmig_thread(d->threads[i].index);
		const struct sigmig_thread *moved = held ? image_thread(d->threads[i].index) : NULL;

		snprintf(what, sizeof(what), "verify, thread %u", d->threads[i].index);
		ret = post_delta(t, CMD_PEEK, what, err, errlen);
		if (!ret)
			ret = find_forwarded(what, &t->peek,
					     moved_count(moved ? &moved->pending : NULL),
					     &d->threads[i].pending, merged, err, errlen);
		sigmig_rawbuf_free(&t->peek);
	}
	if (ret || !d->shared.count)
		return ret;
	ret = sigmig_peek_queue(PEEK_SHARED_QUEUE, &shared, err, errlen);
	if (!ret)
		ret = find_forwarded("shared queue", &shared, held ? rs.image.shared.count : 0,
				     &d->shared, merged, err, errlen);
	sigmig_rawbuf_free(&shared);
	return ret;
}


/* ---- forwarded signals, into a copy that runs or is frozen ---- */

static int call_requeue_private(struct rt_thread *t)
{
	return t->delta ? requeue_private(t, &t->delta->pending) : 0;
}

static int call_requeue_shared(struct rt_thread *t)
{
	return requeue_shared_queue(rs.delta_shared, t->err, sizeof(t->err));
}

static int post_call(struct rt_thread *t, int (*call)(struct rt_thread *t),
		     const char *what, char *err, size_t errlen)
{
	int ret;

	t->call = call;
	ret = post_delta(t, CMD_CALL, what, err, errlen);
	t->call = NULL;
	return ret;
}

/*
 * Who may queue on the process-wide queue with any si_code: any thread
 * through write(), only the main thread through rt_sigqueueinfo().
 */
static struct rt_thread *shared_writer(void)
{
	unsigned int i;

	for (i = 0; i < sigmig_nthreads(); i++) {
		struct rt_thread *t = sigmig_thread(i);

		if (atomic_load(&t->registered) && (rs.by_write || t->tid == getpid()))
			return t;
	}
	return NULL;
}

static int post_parked_part(struct rt_thread *t, const char *what, char *err,
			    size_t errlen)
{
	return post_call(t, call_requeue_private, what, err, errlen);
}

static int requeue_parked(const struct sigmig_image *d, char *err, size_t errlen)
{
	struct rt_thread *writer;
	int ret = requeue_threads(d, post_parked_part, err, errlen);

	if (ret || !d->shared.count)
		return ret;
	writer = shared_writer();
	if (!writer) {
		snprintf(err, errlen, "no thread may requeue the shared queue (the main thread is not registered)");
		return -EPERM;
	}
	rs.delta_shared = &d->shared;
	ret = post_call(writer, call_requeue_shared, "requeue, shared queue", err, errlen);
	rs.delta_shared = NULL;
	return ret;
}

/* The image file @path into a @held or a parked copy, then verified. */
static int requeue_file(const char *path, int held, uint64_t *requeued,
			uint64_t *merged, char *err, size_t errlen)
{
	struct sigmig_image d;
	int ret;

	memset(&d, 0, sizeof(d));
	ret = load_delta(path, &d, err, errlen);
	if (ret)
		return ret;
	*merged = 0;
	ret = held ? requeue_delta(&d, err, errlen) : requeue_parked(&d, err, errlen);
	if (!ret)
		ret = verify_requeued(&d, held, merged, err, errlen);
	if (!ret) {
		*requeued = sigmig_image_pending_total(&d) - *merged;
		atomic_fetch_add(&rs.carried, *requeued);
	}
	sigmig_image_free(&d);
	return ret;
}

int sigmig_restore_requeue_delta(const char *path, uint64_t *requeued,
				 uint64_t *merged, char *err, size_t errlen)
{
	return requeue_file(path, 1, requeued, merged, err, errlen);
}

int sigmig_requeue_parked(const char *path, uint64_t *requeued, uint64_t *merged,
			  char *err, size_t errlen)
{
	/* a process that did not restore chose no method yet: once, here */
	if (!rs.active && !rs.probed) {
		rs.by_write = sfd_probe_write();
		rs.probed = 1;
	}
	return requeue_file(path, 0, requeued, merged, err, errlen);
}
