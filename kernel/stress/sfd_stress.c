// SPDX-License-Identifier: GPL-2.0
/*
 * sfd_stress: bounded-time concurrency stress of the signalfd pending-signal
 * interface (kernel/patches/).
 *
 * While several threads peek both queues with pread() (and so pin queue
 * entries between siglock holds, sigqueue_peek() in patch 5), other threads
 * dequeue them (plain read, SFD_GROUP, SFD_PRIVATE, a signal handler,
 * sigtimedwait), senders flood both queues with sequence-numbered
 * rt_sigqueueinfo records, posix timers fire into both queues and are
 * deleted while their preallocated entry may be pinned, sigaction(SIG_IGN)
 * flushes queued entries under the walkers, threads are created and exit,
 * the signalfd is shared with dup() and fork() and its mask is changed with
 * signalfd4() on the same fd.
 *
 * Record scheme (si_code SI_QUEUE):
 *	si_errno = queue tag: 0 for the process-wide queue, the target tid
 *		   for a per-thread queue
 *	si_pid	 = PID_MAGIC | sender index
 *	si_uid	 = the sender's sequence number
 *	si_value = mix64() checksum of all of the above and a per-run salt
 * Every record any read returns is validated (signo in the fd's mask, queue
 * tag, checksum, si_code, bytes beyond the layout zero), the records one
 * pread() returns must be in each sender's sending order, and at the end
 * every sequence number sent must have been dequeued exactly once or still
 * be pending (what a final peek shows, which must equal the final drain
 * byte for byte): a pread() that dequeued would show up as a loss.
 *
 * Usage: sfd_stress [-t seconds] [-s seed]   (default 30 s; env
 * SFD_STRESS_SECONDS overrides the default).  TAP on stdout.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include "stress_common.h"

#define NSENDERS	3
#define CHILD_SENDER	7
#define MAX_SEQ		(1u << 21)
#define NHOME		4
#define NCHURN		2
#define NSLOTS		(NHOME + NCHURN)
#define BUF_RECS	256
#define MAX_OUTSTANDING	1500
#define NTIMERS		6
#define PID_MAGIC	0x5f000000
#define TIMER_MAGIC	0x71e2000000000000ULL
#define CHILD_PER_QUEUE	40
#define CHILD_SX	10
#define MAX_ERR_MSGS	20

enum err_kind {
	E_TORN,		/* bad checksum, si_code, layout bytes, size */
	E_MASK,		/* a signal outside the fd's mask */
	E_QUEUE,	/* a record of the other queue / another thread */
	E_ORDER,	/* one pread() out of sending order */
	E_DUP,		/* dequeued twice */
	E_SYSCALL,	/* an unexpected syscall failure */
	E_MODE,		/* signalfd4() mode change not rejected */
	E_CHILD,	/* a forked child reported a failure */
	E_FINAL,	/* end-of-run peek != drain */
	E_LOST,		/* sent, never dequeued, not pending */
	E_NKINDS
};

static const char *const err_names[E_NKINDS] = {
	"torn/invalid record", "mask violation", "foreign queue",
	"pread order", "duplicate dequeue", "syscall failure",
	"mode change accepted", "child failure", "final peek != drain",
	"lost record",
};

/* Signals, fixed at start-up from SIGRTMIN. */
static int SA1, SA2, SA3, SM, SX, SH, SI, ST, STT;
static sigset_t mask_peek;	/* fixed mask of the peek fds */
static sigset_t mask_toggle_a, mask_toggle_b, mask_toggle_union;
static sigset_t mask_all;	/* everything this program sends */

static int fd_raw, fd_classic, fd_dup, fd_toggle;	/* peeking */
static int fd_group, fd_private, fd_both, fd_classic_deq; /* dequeuing */
static int fd_final_peek, fd_final_group;

static pid_t self_pid;
static uid_t self_uid;
static uint64_t salt;
static uint64_t base_seed;

static atomic_int stop_workers, stop_senders, final_phase;
static atomic_long outstanding;

static uint64_t sent_bm[NSENDERS][MAX_SEQ / 64];
static uint64_t deq_bm[NSENDERS][MAX_SEQ / 64];
static uint64_t pend_bm[NSENDERS][MAX_SEQ / 64];
static uint32_t nsent[NSENDERS];

static atomic_long errors[E_NKINDS];
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static char err_msgs[MAX_ERR_MSGS][200];
static int nerr_msgs;

/* Statistics. */
static atomic_long st_preads, st_peeked, st_dequeued, st_handled, st_waited;
static atomic_long st_sent, st_send_eagain, st_timers_created;
static atomic_long st_timers_deleted, st_flushes, st_mask_changes;
static atomic_long st_churn_threads, st_forks, st_full_walks, st_short_walks;
static atomic_long st_peek_gave_up;
static atomic_ulong st_max_pread_ns;

struct slot {
	pthread_mutex_t lock;
	pid_t tid;
	int alive;
};

static struct slot slots[NSLOTS];
static pid_t handler_tid;

/* A handler cannot printf: it keeps the first bad record here. */
static atomic_int handler_bad;
static siginfo_t handler_bad_info;
static const char *handler_bad_why;

static void report(enum err_kind kind, const char *fmt, ...)
{
	va_list ap;

	atomic_fetch_add(&errors[kind], 1);
	pthread_mutex_lock(&err_lock);
	if (nerr_msgs < MAX_ERR_MSGS) {
		int n = snprintf(err_msgs[nerr_msgs], sizeof(err_msgs[0]),
				 "%s: ", err_names[kind]);

		va_start(ap, fmt);
		vsnprintf(err_msgs[nerr_msgs] + n, sizeof(err_msgs[0]) - n,
			  fmt, ap);
		va_end(ap);
		nerr_msgs++;
	}
	pthread_mutex_unlock(&err_lock);
}

static int bm_test_and_set(uint64_t *bm, uint32_t bit)
{
	uint64_t m = 1ULL << (bit % 64);

	return !!(__atomic_fetch_or(&bm[bit / 64], m, __ATOMIC_RELAXED) & m);
}

static uint64_t record_sum(int sig, int tag, int sender, uint32_t seq)
{
	return mix64(((uint64_t)sig << 56) ^ ((uint64_t)sender << 48) ^
		     ((uint64_t)(uint32_t)tag << 16) ^ ((uint64_t)seq << 1) ^
		     salt);
}

static int is_accounted(int sig)
{
	return sig == SA1 || sig == SA2 || sig == SA3 || sig == SM ||
	       sig == SX || sig == SH;
}

