// SPDX-License-Identifier: GPL-2.0
/*
 * Dumping a parked process: each parked thread peeks its own private queue,
 * the control thread peeks the shared queue once, then dispositions and
 * POSIX timers are collected and everything is encoded into an image.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sigmig/image.h>
#include <sigmig/runtime.h>
#include "core.h"
#include "dump.h"
#include "handlers.h"
#include "image_priv.h"
#include "peek.h"
#include "unqueued.h"
#include "util.h"

#define PEEK_TIMEOUT_MS 60000

/* The shared queue as the last DUMP took it (each thread keeps its own). */
static struct {
	int valid;
	struct rawbuf shared;
	uint64_t shared_unqueued;	/* its signals pending without an entry */
} dumped;

/* The shared queue's pending set, read just before its peek. */
static uint64_t shared_pending_set;
/* The shared queue's signals pending without an entry, as last read. */
static uint64_t peek_shared_unqueued;

static int dump_disposition(int sig, struct sigmig_disposition *d, char *err,
			    size_t errlen)
{
	struct sigaction sa;
	const char *name;

	memset(d, 0, sizeof(*d));
	if (sig == SIGMIG_FREEZE_SIGNAL || sigaction(sig, NULL, &sa))
		return 0;	/* the runtime's own, or reserved by libc: not migrated */
	d->sa_flags = (uint32_t)sa.sa_flags & ~0x04000000u;	/* SA_RESTORER is libc's */
	d->sa_mask = sigmig_sigset_to_u64(&sa.sa_mask);
	if (sa.sa_handler == SIG_DFL)
		return 0;
	if (sa.sa_handler == SIG_IGN) {
		d->kind = SIGMIG_HANDLER_IGNORE;
		return 0;
	}
	name = sigmig_handler_name(sa.sa_sigaction);
	if (!name) {
		snprintf(err, errlen, "signal %d has a handler that was not registered with sigmig_register_handler()",
			 sig);
		return -ENOENT;
	}
	d->kind = SIGMIG_HANDLER_NAMED;
	snprintf(d->handler, sizeof(d->handler), "%s", name);
	return 0;
}

static int thread_index_of(pid_t tid)
{
	unsigned int i;

	for (i = 0; i < sigmig_nthreads(); i++)
		if (atomic_load(&sigmig_thread(i)->registered) && sigmig_thread(i)->tid == tid)
			return (int)i;
	return -1;
}

/* Complete one timer parsed from /proc/self/timers with its current state. */
static int timer_state(struct sigmig_timer *t, const char *notify, int target,
		       char *err, size_t errlen)
{
	struct itimerspec its;
	int ovr;

	if (!strncmp(notify, "none/", 5)) {
		t->notify = SIGEV_NONE;
	} else if (!strncmp(notify, "signal/pid", 10)) {
		t->notify = SIGEV_SIGNAL;
	} else if (!strncmp(notify, "signal/tid", 10)) {
		t->notify = SIGEV_THREAD_ID;
		if (thread_index_of(target) < 0) {
			snprintf(err, errlen, "timer %d targets tid %d, not a registered thread",
				 t->id, target);
			return -ESRCH;
		}
		t->thread_index = (uint32_t)thread_index_of(target);
	} else {
		snprintf(err, errlen, "timer %d: notify \"%s\" cannot be migrated", t->id, notify);
		return -EOPNOTSUPP;
	}
	if (syscall(SYS_timer_gettime, t->id, &its)) {
		snprintf(err, errlen, "timer_gettime(%d): %s", t->id, strerror(errno));
		return -errno;
	}
	ovr = (int)syscall(SYS_timer_getoverrun, t->id);
	t->overrun = ovr < 0 ? 0 : ovr;
	t->interval_ns = its.it_interval.tv_sec * 1000000000ll + its.it_interval.tv_nsec;
	t->remaining_ns = its.it_value.tv_sec * 1000000000ll + its.it_value.tv_nsec;
	return 0;
}

static int add_timer(struct sigmig_image *img, struct sigmig_timer *t, char *err,
		     size_t errlen)
{
	struct sigmig_timer *n;

	if (img->ntimers == SIGMIG_MAX_TIMERS) {
		snprintf(err, errlen, "more than %u timers", SIGMIG_MAX_TIMERS);
		return -E2BIG;
	}
	n = realloc(img->timers, (img->ntimers + 1) * sizeof(*n));
	if (!n) {
		snprintf(err, errlen, "out of memory for timer %d", t->id);
		return -ENOMEM;
	}
	img->timers = n;
	img->timers[img->ntimers++] = *t;
	return 0;
}

