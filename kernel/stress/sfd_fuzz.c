// SPDX-License-Identifier: GPL-2.0
/*
 * sfd_fuzz: bounded-time syscall fuzzer of the signalfd pending-signal
 * interface.
 *
 * signalfd4() with random fds, masks, mask sizes and flags (known mode
 * flags, unknown bits, mode changes on existing fds); pread(), read(),
 * preadv(), preadv2() with offsets at and around both queue bases,
 * between them, negative and huge, counts of 0, short, odd and huge, and
 * buffers that are valid, read-only, unmapped, NULL, kernel addresses or
 * straddle an inaccessible page; write() of random records (signals in
 * and out of the fd's mask, every kind of si_code, padding that is and is
 * not zero) and bad buffers; poll, fcntl, lseek and splice on the fds; while a second thread keeps a random mix of signals pending
 * (rt_sigqueueinfo of every si_code, kill, tgkill, periodic posix timers,
 * SIG_IGN flushes, dequeues).
 *
 * Every result is checked: where the outcome is determined (bad mask
 * size, unknown flags, mode change, negative offset, count < 128, lseek,
 * write without SFD_RAW or a queue flag or of a partial record) it must
 * be exactly that; otherwise an error must be one of the
 * errnos documented for the call, and a success must be a whole number of
 * records, no more than asked, of signals in the fd's mask, leaving the
 * rest of the buffer untouched.  The fuzzing runs in a child process so
 * that a crash is reported rather than lost.  Usage: sfd_fuzz [-t secs]
 * [-s seed] (default 20 s, env SFD_FUZZ_SECONDS).  TAP on stdout.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "stress_common.h"

#define NFDS		12
#define RW_BUF_SIZE	(1 << 20)
#define MAX_PENDING	2500
#define PAGE		4096
#define MAX_MSGS	12
#define KNOWN_FLAGS	(SFD_CLOEXEC | SFD_NONBLOCK | SFD_RAW | SFD_GROUP | SFD_PRIVATE)
#define MODE_FLAGS	(SFD_RAW | SFD_GROUP | SFD_PRIVATE)

/* Shared with the parent, which prints the verdict. */
struct results {
	long calls, mixer_calls, records, exact_checks;
	long bad_errno, bad_result, bad_exact;
	int nmsgs;
	char msgs[MAX_MSGS][220];
};

static struct results *res;

struct sfd {
	int fd;			/* -1: free */
	int mode;		/* SFD_RAW | SFD_GROUP | SFD_PRIVATE */
	int nonblock;
	sigset_t mask;
};

static struct sfd fds[NFDS];
static uint8_t *rw_buf, *ro_buf, *edge_buf;
static void *unmapped;
static int pipe_fds[2], devnull;
static uint64_t seed;
static atomic_int stop;
static atomic_long pending_guess;
static pid_t main_tid, self_pid;
static int fuzz_sigs[40], nfuzz_sigs;

/* What the fuzzer was doing, for the crash report. */
static char last_op[200];

#define OP(...)	snprintf(last_op, sizeof(last_op), __VA_ARGS__)

static void crash_report(int sig, siginfo_t *si, void *uc)
{
	char line[320];
	int n;

	(void)uc;
	n = snprintf(line, sizeof(line), "# fuzzer crashed: signal %d at %p after: %s\n",
		     sig, si->si_addr, last_op);
	if (write(STDOUT_FILENO, line, (size_t)n) < 0)
		_exit(3);
	_exit(128 + sig);
}

static void note(long *counter, const char *fmt, ...)
{
	va_list ap;

	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
	if (res->nmsgs >= MAX_MSGS)
		return;
	va_start(ap, fmt);
	vsnprintf(res->msgs[res->nmsgs++], sizeof(res->msgs[0]), fmt, ap);
	va_end(ap);
}

static void random_mask(uint64_t *rs, sigset_t *m)
{
	int i;

	sigemptyset(m);
	if (rnd_below(rs, 4) == 0) {
		sigfillset(m);
		return;
	}
	for (i = 0; i < nfuzz_sigs; i++)
		if (rnd_below(rs, 2))
			sigaddset(m, fuzz_sigs[i]);
}