/* A record, whichever format it was read in. */
struct rec {
	int signo, err, code;
	int32_t pid;
	uint32_t uid;
	uint64_t ptr;
	int32_t sint;
	int32_t overrun;
	int32_t sys_private;
};

static void parse_record(const uint8_t *b, int raw, struct rec *r)
{
	if (raw) {
		const siginfo_t *si = (const siginfo_t *)b;

		r->signo = si->si_signo;
		r->err = si->si_errno;
		r->code = si->si_code;
		r->pid = si->si_pid;
		r->uid = si->si_uid;
		r->ptr = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
		r->sint = si->si_value.sival_int;
		r->overrun = si->si_overrun;
		memcpy(&r->sys_private, b + 32, sizeof(r->sys_private));
	} else {
		const struct signalfd_siginfo *ss =
			(const struct signalfd_siginfo *)b;

		r->signo = (int)ss->ssi_signo;
		r->err = ss->ssi_errno;
		r->code = ss->ssi_code;
		r->pid = (int32_t)ss->ssi_pid;
		r->uid = ss->ssi_uid;
		r->ptr = ss->ssi_ptr;
		r->sint = ss->ssi_int;
		r->overrun = (int32_t)ss->ssi_overrun;
		r->sys_private = 0;
	}
}

static int zero_range(const uint8_t *b, size_t from, size_t to)
{
	for (; from < to; from++)
		if (b[from])
			return 0;
	return 1;
}

/* The bytes a layout does not define must be zero. */
static const char *check_layout_bytes(const uint8_t *b, int raw, int layout)
{
	static const size_t ss_ranges[3][8] = {
		/* rt: signo..uid, int, ptr */
		{ 0, 20, 44, 56, 0, 0, 0, 0 },
		/* timer: signo..code, tid, overrun, int, ptr */
		{ 0, 12, 24, 28, 32, 36, 44, 56 },
		/* kill: signo..uid */
		{ 0, 20, 0, 0, 0, 0, 0, 0 },
	};
	const size_t *r;
	size_t pos = 0;
	int i;

	if (raw) {
		size_t end = layout == 2 ? 24 : 32;

		if (!zero_range(b, 12, 16) || !zero_range(b, end, SI_MAX_SIZE))
			return "non-zero byte beyond the siginfo layout";
		return NULL;
	}
	r = ss_ranges[layout];
	for (i = 0; i < 8; i += 2) {
		if (!r[i + 1])
			break;
		if (!zero_range(b, pos, r[i]))
			return "non-zero signalfd_siginfo field outside the layout";
		pos = r[i + 1];
	}
	if (!zero_range(b, pos, SI_MAX_SIZE))
		return "non-zero signalfd_siginfo tail";
	return NULL;
}

/* Where a record was read from, and what the reader may see. */
struct vctx {
	int shared;		/* the process-wide queue */
	int any;		/* a dequeue that may take either queue */
	pid_t tid;		/* the reader */
	const sigset_t *allowed;
	int raw;
};

static int tag_ok(const struct vctx *c, int tag)
{
	if (c->any)
		return tag == 0 || tag == c->tid;
	return c->shared ? tag == 0 : tag == c->tid;
}

/*
 * Returns NULL for a good record, else why not; *kind says which
 * invariant broke.  Async-signal-safe (the handler uses it).
 */
static const char *validate(const uint8_t *b, const struct vctx *c,
			    struct rec *r, enum err_kind *kind)
{
	const char *why;
	int sender;

	parse_record(b, c->raw, r);
	*kind = E_MASK;
	if (r->signo < 1 || r->signo > 64 || !sigismember(c->allowed, r->signo))
		return "signal not in the fd's mask";
	*kind = E_TORN;
	if (r->signo == ST || r->signo == STT) {
		int want_tag = r->signo == ST ? 0 : (int)(r->ptr & 0xffffffff);

		if (r->code != SI_TIMER || r->err)
			return "timer record with a wrong si_code/si_errno";
		if ((r->ptr & ~0xffffffffULL) != TIMER_MAGIC)
			return "timer record with a foreign si_value";
		if (r->sint != (int32_t)r->ptr || r->overrun < 0)
			return "timer record torn (int/overrun)";
		if (r->sys_private)
			return "si_sys_private leaked";
		why = check_layout_bytes(b, c->raw, 1);
		if (why)
			return why;
		*kind = E_QUEUE;
		return tag_ok(c, want_tag) ? NULL : "timer of the other queue";
	}
	if (r->signo == SIGUSR1) {
		if ((r->code != SI_USER && r->code != SI_TKILL) || r->err ||
		    r->pid != self_pid || r->uid != self_uid)
			return "kill record torn";
		why = check_layout_bytes(b, c->raw, 2);
		if (why)
			return why;
		*kind = E_QUEUE;
		if (c->any)
			return NULL;
		return (r->code == SI_USER) == !!c->shared ? NULL :
			"kill()/tgkill() record of the other queue";
	}
	if (r->code != SI_QUEUE)
		return "unexpected si_code";
	sender = r->pid & 0xffffff;
	if ((r->pid & ~0xffffff) != PID_MAGIC ||
	    (sender >= NSENDERS && sender != CHILD_SENDER))
		return "foreign si_pid";
	if (r->ptr != record_sum(r->signo, r->err, sender, r->uid) ||
	    r->sint != (int32_t)r->ptr)
		return "checksum mismatch";
	why = check_layout_bytes(b, c->raw, 0);
	if (why)
		return why;
	*kind = E_QUEUE;
	return tag_ok(c, r->err) ? NULL : "record of the other queue";
}

static void note_pread_time(double t0)
{
	unsigned long ns = (unsigned long)((now_s() - t0) * 1e9);
	unsigned long old = atomic_load(&st_max_pread_ns);

	while (ns > old &&
	       !atomic_compare_exchange_weak(&st_max_pread_ns, &old, ns))
		;
}