/* /proc/self/timers: "ID:", "signal: sig/ptr", "notify: kind/pid|tid.N", "ClockID:". */
static int dump_timers(struct sigmig_image *img, char *err, size_t errlen)
{
	struct sigmig_timer t;
	char notify[64] = "", *text, *line, *save = NULL;
	unsigned long long ptr;
	int have = 0, ret, target = 0;
	size_t len;

	/* not stdio: a thread parked inside fopen()/fclose() holds its list lock */
	ret = sigmig_read_file("/proc/self/timers", (uint8_t **)&text, &len);
	if (ret) {
		snprintf(err, errlen, "reading /proc/self/timers: %s", strerror(-ret));
		return ret;
	}
	memset(&t, 0, sizeof(t));
	for (line = strtok_r(text, "\n", &save); line && !ret;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "ID: %d", &t.id) == 1) {
			have = 1;
		} else if (sscanf(line, "signal: %d/%llx", &t.signo, &ptr) == 2) {
			t.value = ptr;
		} else if (sscanf(line, "notify: %63s", notify) == 1) {
			char *dot = strrchr(notify, '.');

			target = dot ? atoi(dot + 1) : 0;
		} else if (have && sscanf(line, "ClockID: %d", &t.clock) == 1) {
			ret = timer_state(&t, notify, target, err, errlen);
			if (!ret)
				ret = add_timer(img, &t, err, errlen);
			memset(&t, 0, sizeof(t));
			have = 0;
		}
	}
	free(text);
	return ret;
}

/*
 * Each queue's pending set is read before the queue is peeked: a signal
 * that arrives in between is then in the peek but not in the set, and is
 * carried as the record it is; read after, it would also look pending
 * without one and be carried twice. A signal pending without an entry
 * when the set is read stays so: nothing dequeues while every thread is
 * parked.
 */
static int pending_set_failed(int ret, char *err, size_t errlen)
{
	snprintf(err, errlen, "pending set in /proc: %s", strerror(-ret));
	return ret;
}

static int peek_threads(char *err, size_t errlen)
{
	unsigned int i;
	int ret;

	for (i = 0; i < sigmig_nthreads(); i++) {
		struct rt_thread *t = sigmig_thread(i);

		if (!atomic_load(&t->registered))
			continue;
		ret = sigmig_pending_set(t->tid, 0, &t->pending_set);
		if (ret)
			return pending_set_failed(ret, err, errlen);
		ret = sigmig_post(t, CMD_PEEK, PEEK_TIMEOUT_MS);
		if (ret) {
			snprintf(err, errlen, "thread %u (tid %d): %s", i, t->tid,
				 ret == -ETIMEDOUT ? "peek timed out" : t->err);
			return ret;
		}
	}
	return 0;
}

static int peek_shared(struct rawbuf *shared, char *err, size_t errlen)
{
	int ret = sigmig_pending_set(getpid(), 1, &shared_pending_set);

	if (ret)
		return pending_set_failed(ret, err, errlen);
	return sigmig_peek_queue(PEEK_SHARED_QUEUE, shared, err, errlen);
}

/*
 * One image thread per registered thread, in index order, with its tid and
 * blocked mask; the caller sets the queue of each.
 */
static int add_threads(struct sigmig_image *img)
{
	unsigned int i;

	img->threads = calloc(sigmig_nthreads(), sizeof(*img->threads));
	if (!img->threads)
		return -ENOMEM;
	for (i = 0; i < sigmig_nthreads(); i++) {
		struct rt_thread *t = sigmig_thread(i);
		struct sigmig_thread *it;

		if (!atomic_load(&t->registered))
			continue;
		it = &img->threads[img->nthreads++];
		it->index = i;
		it->tid = t->tid;
		it->blocked = t->blocked;
	}
	return 0;
}

static int fill_threads(struct sigmig_image *img)
{
	uint32_t k;
	int ret;

	ret = add_threads(img);
	for (k = 0; !ret && k < img->nthreads; k++) {
		struct sigmig_thread *it = &img->threads[k];
		struct rt_thread *t = sigmig_thread(it->index);

		it->pending.count = (uint32_t)t->peek.count;
		it->pending.entries = (struct sigmig_siginfo *)t->peek.data;
	}
	return ret;
}

static void free_thread_peeks(void)
{
	unsigned int i;

	for (i = 0; i < sigmig_nthreads(); i++)
		sigmig_rawbuf_free(&sigmig_thread(i)->peek);
}

void sigmig_dump_forget(void)
{
	unsigned int i;

	for (i = 0; i < sigmig_nthreads(); i++)
		sigmig_rawbuf_free(&sigmig_thread(i)->dumped);
	sigmig_rawbuf_free(&dumped.shared);
	dumped.valid = 0;
}