static int random_flags(uint64_t *rs)
{
	static const int known[] = {
		SFD_CLOEXEC, SFD_NONBLOCK, SFD_RAW, SFD_GROUP, SFD_PRIVATE,
	};
	int flags = 0, i;

	if (rnd_below(rs, 8) == 0)
		return (int)rnd_next(rs);
	if (rnd_below(rs, 8) == 0)
		flags |= 1 << rnd_below(rs, 31);
	for (i = 0; i < 5; i++)
		if (rnd_below(rs, 2))
			flags |= known[i];
	return flags;
}

static struct sfd *random_sfd(uint64_t *rs)
{
	struct sfd *s = &fds[rnd_below(rs, NFDS)];

	return s->fd >= 0 ? s : NULL;
}

static void add_sfd(int fd, int flags, const sigset_t *mask)
{
	struct sfd *slot = NULL;
	int i;

	for (i = 0; i < NFDS && !slot; i++)
		if (fds[i].fd < 0)
			slot = &fds[i];
	if (!slot) {
		slot = &fds[fd % NFDS];
		close(slot->fd);
	}
	slot->fd = fd;
	slot->mode = flags & MODE_FLAGS;
	slot->nonblock = !!(flags & SFD_NONBLOCK);
	slot->mask = *mask;
	/* The kernel never lets an fd wait for SIGKILL or SIGSTOP. */
	sigdelset(&slot->mask, SIGKILL);
	sigdelset(&slot->mask, SIGSTOP);
}

/* ---- signalfd4 ---- */

static void fuzz_signalfd4(uint64_t *rs)
{
	static const size_t sizes[] = { 0, 4, 7, 16, 128, (size_t)-1 };
	struct sfd *s = NULL;
	const void *maskp;
	int bad_mask = 0, expect, fd, flags, ret;
	size_t size = KERNEL_SIGSET_SIZE;
	sigset_t mask;
	uint32_t d = rnd_below(rs, 10);

	random_mask(rs, &mask);
	flags = random_flags(rs);
	if (d < 5) {
		fd = -1;
	} else if (d < 8 && (s = random_sfd(rs))) {
		fd = s->fd;
		/* Keep the mode most of the time: then only the mask changes. */
		if (rnd_below(rs, 3))
			flags = (flags & ~MODE_FLAGS) | s->mode;
	} else if (d < 9) {
		fd = rnd_below(rs, 2) ? pipe_fds[0] : devnull;
	} else {
		fd = rnd_below(rs, 2) ? 999 : -2 - (int)rnd_below(rs, 100);
	}
	maskp = &mask;
	switch (rnd_below(rs, 12)) {
	case 0: maskp = NULL; bad_mask = 1; break;
	case 1: maskp = unmapped; bad_mask = 1; break;
	case 2: maskp = (const void *)0xffff888000000000UL; bad_mask = 1; break;
	case 3: memcpy(&mask, ro_buf, KERNEL_SIGSET_SIZE); maskp = ro_buf; break;
	default: break;
	}
	if (rnd_below(rs, 10) == 0)
		size = sizes[rnd_below(rs, 6)];

	/* The syscall's order of checks decides the one right answer. */
	if (size != KERNEL_SIGSET_SIZE)
		expect = EINVAL;
	else if (bad_mask)
		expect = EFAULT;
	else if (flags & ~KNOWN_FLAGS)
		expect = EINVAL;
	else if ((flags & SFD_PRIVATE) && (flags & SFD_GROUP))
		expect = EINVAL;
	else if (fd == -1)
		expect = 0;
	else if (fd < 0 || fd == 999)
		expect = EBADF;
	else if (!s)
		expect = EINVAL;
	else if ((flags & MODE_FLAGS) != s->mode)
		expect = EINVAL;
	else
		expect = 0;

	OP("signalfd4(%d, %p, %zu, %#x)", fd, maskp, size, flags);
	ret = sys_signalfd4(fd, maskp, size, flags);
	res->calls++;
	res->exact_checks++;
	if (ret >= 0 && expect == 0) {
		if (fd == -1) {
			add_sfd(ret, flags, &mask);
		} else {
			if (ret != fd)
				note(&res->bad_result, "signalfd4(%d) returned %d", fd, ret);
			s->mask = mask;
			sigdelset(&s->mask, SIGKILL);
			sigdelset(&s->mask, SIGSTOP);
		}
		return;
	}
	if (ret < 0 && expect == 0 && fd == -1 &&
	    (errno == EMFILE || errno == ENFILE || errno == ENOMEM))
		return;
	if (ret < 0 && errno == expect)
		return;
	note(&res->bad_exact, "signalfd4(fd %d, size %zu, flags %#x, mask %s) = %d errno %s, want %s",
	     fd, size, flags, bad_mask ? "bad" : "ok", ret,
	     ret < 0 ? strerror(errno) : "-", expect ? strerror(expect) : "success");
	if (ret >= 0 && fd == -1)
		close(ret);
}