/* Checks a pread() result; the records must follow each sender's order. */
static void check_peek(const uint8_t *buf, ssize_t n, size_t asked,
		       const struct vctx *c, const char *what)
{
	int64_t last[CHILD_SENDER + 1][2];
	enum err_kind kind;
	struct rec r;
	ssize_t i;

	/*
	 * A peek whose resume entry keeps being dequeued gives up after a few
	 * restarts (EAGAIN, signalfd.2): the dequeuers here do exactly that,
	 * now and then. Counted, and bounded below; anything else is a bug.
	 */
	if (n < 0 && errno == EAGAIN) {
		atomic_fetch_add(&st_peek_gave_up, 1);
		return;
	}
	if (n < 0) {
		report(E_SYSCALL, "%s pread: %s", what, strerror(errno));
		return;
	}
	if (n % SI_MAX_SIZE || (size_t)n > asked) {
		report(E_TORN, "%s pread returned %zd for %zu", what, n, asked);
		return;
	}
	memset(last, 0xff, sizeof(last));
	for (i = 0; i < n / SI_MAX_SIZE; i++) {
		const uint8_t *b = buf + i * SI_MAX_SIZE;
		const char *why = validate(b, c, &r, &kind);
		int sender;

		if (why) {
			report(kind, "%s peek record %zd: %s (signo %d code %d errno %d pid %#x uid %u tid %d)",
			       what, i, why, r.signo, r.code, r.err, r.pid,
			       r.uid, c->tid);
			continue;
		}
		if (r.code != SI_QUEUE)
			continue;
		sender = r.pid & 0xffffff;
		if (sender > CHILD_SENDER)
			continue;
		if (last[sender][0] >= 0 && (int64_t)r.uid <= last[sender][0])
			report(E_ORDER, "%s: sender %d seq %u after %lld in one pread",
			       what, sender, r.uid, (long long)last[sender][0]);
		last[sender][0] = r.uid;
	}
	atomic_fetch_add(&st_peeked, n / SI_MAX_SIZE);
}

static void account_dequeued(const struct rec *r)
{
	int sender = r->pid & 0xffffff;

	if (r->code != SI_QUEUE || !is_accounted(r->signo))
		return;
	if (sender >= NSENDERS || r->uid >= MAX_SEQ) {
		report(E_TORN, "dequeued record of sender %d seq %u",
		       sender, r->uid);
		return;
	}
	if (bm_test_and_set(deq_bm[sender], r->uid))
		report(E_DUP, "sender %d seq %u signo %d", sender, r->uid,
		       r->signo);
	atomic_fetch_sub(&outstanding, 1);
}

static void check_dequeue(const uint8_t *buf, ssize_t n, const struct vctx *c,
			  const char *what)
{
	enum err_kind kind;
	struct rec r;
	ssize_t i;

	if (n < 0) {
		if (errno != EAGAIN)
			report(E_SYSCALL, "%s read: %s", what, strerror(errno));
		return;
	}
	if (n % SI_MAX_SIZE) {
		report(E_TORN, "%s read returned %zd", what, n);
		return;
	}
	for (i = 0; i < n / SI_MAX_SIZE; i++) {
		const char *why = validate(buf + i * SI_MAX_SIZE, c, &r, &kind);

		if (why) {
			report(kind, "%s dequeued record: %s (signo %d code %d errno %d tid %d)",
			       what, why, r.signo, r.code, r.err, c->tid);
			continue;
		}
		account_dequeued(&r);
	}
	atomic_fetch_add(&st_dequeued, n / SI_MAX_SIZE);
}

static void sh_handler(int sig, siginfo_t *si, void *uc)
{
	struct vctx c = {
		.any = 1, .tid = handler_tid, .allowed = &mask_all, .raw = 1,
	};
	enum err_kind kind;
	const char *why;
	struct rec r;

	(void)sig;
	(void)uc;
	why = validate((const uint8_t *)si, &c, &r, &kind);
	if (why) {
		if (!atomic_exchange(&handler_bad, 1)) {
			handler_bad_info = *si;
			handler_bad_why = why;
		}
		return;
	}
	account_dequeued(&r);
	atomic_fetch_add(&st_handled, 1);
}

/* One pread() at a random place of a queue, through a random peek fd. */
static void random_peek(uint64_t *rs, uint8_t *buf, int shared)
{
	static const size_t counts[] = { 1, 2, 3, 7, 63, 64, 65, 130, BUF_RECS };
	struct vctx c = { .shared = shared, .tid = sys_gettid() };
	long depth = atomic_load(&outstanding) + 8;
	int which = (int)rnd_below(rs, 4);
	size_t asked = counts[rnd_below(rs, 9)] * SI_MAX_SIZE;
	off_t base = shared ? SFD_SHARED_QUEUE_OFFSET :
			      SFD_PER_THREAD_QUEUE_OFFSET;
	off_t off = base + rnd_below(rs, (uint32_t)(depth > 0 ? depth : 1));
	int fd;
	ssize_t n;
	double t0;

	if (rnd_below(rs, 4) == 0)
		off = base;
	/* An odd count that is not a multiple of the record size. */
	if (rnd_below(rs, 8) == 0)
		asked += rnd_below(rs, SI_MAX_SIZE);
	switch (which) {
	case 0: fd = fd_raw; c.raw = 1; c.allowed = &mask_peek; break;
	case 1: fd = fd_dup; c.raw = 1; c.allowed = &mask_peek; break;
	case 2: fd = fd_classic; c.raw = 0; c.allowed = &mask_peek; break;
	default: fd = fd_toggle; c.raw = 0; c.allowed = &mask_toggle_union; break;
	}
	t0 = now_s();
	n = pread(fd, buf, asked, off);
	note_pread_time(t0);
	atomic_fetch_add(&st_preads, 1);
	check_peek(buf, n, asked - asked % SI_MAX_SIZE, &c,
		   shared ? "shared" : "per-thread");
}

/* Reads a whole queue in small chunks, as a checkpointer would. */
static void chunked_walk(uint64_t *rs, uint8_t *buf, int shared)
{
	struct vctx c = {
		.shared = shared, .tid = sys_gettid(), .allowed = &mask_peek,
		.raw = 1,
	};
	off_t off = shared ? SFD_SHARED_QUEUE_OFFSET :
			     SFD_PER_THREAD_QUEUE_OFFSET;
	size_t chunk = (1 + rnd_below(rs, 5)) * SI_MAX_SIZE;
	int steps;

	for (steps = 0; steps < 64; steps++) {
		double t0 = now_s();
		ssize_t n = pread(fd_raw, buf, chunk, off);

		note_pread_time(t0);
		atomic_fetch_add(&st_preads, 1);
		check_peek(buf, n, chunk, &c, "walk");
		if (n <= 0)
			break;
		if ((size_t)n < chunk)
			atomic_fetch_add(&st_short_walks, 1);
		off += n / SI_MAX_SIZE;
	}
	atomic_fetch_add(&st_full_walks, 1);
}