/* The queues just read become what the next delta is computed against. */
static void keep_dumped(struct rawbuf *shared)
{
	unsigned int i;

	sigmig_dump_forget();
	for (i = 0; i < sigmig_nthreads(); i++) {
		struct rt_thread *t = sigmig_thread(i);

		t->dumped = t->peek;
		memset(&t->peek, 0, sizeof(t->peek));
		t->dumped_unqueued = t->peek_unqueued;
	}
	dumped.shared = *shared;
	memset(shared, 0, sizeof(*shared));
	dumped.shared_unqueued = peek_shared_unqueued;
	dumped.valid = 1;
}

static void fill_header(struct sigmig_image *img)
{
	struct timespec now;

	img->version = SIGMIG_IMAGE_VERSION;
	img->arch = sigmig_native_arch();
	clock_gettime(CLOCK_REALTIME, &now);
	img->created_ns = (uint64_t)now.tv_sec * NSEC_PER_SEC + (uint64_t)now.tv_nsec;
	img->pid = getpid();
	snprintf(img->program, sizeof(img->program), "%s", sigmig_program());
}

/* Everything but the queues' contents, which the peek buffers hold. */
static int fill_state(struct sigmig_image *img, char *err, size_t errlen)
{
	int sig, ret = 0;

	fill_header(img);
	for (sig = 1; sig <= SIGMIG_NSIG && !ret; sig++)
		ret = dump_disposition(sig, &img->dispositions[sig - 1], err, errlen);
	if (!ret)
		ret = dump_timers(img, err, errlen);
	if (ret)
		return ret;
	ret = fill_threads(img);
	if (ret)
		snprintf(err, errlen, "out of memory");
	return ret;
}

/*
 * A record for each signal pending without a queue entry (unqueued.c), in
 * every queue of @img: the threads', then the shared one. @owned gets the
 * arrays that replace the peek buffers' in the image, one per queue.
 */
static int dump_unqueued(struct sigmig_image *img, struct sigmig_siginfo **owned)
{
	uint32_t k, added;
	int ret = 0;

	for (k = 0; k <= img->nthreads && !ret; k++) {
		int shared = k == img->nthreads;
		struct sigmig_queue *q = shared ? &img->shared : &img->threads[k].pending;
		struct rt_thread *t = shared ? NULL : sigmig_thread(img->threads[k].index);
		uint64_t *set = shared ? &peek_shared_unqueued : &t->peek_unqueued;

		*set = sigmig_unqueued_set(q, shared ? shared_pending_set : t->pending_set);
		ret = sigmig_append_unqueued(q, *set, &owned[k], &added);
	}
	return ret;
}

void sigmig_dump_release(struct sigmig_dump *d, int keep)
{
	uint32_t k;

	if (keep)
		keep_dumped(&d->shared);
	for (k = 0; d->owned && k <= d->img.nthreads; k++)
		free(d->owned[k]);
	free(d->owned);
	free(d->img.threads);	/* other queue entries belong to the peek buffers */
	free(d->img.timers);
	sigmig_rawbuf_free(&d->shared);
	free_thread_peeks();
	memset(d, 0, sizeof(*d));
}

int sigmig_dump_take(struct sigmig_dump *d, char *err, size_t errlen)
{
	int ret;

	memset(d, 0, sizeof(*d));
	ret = peek_threads(err, errlen);
	if (!ret)
		ret = peek_shared(&d->shared, err, errlen);
	if (!ret)
		ret = fill_state(&d->img, err, errlen);
	if (ret)
		goto fail;
	d->img.shared.count = (uint32_t)d->shared.count;
	d->img.shared.entries = (struct sigmig_siginfo *)d->shared.data;
	d->owned = calloc((size_t)d->img.nthreads + 1, sizeof(*d->owned));
	ret = d->owned ? dump_unqueued(&d->img, d->owned) : -ENOMEM;
	if (ret) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	d->nsignals = sigmig_image_pending_total(&d->img);
	ret = sigmig_image_encoded_size(&d->img, &d->size);
	if (!ret)
		return 0;
	snprintf(err, errlen, "encoding the image: %s", strerror(-ret));
fail:
	sigmig_dump_release(d, 0);
	return ret;
}

/* ---- the commit delta ---- */

/*
 * Where the arrivals since the DUMP start in @now. While every thread is
 * parked with all signals blocked nothing dequeues: a queue only grows at
 * its tail, except that the kernel removes entries in place (a SIGCONT
 * flushes pending stop signals, a stop signal a pending SIGCONT) and the
 * arrival that did it is queued behind. So @now is @was less the removed
 * entries, then the arrivals: match @was in order, what is left is new.
 */