/* ---- reads ---- */

enum buf_kind { B_RW, B_RO, B_UNMAPPED, B_NULL, B_KERNEL, B_EDGE, B_NKINDS };

static void *pick_buf(uint64_t *rs, enum buf_kind *kind)
{
	*kind = rnd_below(rs, 10) < 5 ? B_RW : (enum buf_kind)rnd_below(rs, B_NKINDS);
	switch (*kind) {
	case B_RW: return rw_buf + SI_MAX_SIZE * rnd_below(rs, 4) + rnd_below(rs, 2) * 3;
	case B_RO: return ro_buf;
	case B_UNMAPPED: return unmapped;
	case B_NULL: return NULL;
	case B_KERNEL: return (void *)0xffff888000000000UL;
	default: return edge_buf + PAGE - SI_MAX_SIZE * rnd_below(rs, 3) - rnd_below(rs, 2) * 5;
	}
}

static size_t pick_count(uint64_t *rs)
{
	static const size_t counts[] = {
		0, 1, 64, 127, 128, 129, 255, 256, 383, 384, 640,
		128 * 63, 128 * 64, 128 * 65, 128 * 200, 65536,
		(size_t)-1, (size_t)SSIZE_MAX, (size_t)1 << 40, 0x7ffff000,
	};

	if (rnd_below(rs, 8) == 0)
		return rnd_below(rs, 8192);
	return counts[rnd_below(rs, sizeof(counts) / sizeof(counts[0]))];
}

static off_t pick_offset(uint64_t *rs)
{
	const off_t sh = SFD_SHARED_QUEUE_OFFSET;
	const off_t offs[] = {
		0, 1, 2, 3, 65, 1 + 64 * 64, sh - 2, sh - 1, sh, sh + 1, sh + 63,
		sh + 64, sh + 4096, sh / 2, INT64_MAX, INT64_MAX - 127, -1,
		INT64_MIN, -128, (off_t)1 << 32, INT64_MIN + 1,
	};
	uint32_t d = rnd_below(rs, 10);

	if (d < 3)
		return 1 + rnd_below(rs, 3000);
	if (d < 6)
		return sh + rnd_below(rs, 3000);
	if (d < 7)
		return (off_t)rnd_next(rs);
	return offs[rnd_below(rs, sizeof(offs) / sizeof(offs[0]))];
}

/* A successful read: whole records of signals in the fd's mask. */
static void check_records(const struct sfd *s, const uint8_t *buf, ssize_t n,
			  size_t count, const char *what)
{
	ssize_t i;

	if (n % SI_MAX_SIZE || (size_t)n > count) {
		note(&res->bad_result, "%s returned %zd for count %zu", what, n, count);
		return;
	}
	for (i = 0; i < n; i += SI_MAX_SIZE) {
		uint32_t signo;

		memcpy(&signo, buf + i, sizeof(signo));
		if (signo < 1 || signo > 64 || !sigismember(&s->mask, (int)signo))
			note(&res->bad_result, "%s: record of signal %u outside the fd's mask",
			     what, signo);
	}
	res->records += n / SI_MAX_SIZE;
}

static int errno_in(int e, const int *allowed)
{
	for (; *allowed; allowed++)
		if (e == *allowed)
			return 1;
	return 0;
}