static void random_dequeue(uint64_t *rs, uint8_t *buf)
{
	struct vctx c = { .tid = sys_gettid(), .allowed = &mask_all };
	size_t asked = (1 + rnd_below(rs, 16)) * SI_MAX_SIZE;
	const char *what;
	ssize_t n;
	int fd;

	switch (rnd_below(rs, 4)) {
	case 0: fd = fd_group; c.shared = 1; c.raw = 1; what = "SFD_GROUP"; break;
	case 1: fd = fd_private; c.raw = 1; what = "SFD_PRIVATE"; break;
	case 2: fd = fd_both; c.any = 1; c.raw = 1; what = "plain"; break;
	default: fd = fd_classic_deq; c.any = 1; what = "classic"; break;
	}
	n = read(fd, buf, asked);
	check_dequeue(buf, n, &c, what);
}

/* Thread 0 also takes SH through its handler and SA2 by sigtimedwait. */
static void handler_actions(uint64_t *rs)
{
	struct timespec zero = { 0, 0 };
	sigset_t set;
	siginfo_t si;

	sigemptyset(&set);
	if (rnd_below(rs, 2)) {
		sigaddset(&set, SH);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
		return;
	}
	sigaddset(&set, SA2);
	memset(&si, 0, sizeof(si));
	if (sigtimedwait(&set, &si, &zero) == SA2) {
		struct vctx c = {
			.any = 1, .tid = sys_gettid(), .allowed = &mask_all,
			.raw = 1,
		};
		enum err_kind kind;
		const char *why;
		struct rec r;

		why = validate((const uint8_t *)&si, &c, &r, &kind);
		if (why)
			report(kind, "sigtimedwait record: %s", why);
		else
			account_dequeued(&r);
		atomic_fetch_add(&st_waited, 1);
	}
}

static void worker_step(uint64_t *rs, uint8_t *buf, int is_handler)
{
	uint32_t dice = rnd_below(rs, 100);

	if (dice < 30)
		random_peek(rs, buf, 1);
	else if (dice < 50)
		random_peek(rs, buf, 0);
	else if (dice < 55)
		chunked_walk(rs, buf, (int)rnd_below(rs, 2));
	else if (dice < 90 || !is_handler)
		random_dequeue(rs, buf);
	else
		handler_actions(rs);
}

/* End of run: what a final peek shows must be what the drain dequeues. */
static void final_peek_and_drain(int shared, uint8_t *buf)
{
	size_t cap = 4096, have = 0, drained = 0, next_of_sig[64];
	off_t off = shared ? SFD_SHARED_QUEUE_OFFSET :
			     SFD_PER_THREAD_QUEUE_OFFSET;
	int drain_fd = shared ? fd_final_group : fd_private;
	uint8_t *peeked = malloc(cap * SI_MAX_SIZE);
	struct vctx c = {
		.shared = shared, .tid = sys_gettid(), .allowed = &mask_all,
		.raw = 1,
	};
	enum err_kind kind;
	struct rec r;
	ssize_t n;
	size_t i;

	if (!peeked) {
		report(E_SYSCALL, "malloc");
		return;
	}
	for (;;) {
		if (have == cap) {
			uint8_t *p = realloc(peeked, 2 * cap * SI_MAX_SIZE);

			if (!p)
				break;
			peeked = p;
			cap *= 2;
		}
		n = pread(fd_final_peek, peeked + have * SI_MAX_SIZE,
			  (cap - have) * SI_MAX_SIZE, off + (off_t)have);
		if (n < 0)
			report(E_SYSCALL, "final pread: %s", strerror(errno));
		if (n <= 0)
			break;
		have += n / SI_MAX_SIZE;
	}
	for (i = 0; i < have; i++) {
		const uint8_t *b = peeked + i * SI_MAX_SIZE;
		const char *why = validate(b, &c, &r, &kind);
		int sender = r.pid & 0xffffff;

		if (why) {
			report(kind, "final peek: %s", why);
			continue;
		}
		if (r.code != SI_QUEUE || !is_accounted(r.signo))
			continue;
		if (sender >= NSENDERS || r.uid >= MAX_SEQ) {
			report(E_TORN, "final peek: sender %d seq %u", sender, r.uid);
			continue;
		}
		if (bm_test_and_set(pend_bm[sender], r.uid))
			report(E_DUP, "pending twice: sender %d seq %u", sender, r.uid);
	}
	/*
	 * read() takes the lowest pending signal first, so the drain follows
	 * queue order only per signal: match each drained record with the
	 * next peeked one of the same signal.
	 */
	memset(next_of_sig, 0, sizeof(next_of_sig));
	for (;;) {
		n = read(drain_fd, buf, BUF_RECS * SI_MAX_SIZE);
		if (n <= 0)
			break;
		for (i = 0; i < (size_t)n / SI_MAX_SIZE; i++, drained++) {
			const uint8_t *d = buf + i * SI_MAX_SIZE;
			int sig = d[0] & 63;
			size_t *k = &next_of_sig[sig];

			while (*k < have && peeked[*k * SI_MAX_SIZE] != d[0])
				(*k)++;
			if (*k >= have ||
			    memcmp(d, peeked + *k * SI_MAX_SIZE, SI_MAX_SIZE))
				report(E_FINAL, "%s queue: drained record %zu (signal %d) is not the next peeked one (%zu peeked)",
				       shared ? "shared" : "per-thread", drained, d[0], have);
			else
				(*k)++;
		}
	}
	if (drained != have)
		report(E_FINAL, "%s queue: peeked %zu, drained %zu",
		       shared ? "shared" : "per-thread", have, drained);
	free(peeked);
}

static uint8_t *alloc_buf(void)
{
	uint8_t *buf = malloc(BUF_RECS * SI_MAX_SIZE + SI_MAX_SIZE);

	if (!buf) {
		perror("malloc");
		exit(2);
	}
	return buf;
}

static void *home_thread(void *arg)
{
	int idx = (int)(intptr_t)arg;
	uint64_t rs = base_seed ^ (0x1000 + (uint64_t)idx) * 0x9e3779b97f4a7c15ULL;
	uint8_t *buf = alloc_buf();

	pthread_mutex_lock(&slots[idx].lock);
	slots[idx].tid = sys_gettid();
	if (idx == 0)
		handler_tid = slots[idx].tid;
	slots[idx].alive = 1;
	pthread_mutex_unlock(&slots[idx].lock);

	while (!atomic_load(&stop_workers))
		worker_step(&rs, buf, idx == 0);
	while (!atomic_load(&final_phase))
		usleep(1000);
	final_peek_and_drain(0, buf);
	free(buf);
	return NULL;
}