static size_t arrivals_start(const struct rawbuf *was, const struct rawbuf *now,
			     uint64_t *removed)
{
	size_t i, j = 0;

	for (i = 0; i < was->count && j < now->count; i++)
		if (sigmig_same_entry(was->data + i * SI_MAX_SIZE, now->data + j * SI_MAX_SIZE))
			j++;
	*removed += was->count - j;
	return j;
}

/*
 * The tail of @now past what matches @was, into a new array for @q (the
 * caller frees it; @now stays as it was read, the next baseline), without
 * timer expiries: every timer was dumped and is recreated on the target
 * from the dump's state, so its expiries since are the target's to raise,
 * not ours to carry (both would count the same period).
 */
static int tail_of(const struct rawbuf *was, const struct rawbuf *now,
		   struct sigmig_queue *q, struct delta_counts *n)
{
	size_t i, from = arrivals_start(was, now, &n->removed);
	siginfo_t si;

	q->count = 0;
	q->entries = malloc((now->count - from + 1) * sizeof(*q->entries));
	if (!q->entries)
		return -ENOMEM;
	for (i = from; i < now->count; i++) {
		memcpy(&si, now->data + i * SI_MAX_SIZE, sizeof(si));
		if (si.si_code == SI_TIMER) {
			n->timers++;
			continue;
		}
		memcpy(q->entries[q->count++].bytes, now->data + i * SI_MAX_SIZE, SI_MAX_SIZE);
	}
	return 0;
}

/*
 * Signals that became pending without a queue entry since the last read
 * (sent over RLIMIT_SIGPENDING): no peek shows them, so no tail does.
 * Found as the DUMP finds them, from @pending (read before the peek) and
 * the whole queue @now, less those the last read carried (@before);
 * *@unqueued gets them all, the baseline of the next read. Their records
 * go at the end of @q.
 */
static int tail_unqueued(uint64_t pending, const struct rawbuf *now,
			 uint64_t before, uint64_t *unqueued, struct sigmig_queue *q)
{
	struct sigmig_queue whole = { .count = (uint32_t)now->count,
				      .entries = (struct sigmig_siginfo *)now->data };
	struct sigmig_siginfo *tail = q->entries, *grown;
	uint32_t added;
	int ret;

	*unqueued = sigmig_unqueued_set(&whole, pending);
	ret = sigmig_append_unqueued(q, *unqueued & ~before, &grown, &added);
	if (!ret && grown)
		free(tail);	/* @q holds the grown copy now */
	return ret;
}

static int delta_threads(struct sigmig_image *img, struct delta_counts *n)
{
	uint32_t k;
	int ret;

	ret = add_threads(img);
	for (k = 0; !ret && k < img->nthreads; k++) {
		struct sigmig_thread *it = &img->threads[k];
		struct rt_thread *t = sigmig_thread(it->index);

		ret = tail_of(&t->dumped, &t->peek, &it->pending, n);
		if (!ret)
			ret = tail_unqueued(t->pending_set, &t->peek, t->dumped_unqueued,
					    &t->peek_unqueued, &it->pending);
	}
	return ret;
}

static void free_tails(struct sigmig_image *img)
{
	uint32_t k;

	for (k = 0; img->threads && k < img->nthreads; k++)
		free(img->threads[k].pending.entries);
	free(img->threads);
	free(img->shared.entries);
}

int sigmig_dump_delta(int advance, uint8_t **out, size_t *len,
		      struct delta_counts *n, char *err, size_t errlen)
{
	struct sigmig_image img;
	struct rawbuf shared = { 0 };
	int ret;

	if (!dumped.valid)
		return -ENODATA;
	memset(&img, 0, sizeof(img));
	memset(n, 0, sizeof(*n));
	/* realtime: the senders' logs are stamped with it */
	n->read_ns = sigmig_realtime_ns();
	ret = peek_threads(err, errlen);
	if (!ret)
		ret = peek_shared(&shared, err, errlen);
	if (!ret) {
		ret = delta_threads(&img, n);
		if (!ret)
			ret = tail_of(&dumped.shared, &shared, &img.shared, n);
		if (!ret)
			ret = tail_unqueued(shared_pending_set, &shared, dumped.shared_unqueued,
					    &peek_shared_unqueued, &img.shared);
		if (ret)
			snprintf(err, errlen, "out of memory");
	}
	if (ret)
		goto out;
	fill_header(&img);
	n->carried = sigmig_image_pending_total(&img);
	ret = sigmig_image_encode(&img, out, len);
	if (ret)
		snprintf(err, errlen, "encoding the delta: %s", strerror(-ret));
	else if (advance)
		keep_dumped(&shared);
out:
	free_tails(&img);
	sigmig_rawbuf_free(&shared);
	free_thread_peeks();
	return ret;
}