/* What pread() must do, where the answer is determined. */
static int pread_exact(const struct sfd *s, int fd, size_t count, off_t off,
		       enum buf_kind kind)
{
	if (off < 0)
		return EINVAL;
	if (fd == 999)
		return EBADF;
	if (!s)
		return fd == pipe_fds[0] ? ESPIPE : -1;
	if (kind == B_RW && count < SI_MAX_SIZE)
		return EINVAL;
	return -1;
}

static void fuzz_pread(uint64_t *rs)
{
	static const int allowed[] = { EINVAL, EFAULT, ENOMEM, 0 };
	struct sfd *s = random_sfd(rs);
	int fd = s ? s->fd : (rnd_below(rs, 2) ? pipe_fds[0] : 999);
	enum buf_kind kind;
	uint8_t *buf = pick_buf(rs, &kind);
	size_t count = pick_count(rs), fill = 0, i;
	off_t off = pick_offset(rs);
	int exact;
	ssize_t n;

	if (fd == 999)
		s = NULL;
	/* Offset 0 dequeues; on a blocking fd it would wait. */
	if (off == 0 && s && !s->nonblock)
		off = 1;
	/* Any count a user address range could hold must fit the buffer. */
	if (kind == B_RW && count > RW_BUF_SIZE - 4 * SI_MAX_SIZE &&
	    count <= ((size_t)1 << 47))
		count = RW_BUF_SIZE - 4 * SI_MAX_SIZE;
	if (kind == B_RW) {
		fill = count < 8192 ? count + SI_MAX_SIZE : 0;
		memset(buf, 0x5a, fill);
	}
	exact = pread_exact(s, fd, count, off, kind);
	OP("pread(%d, %p, %zu, %lld) kind %d", fd, (void *)buf, count, (long long)off, kind);
	n = pread(fd, buf, count, off);
	res->calls++;
	if (exact >= 0) {
		res->exact_checks++;
		if (n != -1 || errno != exact)
			note(&res->bad_exact, "pread(fd %d, count %zu, off %lld) = %zd (%s), want %s",
			     fd, count, (long long)off, n,
			     n < 0 ? strerror(errno) : "-", strerror(exact));
		return;
	}
	if (n < 0) {
		if (errno_in(errno, allowed) || (off == 0 && errno == EAGAIN))
			return;
		note(&res->bad_errno, "pread(fd %d, buf kind %d, count %zu, off %lld): %s",
		     fd, kind, count, (long long)off, strerror(errno));
		return;
	}
	if (kind != B_RW) {
		if (n % SI_MAX_SIZE || (size_t)n > count)
			note(&res->bad_result, "pread to a bad buffer returned %zd", n);
		return;
	}
	check_records(s, buf, n, count, off ? "pread" : "pread(0)");
	for (i = (size_t)n; i < fill; i++) {
		if (buf[i] != 0x5a) {
			note(&res->bad_result, "pread wrote byte %zu past its result %zd", i, n);
			break;
		}
	}
}

static void fuzz_readv(uint64_t *rs)
{
	static const int allowed[] = { EINVAL, EFAULT, ENOMEM, EOPNOTSUPP, 0 };
	struct sfd *s = random_sfd(rs);
	struct iovec iov[4];
	int niov = 1 + (int)rnd_below(rs, 4), i, op = (int)rnd_below(rs, 3);
	off_t off = pick_offset(rs);
	size_t total = 0;
	ssize_t n;

	if (!s)
		return;
	/* Offset 0, or -1 for preadv2 (the file position), would dequeue. */
	if (!s->nonblock && (op == 0 || off == 0 || off == -1)) {
		op = 1;
		off = 1;
	}
	for (i = 0; i < niov; i++) {
		static const size_t lens[] = { 0, 64, 128, 129, 256, 1024 };
		enum buf_kind kind;

		iov[i].iov_base = pick_buf(rs, &kind);
		iov[i].iov_len = lens[rnd_below(rs, 6)];
		if (kind == B_RW)
			iov[i].iov_base = rw_buf + 2048 * i;
		total += iov[i].iov_len;
	}
	OP("readv op %d fd %d niov %d off %lld", op, s->fd, niov, (long long)off);
	if (op == 0)
		n = readv(s->fd, iov, niov);
	else if (op == 1)
		n = preadv(s->fd, iov, niov, off);
	else
		n = preadv2(s->fd, iov, niov, off, (int)rnd_below(rs, 32));
	res->calls++;
	if (n < 0) {
		if (errno_in(errno, allowed) || errno == EAGAIN)
			return;
		note(&res->bad_errno, "readv op %d (%d iovecs, off %lld): %s", op,
		     niov, (long long)off, strerror(errno));
		return;
	}
	if (n % SI_MAX_SIZE || (size_t)n > total)
		note(&res->bad_result, "readv op %d returned %zd of %zu", op, n, total);
}