static void *churn_thread(void *arg)
{
	int idx = (int)(intptr_t)arg;
	uint64_t rs = base_seed ^ mix64((uint64_t)sys_gettid() << 8 | idx);
	double end = now_s() + 0.02 + rnd_below(&rs, 130) / 1000.0;
	struct vctx c = {
		.tid = sys_gettid(), .allowed = &mask_all, .raw = 1,
	};
	uint8_t *buf = alloc_buf();
	ssize_t n;

	pthread_mutex_lock(&slots[idx].lock);
	slots[idx].tid = c.tid;
	slots[idx].alive = 1;
	pthread_mutex_unlock(&slots[idx].lock);

	while (now_s() < end && !atomic_load(&stop_workers))
		worker_step(&rs, buf, 0);

	/* No sender targets us after this: drain what was sent, then go. */
	pthread_mutex_lock(&slots[idx].lock);
	slots[idx].alive = 0;
	pthread_mutex_unlock(&slots[idx].lock);
	do {
		n = read(fd_private, buf, BUF_RECS * SI_MAX_SIZE);
		check_dequeue(buf, n, &c, "churn drain");
	} while (n > 0);
	free(buf);
	atomic_fetch_add(&st_churn_threads, 1);
	return NULL;
}

static void *churn_manager(void *arg)
{
	pthread_t th[NCHURN];
	int i, err;

	(void)arg;
	while (!atomic_load(&stop_workers)) {
		for (i = 0; i < NCHURN; i++) {
			err = pthread_create(&th[i], NULL, churn_thread,
					     (void *)(intptr_t)(NHOME + i));
			if (err) {
				report(E_SYSCALL, "pthread_create: %s", strerror(err));
				return NULL;
			}
		}
		for (i = 0; i < NCHURN; i++)
			pthread_join(th[i], NULL);
	}
	return NULL;
}

static void build_record(siginfo_t *si, int sig, int tag, int sender,
			 uint32_t seq)
{
	memset(si, 0, sizeof(*si));
	si->si_signo = sig;
	si->si_errno = tag;
	si->si_code = SI_QUEUE;
	si->si_pid = PID_MAGIC | sender;
	si->si_uid = seq;
	si->si_value.sival_ptr =
		(void *)(uintptr_t)record_sum(sig, tag, sender, seq);
}

static int pick_signal(uint64_t *rs)
{
	uint32_t d = rnd_below(rs, 100);

	if (d < 25)
		return SA1;
	if (d < 40)
		return SA2;
	if (d < 55)
		return SA3;
	if (d < 65)
		return SM;
	if (d < 75)
		return SX;
	if (d < 85)
		return SH;
	if (d < 95)
		return SI;
	return SIGUSR1;
}

/* Sends one signal; returns 1 if it used up sequence number @seq. */
static int send_one(uint64_t *rs, int sender, uint32_t seq)
{
	int sig = pick_signal(rs);
	struct slot *s = NULL;
	siginfo_t si;
	int ret;

	if (rnd_below(rs, 10) >= 4)
		s = &slots[rnd_below(rs, NSLOTS)];
	if (sig == SIGUSR1) {
		if (!s)
			return kill(self_pid, SIGUSR1), 0;
		pthread_mutex_lock(&s->lock);
		if (s->alive)
			sys_tgkill(self_pid, s->tid, SIGUSR1);
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	if (!s) {
		build_record(&si, sig, 0, sender, seq);
		ret = sys_rt_sigqueueinfo(self_pid, sig, &si);
	} else {
		pthread_mutex_lock(&s->lock);
		if (!s->alive) {
			pthread_mutex_unlock(&s->lock);
			return 0;
		}
		build_record(&si, sig, s->tid, sender, seq);
		ret = sys_rt_tgsigqueueinfo(self_pid, s->tid, sig, &si);
		pthread_mutex_unlock(&s->lock);
	}
	if (ret) {
		if (errno == EAGAIN) {
			atomic_fetch_add(&st_send_eagain, 1);
			usleep(200);
		} else {
			report(E_SYSCALL, "rt_(tg)sigqueueinfo: %s", strerror(errno));
		}
		return 0;
	}
	if (!is_accounted(sig))
		return 1;	/* SI records use up a sequence number too */
	bm_test_and_set(sent_bm[sender], seq);
	atomic_fetch_add(&outstanding, 1);
	atomic_fetch_add(&st_sent, 1);
	return 1;
}

static void *sender_thread(void *arg)
{
	int sender = (int)(intptr_t)arg;
	uint64_t rs = base_seed ^ (0x2000 + (uint64_t)sender) * 0x9e3779b97f4a7c15ULL;
	uint32_t seq = 0;

	while (!atomic_load(&stop_senders) && seq < MAX_SEQ) {
		if (atomic_load(&outstanding) > MAX_OUTSTANDING) {
			usleep(500);
			continue;
		}
		seq += send_one(&rs, sender, seq);
	}
	nsent[sender] = seq;
	return NULL;
}

struct live_timer {
	timer_t id;
	double expires;
	int used;
};

static void start_timer(uint64_t *rs, struct live_timer *t)
{
	struct itimerspec its = { 0 };
	struct sigevent sev;
	long ns = 100000 + (long)rnd_below(rs, 1900000);

	memset(&sev, 0, sizeof(sev));
	if (rnd_below(rs, 2)) {
		sev.sigev_notify = SIGEV_SIGNAL;
		sev.sigev_signo = ST;
		sev.sigev_value.sival_ptr = (void *)(uintptr_t)TIMER_MAGIC;
	} else {
		pid_t tid = slots[rnd_below(rs, NHOME)].tid;

		sev.sigev_notify = SIGEV_THREAD_ID;
		sev._sigev_un._tid = tid;	/* sigev_notify_thread_id */
		sev.sigev_signo = STT;
		sev.sigev_value.sival_ptr =
			(void *)(uintptr_t)(TIMER_MAGIC | (uint32_t)tid);
	}
	if (timer_create(CLOCK_MONOTONIC, &sev, &t->id)) {
		report(E_SYSCALL, "timer_create: %s", strerror(errno));
		return;
	}
	its.it_value.tv_nsec = ns;
	its.it_interval.tv_nsec = ns;
	if (timer_settime(t->id, 0, &its, NULL))
		report(E_SYSCALL, "timer_settime: %s", strerror(errno));
	t->expires = now_s() + 0.005 + rnd_below(rs, 80) / 1000.0;
	t->used = 1;
	atomic_fetch_add(&st_timers_created, 1);
}

static void stop_timer(struct live_timer *t)
{
	if (timer_delete(t->id))
		report(E_SYSCALL, "timer_delete: %s", strerror(errno));
	t->used = 0;
	atomic_fetch_add(&st_timers_deleted, 1);
}

/* Periodic timers come and go; deletion may meet a pinned entry. */
static void *timer_thread(void *arg)
{
	struct live_timer timers[NTIMERS] = { 0 };
	uint64_t rs = base_seed ^ 0x3000;
	int i;

	(void)arg;
	while (!atomic_load(&stop_senders)) {
		double now = now_s();

		for (i = 0; i < NTIMERS; i++) {
			if (timers[i].used && now >= timers[i].expires)
				stop_timer(&timers[i]);
			if (!timers[i].used)
				start_timer(&rs, &timers[i]);
		}
		usleep(1000);
	}
	for (i = 0; i < NTIMERS; i++)
		if (timers[i].used)
			stop_timer(&timers[i]);
	return NULL;
}

static void set_handler(int sig, void (*h)(int, siginfo_t *, void *))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = h;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL))
		report(E_SYSCALL, "sigaction: %s", strerror(errno));
}