/* ---- writes (requeue) ---- */

/* Records of the fuzzed signals, random codes and bytes, into rw_buf. */
static void random_records(uint64_t *rs, uint8_t *buf, size_t nrec)
{
	static const int codes[] = {
		SI_QUEUE, SI_USER, SI_TIMER, SI_MESGQ, SI_TKILL, SI_KERNEL,
		1, 2, 3, 6, 0x7000, -50,
	};
	static const int bad_sigs[] = { 0, -1, 65, 66, 1000, SIGKILL, SIGSTOP };
	size_t r, i;

	for (r = 0; r < nrec; r++) {
		uint8_t *si = buf + r * SI_MAX_SIZE;
		int sig = fuzz_sigs[rnd_below(rs, (uint32_t)nfuzz_sigs)];

		memset(si, 0, SI_MAX_SIZE);
		/* never delivered: no fd's mask has them, write() refuses */
		if (rnd_below(rs, 16) == 0)
			sig = bad_sigs[rnd_below(rs, 7)];
		memcpy(si, &sig, 4);
		memcpy(si + 8, &codes[rnd_below(rs, 12)], 4);
		for (i = 12; i < 48; i++)
			si[i] = (uint8_t)rnd_next(rs);
		if (rnd_below(rs, 16) == 0)
			si[48 + rnd_below(rs, SI_MAX_SIZE - 48)] = 1;
	}
}

/*
 * What write() must do, where the answer is determined: with a buffer the
 * VFS accepts (it answers EFAULT for the others before the fd is asked).
 */
static int write_exact(const struct sfd *s, size_t count, enum buf_kind kind)
{
	if (kind != B_RW)
		return -1;
	if (!(s->mode & SFD_RAW) || !(s->mode & (SFD_PRIVATE | SFD_GROUP)))
		return EINVAL;
	if (count % SI_MAX_SIZE)
		return EINVAL;
	return count ? -1 : 0;
}

static void fuzz_write(uint64_t *rs, const struct sfd *s)
{
	static const int allowed[] = { EINVAL, EFAULT, E2BIG, EAGAIN, 0 };
	size_t nrec = rnd_below(rs, 40), count = nrec * SI_MAX_SIZE;
	enum buf_kind kind = B_RW;
	const uint8_t *buf = rw_buf;
	int exact;
	ssize_t n;

	if (atomic_load(&pending_guess) > MAX_PENDING)
		return;
	if (rnd_below(rs, 4) == 0)
		count = pick_count(rs);
	if (rnd_below(rs, 4) == 0)
		buf = pick_buf(rs, &kind);
	if (kind == B_RW && count > 40 * SI_MAX_SIZE)
		count = 40 * SI_MAX_SIZE + count % SI_MAX_SIZE;
	if (kind == B_RW)
		random_records(rs, (uint8_t *)buf, (count + SI_MAX_SIZE - 1) / SI_MAX_SIZE);
	exact = write_exact(s, count, kind);
	OP("write(%d, %p, %zu) mode %#x", s->fd, (const void *)buf, count, s->mode);
	n = write(s->fd, buf, count);
	res->calls++;
	if (n > 0)
		atomic_fetch_add(&pending_guess, n / SI_MAX_SIZE);
	if (exact >= 0) {
		res->exact_checks++;
		if (exact == 0 ? n != 0 : n != -1 || errno != exact)
			note(&res->bad_exact, "write(mode %#x, count %zu) = %zd (%s), want %s",
			     s->mode, count, n, n < 0 ? strerror(errno) : "-",
			     exact ? strerror(exact) : "0");
		return;
	}
	if (n < 0) {
		if (!errno_in(errno, allowed))
			note(&res->bad_errno, "write(mode %#x, buf kind %d, count %zu): %s",
			     s->mode, kind, count, strerror(errno));
		return;
	}
	if (n % SI_MAX_SIZE || (size_t)n > count)
		note(&res->bad_result, "write returned %zd for count %zu", n, count);
}

/* ---- the rest of the file interface ---- */

static void fuzz_misc(uint64_t *rs)
{
	struct sfd *s = random_sfd(rs);
	struct pollfd pfd[NFDS];
	int i, n = 0, ret;

	if (!s)
		return;
	res->calls++;
	OP("misc on fd %d", s->fd);
	switch (rnd_below(rs, 6)) {
	case 0:
		for (i = 0; i < NFDS; i++)
			if (fds[i].fd >= 0)
				pfd[n++] = (struct pollfd){ .fd = fds[i].fd, .events = POLLIN };
		if (poll(pfd, (nfds_t)n, 0) < 0)
			note(&res->bad_errno, "poll: %s", strerror(errno));
		break;
	case 1: {
		int fl = (int)(rnd_below(rs, 2) ? O_NONBLOCK : 0) |
			 (int)(rnd_below(rs, 2) ? O_DIRECT : 0) |
			 (int)(rnd_below(rs, 4) ? 0 : O_APPEND);

		ret = fcntl(s->fd, F_SETFL, fl);
		if (ret && errno != EINVAL)
			note(&res->bad_errno, "fcntl(F_SETFL %#x): %s", fl, strerror(errno));
		ret = fcntl(s->fd, F_GETFL);
		s->nonblock = ret >= 0 && (ret & O_NONBLOCK);
		break;
	}
	case 2: {
		/* noop_llseek: the file position never moves from 0. */
		off_t pos = lseek(s->fd, (off_t)rnd_next(rs), (int)rnd_below(rs, 3));

		res->exact_checks++;
		if (pos != 0)
			note(&res->bad_exact, "lseek on a signalfd returned %lld (%s), want 0",
			     (long long)pos, pos < 0 ? strerror(errno) : "-");
		break;
	}
	case 3:
		fuzz_write(rs, s);
		break;
	case 4: {
		loff_t off = pick_offset(rs);

		ret = (int)splice(s->fd, rnd_below(rs, 2) ? &off : NULL, pipe_fds[1],
				  NULL, SI_MAX_SIZE, SPLICE_F_NONBLOCK);
		if (ret < 0 && errno != EINVAL && errno != ESPIPE && errno != EAGAIN)
			note(&res->bad_errno, "splice from a signalfd: %s", strerror(errno));
		break;
	}
	default:
		close(s->fd);
		s->fd = -1;
		break;
	}
}

/* ---- the pending-signal mixer ---- */

static void mixer_queue(uint64_t *rs)
{
	static const int codes[] = {
		SI_QUEUE, SI_USER, SI_TIMER, SI_MESGQ, SI_ASYNCIO, SI_SIGIO,
		SI_TKILL, SI_KERNEL, 1, 2, 3, 4, 5, 6, 7, 8,
	};
	int sig = fuzz_sigs[rnd_below(rs, (uint32_t)nfuzz_sigs)];
	uint8_t si[SI_MAX_SIZE] = { 0 };
	int i, ret;

	for (i = 12; i < 48; i++)
		si[i] = (uint8_t)rnd_next(rs);
	memcpy(si, &sig, 4);
	memcpy(si + 8, &codes[rnd_below(rs, 16)], 4);
	if (rnd_below(rs, 2))
		ret = sys_rt_sigqueueinfo(self_pid, sig, (siginfo_t *)si);
	else
		ret = sys_rt_tgsigqueueinfo(self_pid, main_tid, sig, (siginfo_t *)si);
	if (!ret)
		atomic_fetch_add(&pending_guess, 1);
}