static void never_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
}

/* SIG_IGN flushes the signal from every queue, under the walkers. */
static void *flush_thread(void *arg)
{
	uint64_t rs = base_seed ^ 0x4000;
	struct sigaction ign;

	(void)arg;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	while (!atomic_load(&stop_senders)) {
		int victims[3] = { SI, ST, STT };
		int sig = victims[rnd_below(&rs, 3)];

		if (sigaction(sig, &ign, NULL))
			report(E_SYSCALL, "sigaction(SIG_IGN): %s", strerror(errno));
		set_handler(sig, never_handler);
		atomic_fetch_add(&st_flushes, 1);
		usleep(2000 + rnd_below(&rs, 4000));
	}
	return NULL;
}

static void expect_mode_einval(int fd, int flags, const sigset_t *mask,
			       const char *what)
{
	if (sys_signalfd4(fd, mask, KERNEL_SIGSET_SIZE, flags) != -1 ||
	    errno != EINVAL)
		report(E_MODE, "signalfd4 on %s accepted flags %#x", what, flags);
}

/* Changes the mask of fd_toggle; mode changes must be refused. */
static void *toggle_thread(void *arg)
{
	uint64_t rs = base_seed ^ 0x5000;
	int flip = 0;

	(void)arg;
	while (!atomic_load(&stop_senders)) {
		const sigset_t *m = flip ? &mask_toggle_a : &mask_toggle_b;

		flip = !flip;
		if (sys_signalfd4(fd_toggle, m, KERNEL_SIGSET_SIZE, SFD_NONBLOCK) != fd_toggle)
			report(E_SYSCALL, "signalfd4 mask change: %s", strerror(errno));
		atomic_fetch_add(&st_mask_changes, 1);
		switch (rnd_below(&rs, 16)) {
		case 0: expect_mode_einval(fd_toggle, SFD_RAW, m, "classic fd"); break;
		case 1: expect_mode_einval(fd_raw, 0, &mask_peek, "raw fd"); break;
		case 2: expect_mode_einval(fd_dup, SFD_RAW | SFD_GROUP, &mask_peek, "dup fd"); break;
		case 3: expect_mode_einval(fd_group, SFD_RAW | SFD_PRIVATE, &mask_all, "group fd"); break;
		default: break;
		}
		usleep(500 + rnd_below(&rs, 1000));
	}
	return NULL;
}

static void child_say(const char *msg)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "# fork child %d: %s\n",
			 (int)getpid(), msg);

	if (write(STDOUT_FILENO, line, (size_t)n) < 0)
		_exit(9);
}

/* Reads one whole queue of the child through @fd. */
static ssize_t child_peek_all(int fd, off_t base, uint8_t *buf, size_t cap)
{
	size_t have = 0;
	ssize_t n;

	while (have < cap) {
		n = pread(fd, buf + have * SI_MAX_SIZE,
			  (cap - have) * SI_MAX_SIZE, base + (off_t)have);
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		have += (size_t)n / SI_MAX_SIZE;
	}
	return (ssize_t)have;
}

/* Checks that a child queue holds exactly the parent's records, in order. */
static int child_check_queue(const uint8_t *buf, ssize_t n, int shared,
			     int want)
{
	struct vctx c = {
		.shared = shared, .tid = getpid(), .allowed = &mask_all, .raw = 1,
	};
	enum err_kind kind;
	int64_t last = -1;
	struct rec r;
	ssize_t i;

	if (n != want)
		return 0;
	for (i = 0; i < n; i++) {
		if (validate(buf + i * SI_MAX_SIZE, &c, &r, &kind) ||
		    (r.pid & 0xffffff) != CHILD_SENDER || (int64_t)r.uid <= last)
			return 0;
		last = r.uid;
	}
	return 1;
}

/*
 * A forked child shares the parent's signalfds but has its own queues:
 * its peeks must show exactly what the parent queued to it, never an
 * entry of the parent, and its mask changes go to the shared fd.
 */
static int child_main(void)
{
	static uint8_t buf[4 * CHILD_PER_QUEUE * SI_MAX_SIZE];
	const int all = CHILD_PER_QUEUE + CHILD_SX;
	double deadline = now_s() + 30;
	int ok = 0, total = 0, q;
	ssize_t n;

	/*
	 * The parent may still be queueing: wait until every view shows
	 * exactly its records, SX only through fd_both (mask_all), never
	 * through the peek fds.
	 */
	while (now_s() < deadline && !ok) {
		ok = 1;
		for (q = 0; q < 2; q++) {
			off_t base = q ? SFD_SHARED_QUEUE_OFFSET :
					 SFD_PER_THREAD_QUEUE_OFFSET;

			n = child_peek_all(q ? fd_raw : fd_dup, base, buf,
					   4 * CHILD_PER_QUEUE);
			ok &= child_check_queue(buf, n, q, CHILD_PER_QUEUE);
			n = child_peek_all(fd_both, base, buf, 4 * CHILD_PER_QUEUE);
			ok &= child_check_queue(buf, n, q, all);
		}
		sys_signalfd4(fd_toggle, &mask_toggle_a, KERNEL_SIGSET_SIZE, 0);
		if (!ok)
			usleep(1000);
	}
	if (!ok) {
		child_say("the peeks never showed exactly the parent's records");
		return 1;
	}
	for (;;) {
		n = read(fd_both, buf, sizeof(buf));
		if (n <= 0)
			break;
		total += (int)(n / SI_MAX_SIZE);
	}
	if (total != 2 * all) {
		child_say("drain count differs from what was queued");
		return 3;
	}
	if (pread(fd_both, buf, SI_MAX_SIZE, SFD_SHARED_QUEUE_OFFSET) != 0 ||
	    pread(fd_both, buf, SI_MAX_SIZE, SFD_PER_THREAD_QUEUE_OFFSET) != 0) {
		child_say("queues not empty after the drain");
		return 4;
	}
	return 0;
}