static void mixer_step(uint64_t *rs, int drain_fd, timer_t *timers, int *armed)
{
	uint8_t buf[16 * SI_MAX_SIZE];
	uint32_t d = rnd_below(rs, 100);
	ssize_t n;

	if (atomic_load(&pending_guess) > MAX_PENDING)
		d = 99;
	if (d < 60) {
		mixer_queue(rs);
	} else if (d < 70) {
		kill(self_pid, fuzz_sigs[rnd_below(rs, (uint32_t)nfuzz_sigs)]);
	} else if (d < 75) {
		sys_tgkill(self_pid, main_tid, fuzz_sigs[rnd_below(rs, (uint32_t)nfuzz_sigs)]);
	} else if (d < 80) {
		int t = (int)rnd_below(rs, 4);
		struct itimerspec its = { 0 };

		if (armed[t]) {
			timer_delete(timers[t]);
			armed[t] = 0;
		} else {
			struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL };

			sev.sigev_signo = SIGRTMIN + (int)rnd_below(rs, 8);
			if (!timer_create(CLOCK_MONOTONIC, &sev, &timers[t])) {
				its.it_value.tv_nsec = 50000 + rnd_below(rs, 500000);
				its.it_interval = its.it_value;
				timer_settime(timers[t], 0, &its, NULL);
				armed[t] = 1;
			}
		}
	} else if (d < 83) {
		struct sigaction ign = { .sa_handler = SIG_IGN }, dfl = { .sa_handler = SIG_DFL };
		int sig = SIGRTMIN + (int)rnd_below(rs, 8);

		sigaction(sig, &ign, NULL);
		sigaction(sig, &dfl, NULL);
	} else {
		n = read(drain_fd, buf, (1 + rnd_below(rs, 16)) * SI_MAX_SIZE);
		if (n > 0)
			atomic_fetch_sub(&pending_guess, n / SI_MAX_SIZE);
		if (d == 99)
			atomic_store(&pending_guess, n > 0 ? MAX_PENDING / 2 : 0);
	}
	__atomic_fetch_add(&res->mixer_calls, 1, __ATOMIC_RELAXED);
}

static void *mixer(void *arg)
{
	uint64_t rs = seed ^ 0xabcdef;
	timer_t timers[4];
	int armed[4] = { 0 }, i;
	sigset_t all;
	int drain_fd;

	(void)arg;
	sigfillset(&all);
	drain_fd = sys_signalfd4(-1, &all, KERNEL_SIGSET_SIZE, SFD_NONBLOCK | SFD_GROUP);
	while (!atomic_load(&stop)) {
		mixer_step(&rs, drain_fd, timers, armed);
		if (rnd_below(&rs, 64) == 0)
			usleep(100);
	}
	for (i = 0; i < 4; i++)
		if (armed[i])
			timer_delete(timers[i]);
	close(drain_fd);
	return NULL;
}

static void setup_buffers(void)
{
	uint8_t *p;

	/* Guard pages: a kernel write past the buffer must fault, not corrupt. */
	rw_buf = mmap(NULL, RW_BUF_SIZE + 2 * PAGE, PROT_NONE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rw_buf != MAP_FAILED) {
		rw_buf += PAGE;
		mprotect(rw_buf, RW_BUF_SIZE, PROT_READ | PROT_WRITE);
	}
	ro_buf = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/*
	 * A hole between two PROT_NONE pages: a lone unmapped page at the
	 * edge of the free area would be handed to the next mmap() (the
	 * mixer's thread stack), and reads "into" it would corrupt that.
	 */
	unmapped = mmap(NULL, 3 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rw_buf == MAP_FAILED || ro_buf == MAP_FAILED || p == MAP_FAILED ||
	    unmapped == MAP_FAILED) {
		perror("mmap");
		_exit(2);
	}
	if (unmapped != MAP_FAILED) {
		unmapped = (uint8_t *)unmapped + PAGE;
		munmap(unmapped, PAGE);
	}
	mprotect(p + PAGE, PAGE, PROT_NONE);
	edge_buf = p;
	/* A mask signalfd4() may read from a read-only page. */
	memset(ro_buf, 0xf7, PAGE);
	mprotect(ro_buf, PAGE, PROT_READ);
}

static void fuzz_child(double secs)
{
	uint64_t rs = seed;
	double end = now_s() + secs;
	struct rlimit rl = { 8192, 8192 };
	pthread_t th;
	sigset_t all;
	int i, own_fd;

	self_pid = getpid();
	main_tid = sys_gettid();
	for (i = 1; i <= 64; i++) {
		if (i == SIGKILL || i == SIGSTOP || i == SIGCONT || i == SIGTSTP ||
		    i == SIGTTIN || i == SIGTTOU || i == 32 || i == 33 ||
		    i == SIGSEGV || i == SIGBUS || i == SIGILL || i == SIGFPE ||
		    i == SIGTRAP || i == SIGSYS || i == SIGABRT)
			continue;
		if (nfuzz_sigs < (int)(sizeof(fuzz_sigs) / sizeof(fuzz_sigs[0])))
			fuzz_sigs[nfuzz_sigs++] = i;
	}
	setrlimit(RLIMIT_SIGPENDING, &rl);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	setup_buffers();
	if (pipe(pipe_fds))
		_exit(2);
	fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
	fcntl(pipe_fds[1], F_SETFL, O_NONBLOCK);
	devnull = open("/dev/null", O_RDWR);
	for (i = 0; i < NFDS; i++)
		fds[i].fd = -1;
	own_fd = sys_signalfd4(-1, &all, KERNEL_SIGSET_SIZE, SFD_NONBLOCK | SFD_PRIVATE);
	{
		static uint8_t altstack[65536];
		stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
		struct sigaction sa = { .sa_sigaction = crash_report,
					.sa_flags = SA_SIGINFO | SA_ONSTACK };

		sigset_t faults;

		sigaltstack(&ss, NULL);
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		/* A blocked fault signal would kill without the report. */
		sigemptyset(&faults);
		sigaddset(&faults, SIGSEGV);
		sigaddset(&faults, SIGBUS);
		sigprocmask(SIG_UNBLOCK, &faults, NULL);
	}
	if (own_fd < 0 || pthread_create(&th, NULL, mixer, NULL))
		_exit(2);
	while (now_s() < end) {
		uint32_t d = rnd_below(&rs, 100);

		/* Only this thread can take its own queue's signals. */
		if (d == 0)
			while (read(own_fd, rw_buf, 64 * SI_MAX_SIZE) > 0)
				;
		if (d < 15)
			fuzz_signalfd4(&rs);
		else if (d < 75)
			fuzz_pread(&rs);
		else if (d < 88)
			fuzz_readv(&rs);
		else
			fuzz_misc(&rs);
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	_exit(0);
}

int main(int argc, char **argv)
{
	const char *env = getenv("SFD_FUZZ_SECONDS");
	double secs = env ? atof(env) : 20, t0;
	int opt, status = 0, i;
	pid_t child;

	seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
	while ((opt = getopt(argc, argv, "t:s:")) != -1) {
		if (opt == 't')
			secs = atof(optarg);
		else if (opt == 's')
			seed = strtoull(optarg, NULL, 0);
		else
			return 2;
	}
	if (secs <= 0)
		secs = 20;
	if (!seed)
		seed = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (tap_skip_all_if_missing("sfd_fuzz"))
		return 0;
	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	tap_plan(4);
	t0 = now_s();
	child = fork();
	if (child == 0)
		fuzz_child(secs);
	while (child > 0 && waitpid(child, &status, WNOHANG) == 0) {
		if (now_s() - t0 > secs + 120) {
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
			break;
		}
		usleep(20000);
	}
	tap_diag("seed %#llx, %.1f s: %ld interface calls (%ld with one exact answer), %ld records read, %ld mixer calls",
		 (unsigned long long)seed, now_s() - t0, res->calls,
		 res->exact_checks, res->records, res->mixer_calls);
	for (i = 0; i < res->nmsgs; i++)
		tap_diag("%s", res->msgs[i]);
	tap_result(child > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "the fuzzer ran %.0f s without crashing (status %#x)", secs, status);
	tap_result(!res->bad_exact, "determined cases give exactly the documented answer (%ld wrong)",
		   res->bad_exact);
	tap_result(!res->bad_errno, "every other error is a documented errno (%ld undocumented)",
		   res->bad_errno);
	tap_result(!res->bad_result && res->calls > 0,
		   "every success is whole records in the fd's mask (%ld bad, %ld calls)",
		   res->bad_result, res->calls);
	return tap_failed ? 1 : 0;
}