static void parent_feed_child(pid_t child)
{
	uint32_t seq = 0;
	siginfo_t si;
	int i, q;

	for (i = 0; i < CHILD_PER_QUEUE + CHILD_SX; i++) {
		for (q = 0; q < 2; q++) {
			int sig = i < CHILD_PER_QUEUE ? SA1 : SX;
			int ret;

			build_record(&si, sig, q ? 0 : child, CHILD_SENDER, seq++);
			do {
				ret = q ? sys_rt_sigqueueinfo(child, sig, &si) :
					  sys_rt_tgsigqueueinfo(child, child, sig, &si);
			} while (ret && errno == EAGAIN && !usleep(500));
			if (ret)
				report(E_SYSCALL, "queue to child: %s", strerror(errno));
		}
	}
}

static void *fork_thread(void *arg)
{
	uint64_t rs = base_seed ^ 0x6000;

	(void)arg;
	while (!atomic_load(&stop_senders)) {
		double deadline;
		pid_t child;
		int status = 0;

		child = fork();
		if (child < 0) {
			report(E_SYSCALL, "fork: %s", strerror(errno));
			break;
		}
		if (child == 0)
			_exit(child_main());
		parent_feed_child(child);
		deadline = now_s() + 60;
		while (waitpid(child, &status, WNOHANG) == 0) {
			if (now_s() > deadline) {
				kill(child, SIGKILL);
				waitpid(child, &status, 0);
				break;
			}
			usleep(2000);
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			report(E_CHILD, "child %d status %#x", (int)child, status);
		atomic_fetch_add(&st_forks, 1);
		usleep(50000 + rnd_below(&rs, 200000));
	}
	return NULL;
}

static void make_sets(void)
{
	int peek_sigs[] = { SA1, SA2, SA3, SH, SI, ST, STT, SIGUSR1 };
	int extra[] = { SM, SX };
	size_t i;

	sigemptyset(&mask_peek);
	for (i = 0; i < sizeof(peek_sigs) / sizeof(peek_sigs[0]); i++)
		sigaddset(&mask_peek, peek_sigs[i]);
	mask_all = mask_peek;
	for (i = 0; i < 2; i++)
		sigaddset(&mask_all, extra[i]);
	mask_toggle_a = mask_peek;
	mask_toggle_b = mask_peek;
	sigdelset(&mask_toggle_b, SA3);
	sigaddset(&mask_toggle_b, SM);
	mask_toggle_union = mask_peek;
	sigaddset(&mask_toggle_union, SM);
}

static int open_sfd(const sigset_t *mask, int flags)
{
	int fd = sys_signalfd4(-1, mask, KERNEL_SIGSET_SIZE, flags | SFD_NONBLOCK);

	if (fd < 0) {
		printf("Bail out! signalfd4(flags %#x): %s\n", flags,
		       strerror(errno));
		exit(1);
	}
	return fd;
}

static void setup(void)
{
	struct rlimit rl = { 1 << 16, 1 << 16 };
	sigset_t block;
	int i;

	SA1 = SIGRTMIN + 1; SA2 = SIGRTMIN + 2; SA3 = SIGRTMIN + 3;
	SM = SIGRTMIN + 4; SX = SIGRTMIN + 5; SI = SIGRTMIN + 6;
	ST = SIGRTMIN + 7; STT = SIGRTMIN + 8; SH = SIGRTMIN + 9;
	self_pid = getpid();
	self_uid = getuid();
	salt = mix64(base_seed ^ (uint64_t)self_pid);
	/* Root may raise it; otherwise the default limit only throttles. */
	setrlimit(RLIMIT_SIGPENDING, &rl);
	make_sets();

	sigfillset(&block);
	sigdelset(&block, SIGSEGV);
	sigdelset(&block, SIGBUS);
	sigdelset(&block, SIGILL);
	sigdelset(&block, SIGFPE);
	sigdelset(&block, SIGABRT);
	sigdelset(&block, SIGINT);
	sigdelset(&block, SIGTERM);
	pthread_sigmask(SIG_SETMASK, &block, NULL);
	set_handler(SH, sh_handler);
	for (i = 0; i < NSLOTS; i++)
		pthread_mutex_init(&slots[i].lock, NULL);

	fd_raw = open_sfd(&mask_peek, SFD_RAW);
	fd_classic = open_sfd(&mask_peek, 0);
	fd_dup = dup(fd_raw);
	fd_toggle = open_sfd(&mask_toggle_a, 0);
	fd_group = open_sfd(&mask_all, SFD_RAW | SFD_GROUP);
	fd_private = open_sfd(&mask_all, SFD_RAW | SFD_PRIVATE);
	fd_both = open_sfd(&mask_all, SFD_RAW);
	fd_classic_deq = open_sfd(&mask_all, 0);
	fd_final_peek = open_sfd(&mask_all, SFD_RAW | SFD_PRIVATE);
	fd_final_group = open_sfd(&mask_all, SFD_RAW | SFD_GROUP);
}

static void report_bits(enum err_kind kind, const char *what, int sender,
			uint32_t word, uint64_t bits, long *count)
{
	int b;

	for (b = 0; b < 64; b++) {
		if (!(bits & (1ULL << b)))
			continue;
		if (*count < 5)
			report(kind, "%s: sender %d seq %u", what, sender,
			       word * 64 + b);
		(*count)++;
	}
}

static void check_accounting(long *lost, long *dup, long *phantom)
{
	uint32_t w;
	int s;

	*lost = *dup = *phantom = 0;
	for (s = 0; s < NSENDERS; s++) {
		for (w = 0; w < MAX_SEQ / 64; w++) {
			uint64_t sent = sent_bm[s][w];
			uint64_t deq = deq_bm[s][w];
			uint64_t pend = pend_bm[s][w];

			if (!(sent | deq | pend))
				continue;
			report_bits(E_LOST, "lost", s, w, sent & ~deq & ~pend,
				    lost);
			report_bits(E_DUP, "dequeued and still pending", s, w,
				    deq & pend, dup);
			report_bits(E_TORN, "phantom", s, w,
				    ~sent & (deq | pend), phantom);
		}
	}
}

static void print_stats(double secs)
{
	tap_diag("ran %.1f s (seed %#llx)", secs, (unsigned long long)base_seed);
	tap_diag("preads %ld (records peeked %ld, full walks %ld, short reads %ld), max pread %.3f ms",
		 atomic_load(&st_preads), atomic_load(&st_peeked),
		 atomic_load(&st_full_walks), atomic_load(&st_short_walks),
		 atomic_load(&st_max_pread_ns) / 1e6);
	tap_diag("sent %ld accounted records (%ld EAGAIN), dequeued %ld by reads, %ld by handler, %ld by sigtimedwait",
		 atomic_load(&st_sent), atomic_load(&st_send_eagain),
		 atomic_load(&st_dequeued), atomic_load(&st_handled),
		 atomic_load(&st_waited));
	tap_diag("timers created %ld deleted %ld, SIG_IGN flushes %ld, mask changes %ld, churn threads %ld, forks %ld",
		 atomic_load(&st_timers_created), atomic_load(&st_timers_deleted),
		 atomic_load(&st_flushes), atomic_load(&st_mask_changes),
		 atomic_load(&st_churn_threads), atomic_load(&st_forks));
}

static double parse_duration(int argc, char **argv)
{
	const char *env = getenv("SFD_STRESS_SECONDS");
	double secs = env ? atof(env) : 30;
	int opt;

	base_seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
	while ((opt = getopt(argc, argv, "t:s:")) != -1) {
		if (opt == 't')
			secs = atof(optarg);
		else if (opt == 's')
			base_seed = strtoull(optarg, NULL, 0);
		else
			exit(2);
	}
	if (!base_seed)
		base_seed = 1;
	return secs > 0 ? secs : 30;
}

static void start(pthread_t *th, void *(*fn)(void *), intptr_t arg)
{
	int err = pthread_create(th, NULL, fn, (void *)arg);

	if (err) {
		printf("Bail out! pthread_create: %s\n", strerror(err));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	pthread_t home[NHOME], senders[NSENDERS], aux[5];
	double secs = parse_duration(argc, argv), t0;
	long lost, dup, phantom;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (tap_skip_all_if_missing("sfd_stress"))
		return 0;
	setup();
	tap_plan(9);
	t0 = now_s();
	for (i = 0; i < NHOME; i++)
		start(&home[i], home_thread, i);
	/* Timers and senders target home threads by tid: wait for all. */
	for (i = 0; i < NHOME; i++)
		while (!__atomic_load_n(&slots[i].alive, __ATOMIC_ACQUIRE))
			usleep(1000);
	for (i = 0; i < NSENDERS; i++)
		start(&senders[i], sender_thread, i);
	start(&aux[0], timer_thread, 0);
	start(&aux[1], flush_thread, 0);
	start(&aux[2], toggle_thread, 0);
	start(&aux[3], fork_thread, 0);
	start(&aux[4], churn_manager, 0);

	while (now_s() - t0 < secs)
		usleep(100000);

	atomic_store(&stop_senders, 1);
	for (i = 0; i < NSENDERS; i++)
		pthread_join(senders[i], NULL);
	for (i = 0; i < 4; i++)
		pthread_join(aux[i], NULL);
	atomic_store(&stop_workers, 1);
	pthread_join(aux[4], NULL);
	atomic_store(&final_phase, 1);
	for (i = 0; i < NHOME; i++)
		pthread_join(home[i], NULL);
	{
		uint8_t *buf = alloc_buf();

		final_peek_and_drain(1, buf);
		free(buf);
	}
	check_accounting(&lost, &dup, &phantom);
	if (atomic_load(&handler_bad))
		report(E_TORN, "handler got signo %d code %d: %s",
		       handler_bad_info.si_signo, handler_bad_info.si_code,
		       handler_bad_why);

	print_stats(now_s() - t0);
	for (i = 0; i < nerr_msgs; i++)
		tap_diag("%s", err_msgs[i]);
	tap_result(!errors[E_TORN] && !errors[E_SYSCALL] &&
		   atomic_load(&st_peek_gave_up) * 100 <= atomic_load(&st_preads),
		   "every record read is well formed (%ld peeked, %ld dequeued; %ld torn, %ld syscall errors; %ld of %ld preads gave up with EAGAIN, at most 1%% may)",
		   atomic_load(&st_peeked), atomic_load(&st_dequeued),
		   atomic_load(&errors[E_TORN]), atomic_load(&errors[E_SYSCALL]),
		   atomic_load(&st_peek_gave_up), atomic_load(&st_preads));
	tap_result(!errors[E_MASK], "the fd's mask is honoured, across signalfd4() mask changes (%ld violations)",
		   atomic_load(&errors[E_MASK]));
	tap_result(!errors[E_QUEUE], "no record of the other queue or another thread (%ld)",
		   atomic_load(&errors[E_QUEUE]));
	tap_result(!errors[E_ORDER], "each pread returns each sender's records in order (%ld)",
		   atomic_load(&errors[E_ORDER]));
	tap_result(!lost && !phantom, "sent == dequeued + pending: %ld lost, %ld phantom",
		   lost, phantom);
	tap_result(!errors[E_DUP], "nothing dequeued twice (%ld)",
		   atomic_load(&errors[E_DUP]));
	tap_result(!errors[E_FINAL], "final peek equals the final drain byte for byte (%ld)",
		   atomic_load(&errors[E_FINAL]));
	tap_result(!errors[E_CHILD] && atomic_load(&st_forks) > 0,
		   "forked children sharing the fds see only their own queues (%ld forks, %ld failed)",
		   atomic_load(&st_forks), atomic_load(&errors[E_CHILD]));
	tap_result(!errors[E_MODE], "signalfd4() refuses mode changes on existing fds (%ld accepted)",
		   atomic_load(&errors[E_MODE]));
	return tap_failed ? 1 : 0;
}
