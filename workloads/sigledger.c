// SPDX-License-Identifier: GPL-2.0
/*
 * sigledger: compares sigsend logs with sigstorm ledgers (any number of
 * each, from any hosts) and, given the queues before and after a move,
 * compares those too; prints the one verdict of a migration. See --help.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAYLOAD_TAG	0x5347000000000000ull
#define TAG_MASK	0xffff000000000000ull
#define ID_SHIFT	32
#define ID_MASK		0xffffu
#define SEQ_MASK	0xffffffffull
#define MAX_FILES	64
#define MAX_SENDERS	256
#define MAX_QUEUES	128
#define SI_BYTES	128

struct send {
	unsigned int id;	/* the sender's --id, in the payload */
	int file;		/* the log it came from */
	unsigned long seq;
	int signo, target, uid, payload, pid;
	int to;			/* the pid it was sent to */
	long long ns;		/* logged just before the syscall */
	long long next_ns;	/* the sender's next line: the syscall was done by then */
	int delivered;
	int on_target;		/* logged on the restore's target (--target-log) */
};

/*
 * Standard signals: one per (signo, queue). Times of sends and deliveries
 * compare only on one host's clock: the source's (--log, the original's
 * ledger) or the target's (--target-log, restored ledgers).
 */
struct group {
	int signo, queue;	/* queue: -1 shared, else thread index */
	unsigned long sent, delivered;
	unsigned long source_sent;
	long long last_send, last_delivery;	/* source clock */
	int last_pid;		/* the pid the last send went to */
	long long last_next;	/* its sender's next line */
	unsigned long target_sent;
	long long first_target_send, last_target_send, last_restored_delivery;
	unsigned long moved;	/* restored deliveries before any target send */
};

struct timer_def { int id, signo; unsigned long long value; };

struct sender { unsigned int id; int pid, on_target; };

/* One queue of a --before/--after snapshot: count, and the records listed. */
struct queue {
	char name[32];
	unsigned long count;
	size_t n, cap;
	unsigned char (*rec)[SI_BYTES];
};

struct snapshot {
	struct queue q[MAX_QUEUES];
	size_t nq;
};

static struct send *sends;
static size_t nsends, capsends;
static struct group groups[64 * 66];
static size_t ngroups;
static struct timer_def timers[4096];
static size_t ntimers;
static struct sender senders[MAX_SENDERS];
static int nsenders;
static int verbose;
static int pid_namespace;	/* --pid-namespace */
static struct snapshot before, after;
static int have_queues;

/*
 * --exit-window PID:FROM:TO (ns, CLOCK_REALTIME of the source): sends to
 * PID made in it went to the original between its COMMIT reading the
 * queues and its exit being reaped: they succeeded and nothing reads them
 * (docs/design.md). Counted apart, not as lost.
 */
static struct { int pid; long long from, to; int set; } window;

static struct {
	unsigned long sent, delivered, lost, duplicated, mismatched, coalesced;
	unsigned long local, timers, timers_after_restore, invalid_timers, failed_sends;
	unsigned long exit_window;
	long max_overrun, max_overrun_after_restore;
	unsigned long restores;
} v;

/* Why the verdict is FAIL: the ledger's counts, the queues, the caller's. */
static char **reasons;
static size_t nreasons;

static const char help[] =
"usage: sigledger --log SENDLOG [--log SENDLOG...] [--target-log SENDLOG...]\n"
"                 --ledger LEDGER [--ledger LEDGER...]\n"
"                 [--before QUEUES --after QUEUES] [--fail REASON...] [--json] [--verbose]\n"
"                 [--exit-window PID:FROM_NS:TO_NS] [--pid-namespace]\n"
"\n"
"Compares what sigsend sent (its logs) with what sigstorm delivered (its\n"
"ledgers, from one or several processes/hosts, e.g. before and after a\n"
"checkpoint/restore) and prints: sent, delivered, lost, duplicated,\n"
"mismatched (and coalesced, local, timer counts), then the verdict: PASS\n"
"when lost, duplicated and mismatched are 0, every queue of --after starts\n"
"with exactly the records of the same queue in --before, something was\n"
"pending before, and no --fail was given; else FAIL with every reason.\n"
"Exit 0 on PASS, 1 on FAIL, 2 on bad usage or input. Each file needs its\n"
"own --log or --ledger. --json prints the counts, the queue comparison and\n"
"\"verdict\":{\"pass\":...,\"reasons\":[...]} as one JSON object.\n"
"\n"
"QUEUES files (a snapshot of a process's pending signals): a line\n"
"'Q <name> <count>' per queue, then its listed records oldest first, one\n"
"line of 256 hex digits (the 128-byte siginfo) each.\n"
"\n"
"--pid-namespace: the workload was pid 1 of a PID namespace of its own\n"
"(engine criu): the kernel shows it senders from outside as si_pid 0; the\n"
"sender is the one its payload names (a standard signal: the only sender).\n"
"\n"
"Rules:\n"
" * Real-time signals sent with a payload (sigqueue, rt_tgsigqueueinfo) are\n"
"   exact: the kernel queues every one, so each (sender id, sequence number)\n"
"   must be delivered exactly once (else lost / duplicated), with the same\n"
"   signal, si_code SI_QUEUE, si_pid, si_uid, sival, the right thread for a\n"
"   thread-directed send, and zero in every unused byte (else mismatched).\n"
"   Senders are told apart by the id in their payload (sigsend --id), not\n"
"   by pid: two hosts hand out the same pids. Two logs of one id fail.\n"
" * Standard signals (1-31) coalesce in the kernel: while one is pending in\n"
"   a queue, another of the same number to the same queue is dropped. So n\n"
"   sends of signal S to one queue (process-wide, or one thread) yield\n"
"   between 1 and n deliveries. Per (signal, queue): lost if no delivery\n"
"   happened at or after the last send (the last send must find or leave\n"
"   an instance pending, which must then be delivered); duplicated if more\n"
"   deliveries than sends, or a payload sequence number delivered twice;\n"
"   mismatched if a payload names no send or differs from it. The sends\n"
"   that were legitimately merged are reported as coalesced.\n"
"   Times are CLOCK_REALTIME stamps, compared on one host's clock only:\n"
"   sends of --log with the original's deliveries (a ledger whose H line\n"
"   says not restored), sends of --target-log (made on the restore's\n"
"   target) with a restored ledger's. A restored delivery before any\n"
"   target send of that (signal, queue) came after the move, so it is\n"
"   after every --log send: the last of those was pending when it moved.\n"
" * Ledgers of i386 workloads (H line arch 3) hold the compat siginfo\n"
"   layout, whose sival is 32 bits: it carries the sequence number only,\n"
"   and the sender is found by si_pid (run their senders on one host).\n"
" * --exit-window: a send to PID that was not delivered and may have been\n"
"   made within [FROM_NS, TO_NS] (the source's CLOCK_REALTIME; its syscall\n"
"   ran between its line and its sender's next line) is counted as\n"
"   exit_window, not lost: it may have reached the original after its\n"
"   COMMIT read the queues and before its exit was reaped, the window the\n"
"   kernel leaves open (docs/design.md). Reported; it does not fail the\n"
"   verdict.\n"
" * Signals the workload raises itself (timers, SIGCHLD, SIGIO, mq_notify)\n"
"   are counted as local; a SI_TIMER delivery must name (si_timerid) a timer\n"
"   the workload created, with the same signal and sival, else mismatched.\n"
" * Queues: a queue of --after may hold SI_TIMER records after the moved\n"
"   ones (timers re-armed by the restore fire while the copy is held), and\n"
"   a moved SI_TIMER record may show a higher si_overrun (it is its timer's\n"
"   own entry again, and the timer fired on the target); anything else\n"
"   differing, or a snapshot that lists fewer records than it counts, fails.\n";

static void usage(int rc)
{
	fputs(help, rc ? stderr : stdout);
	exit(rc);
}

static void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fatal(const char *fmt, ...)
{
	va_list ap;

	fputs("sigledger: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		fatal("out of memory");
	return p;
}

static void add_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void add_reason(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	reasons = xrealloc(reasons, (nreasons + 1) * sizeof(*reasons));
	reasons[nreasons] = strdup(buf);
	if (!reasons[nreasons++])
		fatal("out of memory");
}

static FILE *open_or_die(const char *path)
{
	FILE *f = fopen(path, "r");

	if (!f)
		fatal("%s: %s", path, strerror(errno));
	return f;
}

static int cmp_send(const void *a, const void *b)
{
	const struct send *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static struct group *group_of(int signo, int queue)
{
	size_t i;

	for (i = 0; i < ngroups; i++)
		if (groups[i].signo == signo && groups[i].queue == queue)
			return &groups[i];
	if (ngroups == sizeof(groups) / sizeof(groups[0]))
		return NULL;
	groups[ngroups].signo = signo;
	groups[ngroups].queue = queue;
	return &groups[ngroups++];
}

static void add_sender(unsigned int id, int pid, int on_target)
{
	int i;

	for (i = 0; i < nsenders; i++)
		if (senders[i].id == id && senders[i].pid == pid &&
		    senders[i].on_target == on_target)
			return;
	if (nsenders == MAX_SENDERS)
		fatal("more than %d senders", MAX_SENDERS);
	senders[nsenders].id = id;
	senders[nsenders].on_target = on_target;
	senders[nsenders++].pid = pid;
}

/* Only senders on the source (--log) have this pid: the send was made there. */
static int source_only_pid(int pid)
{
	int i, source = 0;

	for (i = 0; i < nsenders; i++) {
		if (senders[i].pid != pid)
			continue;
		if (senders[i].on_target)
			return 0;
		source = 1;
	}
	return source;
}

static int is_sender_pid(int pid)
{
	int i;

	for (i = 0; i < nsenders; i++)
		if (senders[i].pid == pid)
			return 1;
	return 0;
}

/* The one sender id behind si_pid, for payloads without an id; -1: none or several. */
static long id_of_pid(int pid)
{
	long id = -1;
	int i;

	for (i = 0; i < nsenders; i++) {
		if (senders[i].pid != pid)
			continue;
		if (id >= 0 && (unsigned int)id != senders[i].id)
			return -1;
		id = senders[i].id;
	}
	return id;
}

/* A failed send was logged as S first: drop it (its own sender, its file). */
static void drop_failed(const char *line, int file)
{
	unsigned long seq;
	unsigned int id;
	int n, sig, err;
	size_t i;
	char kind[32];

	n = sscanf(line, "F %lu %31s %d %d %u", &seq, kind, &sig, &err, &id);
	if (n < 1)
		return;
	for (i = nsends; i-- > 0;)
		if (sends[i].file == file && sends[i].seq == seq && (n < 5 || sends[i].id == id)) {
			sends[i].signo = 0;
			break;
		}
	v.failed_sends++;
}

static void add_send(const struct send *s)
{
	if (nsends == capsends) {
		capsends = capsends ? capsends * 2 : 4096;
		sends = xrealloc(sends, capsends * sizeof(*sends));
	}
	sends[nsends++] = *s;
}

static void parse_log(const char *path, int file, int on_target)
{
	char line[512], kind[32], value[32];
	long long ns;
	struct send s;
	size_t prev = (size_t)-1;
	int tid, n;
	FILE *f = open_or_die(path);

	while (fgets(line, sizeof(line), f)) {
		/* a sender is sequential: its previous send's syscall is over */
		if (prev != (size_t)-1 && sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lld", &ns) == 1)
			sends[prev].next_ns = ns;
		if (line[0] == 'F') {
			drop_failed(line, file);
			continue;
		}
		memset(&s, 0, sizeof(s));
		n = sscanf(line, "S %lu %31s %d %d %d %d %31s %d %d %lld %u", &s.seq, kind,
			   &s.signo, &s.to, &s.target, &tid, value, &s.pid, &s.uid, &s.ns, &s.id);
		if (n < 10)
			continue;
		if (n < 11)	/* a log from before --id: the default id */
			s.id = (unsigned int)s.pid & ID_MASK;
		s.file = file;
		s.on_target = on_target;
		s.payload = value[0] != '-';
		if (!strcmp(kind, "kill") || !strcmp(kind, "sigqueue"))
			s.target = -1;
		add_sender(s.id, s.pid, on_target);
		s.next_ns = LLONG_MAX;
		add_send(&s);
		prev = nsends - 1;
	}
	fclose(f);
}

/* Each sender numbers its sends from 1: a pair seen twice is two senders. */
static void check_ids(void)
{
	size_t i;

	for (i = 1; i < nsends; i++)
		if (sends[i].id == sends[i - 1].id && sends[i].seq == sends[i - 1].seq)
			fatal("sender id %u logs send %lu twice (pids %d and %d): "
			      "give each sigsend its own --id", sends[i].id, sends[i].seq,
			      sends[i - 1].pid, sends[i].pid);
}

static void account_sends(void)
{
	size_t i, o = 0;

	qsort(sends, nsends, sizeof(*sends), cmp_send);
	check_ids();
	for (i = 0; i < nsends; i++) {
		struct group *g;

		if (!sends[i].signo)
			continue;	/* failed */
		sends[o++] = sends[i];
		if (sends[i].signo >= SIGRTMIN)
			continue;
		g = group_of(sends[i].signo, sends[i].target);
		if (!g)
			continue;
		g->sent++;
		if (sends[i].on_target) {
			if (!g->target_sent++ || sends[i].ns < g->first_target_send)
				g->first_target_send = sends[i].ns;
			if (sends[i].ns > g->last_target_send)
				g->last_target_send = sends[i].ns;
			continue;
		}
		g->source_sent++;
		if (sends[i].ns > g->last_send) {
			g->last_send = sends[i].ns;
			g->last_pid = sends[i].to;
			g->last_next = sends[i].next_ns;
		}
	}
	nsends = o;
	v.sent = nsends;
}

static int unhex(const char *h, unsigned char *out)
{
	int i, a, b;

	for (i = 0; i < SI_BYTES; i++) {
		a = h[2 * i];
		b = h[2 * i + 1];
		a = a >= 'a' ? a - 'a' + 10 : a - '0';
		b = b >= 'a' ? b - 'a' + 10 : b - '0';
		if (a < 0 || a > 15 || b < 0 || b > 15)
			return -1;
		out[i] = (unsigned char)(a << 4 | b);
	}
	return 0;
}

static int32_t i32(const unsigned char *p) { int32_t x; memcpy(&x, p, 4); return x; }

/* Where the union fields sit: x86_64 siginfo, or the i386 compat one. */
struct layout { int pid, uid, value, value_size, timer_overrun; };
static const struct layout lay64 = { 16, 20, 24, 8, 20 };
static const struct layout lay32 = { 12, 16, 20, 4, 16 };
static const struct layout *lay = &lay64;

static uint64_t sival(const unsigned char *si)
{
	uint64_t x = 0;

	memcpy(&x, si + lay->value, (size_t)lay->value_size);
	return x;
}

/* A 32-bit receiver sees the low 32 bits of the sender's sival: the seq. */
static int tagged(uint64_t v)
{
	return lay->value_size == 4 || (v & TAG_MASK) == PAYLOAD_TAG;
}

static void mismatch(const char *why, const char *line)
{
	v.mismatched++;
	if (verbose)
		fprintf(stderr, "mismatched (%s): %.80s\n", why, line);
}

static int tail_is_zero(const unsigned char *si, int from)
{
	int i;

	for (i = from; i < SI_BYTES; i++)
		if (si[i])
			return 0;
	return 1;
}

static struct send *find_send(const unsigned char *si)
{
	uint64_t val = sival(si);
	struct send key = { .seq = val & SEQ_MASK };
	long id;

	if (lay->value_size == 8) {
		key.id = (unsigned int)(val >> ID_SHIFT) & ID_MASK;
	} else {
		id = id_of_pid(i32(si + lay->pid));
		if (id < 0)
			return NULL;
		key.id = (unsigned int)id;
	}
	return bsearch(&key, sends, nsends, sizeof(*sends), cmp_send);
}

/*
 * Whether a sender on the target with @pid had sent to @g by @ns (both on
 * the target's clock).
 */
static int target_sent_before(const struct group *g, int pid, long long ns)
{
	size_t i;

	for (i = 0; i < nsends; i++)
		if (sends[i].on_target && sends[i].pid == pid && sends[i].ns <= ns &&
		    sends[i].signo == g->signo && sends[i].target == g->queue)
			return 1;
	return 0;
}

static int source_pid(int pid)
{
	int i;

	for (i = 0; i < nsenders; i++)
		if (senders[i].pid == pid && !senders[i].on_target)
			return 1;
	return 0;
}

/*
 * A delivery by the original is on the source's clock. One by a restored
 * process is on the target's, and it came after the move: it is a signal
 * that moved (or was sent to the original and merged into one that moved,
 * or was forwarded after the cutover) when its sender pid is only a source
 * sender's, when it came before any send made on the target, or when its
 * pid is a source sender's and no target sender with that pid (pids of the
 * two hosts may coincide) had sent to this queue by then.
 */
static void group_delivered(struct group *g, long long ns, int restored,
			    int from_pid)
{
	g->delivered++;
	if (!restored) {
		if (ns > g->last_delivery)
			g->last_delivery = ns;
		return;
	}
	if (ns > g->last_restored_delivery)
		g->last_restored_delivery = ns;
	if (source_only_pid(from_pid) || !g->target_sent || ns < g->first_target_send ||
	    (source_pid(from_pid) && !target_sent_before(g, from_pid, ns)))
		g->moved++;
}

static void payload_delivery(const unsigned char *si, int index, long long ns,
			     int restored, const char *line)
{
	struct send *s = find_send(si);
	struct group *g;

	if (!s)
		return mismatch("no such send", line);
	if (++s->delivered > 1) {
		v.duplicated++;
		if (verbose)
			fprintf(stderr, "duplicated: sender %u seq %lu\n", s->id, s->seq);
		return;
	}
	if (s->signo != i32(si) || !s->payload || s->pid != i32(si + lay->pid) ||
	    s->uid != i32(si + lay->uid) || (s->target >= 0 && s->target != index) ||
	    !tail_is_zero(si, lay->value + lay->value_size))
		return mismatch("content differs from the send", line);
	if (s->signo < SIGRTMIN && (g = group_of(s->signo, s->target)))
		group_delivered(g, ns, restored, s->on_target ? -1 : i32(si + lay->pid));
}

static void plain_delivery(const unsigned char *si, int code, int index, long long ns,
			   int restored, const char *line)
{
	struct group *g = group_of(i32(si), code == SI_TKILL ? index : -1);

	if (!g || !g->sent || i32(si) >= SIGRTMIN || !tail_is_zero(si, lay->uid + 4))
		return mismatch("no matching kill/tgkill", line);
	group_delivered(g, ns, restored, i32(si + lay->pid));
}

static void timer_delivery(const unsigned char *si, int restored, const char *line)
{
	int id = i32(si + lay->pid), overrun = i32(si + lay->timer_overrun);
	size_t i;

	v.delivered--;	/* not a send: counted apart */
	v.timers++;
	for (i = 0; i < ntimers; i++)
		if (timers[i].id == id)
			break;
	if (i == ntimers || timers[i].signo != i32(si) || timers[i].value != sival(si)) {
		v.invalid_timers++;
		return mismatch("SI_TIMER names no timer of the workload", line);
	}
	if (overrun > v.max_overrun)
		v.max_overrun = overrun;
	if (restored) {
		v.timers_after_restore++;
		if (overrun > v.max_overrun_after_restore)
			v.max_overrun_after_restore = overrun;
	}
}

/*
 * --pid-namespace: the workload is pid 1 of a namespace of its own, and the
 * kernel shows a sender outside it as si_pid 0. The payload names the
 * sender; a standard signal (no payload) is the only sender's, if one.
 */
static void sender_outside(unsigned char *si, int code)
{
	const struct send *s = NULL;
	int32_t pid;

	if (code == SI_QUEUE && tagged(sival(si)))
		s = find_send(si);
	if (!s && nsenders != 1)
		return;
	pid = s ? s->pid : senders[0].pid;
	memcpy(si + lay->pid, &pid, sizeof(pid));
}

static void delivery(const char *line, int restored)
{
	unsigned char si[SI_BYTES];
	char hex[300];
	long long ns;
	int index, tid, code;

	if (sscanf(line, "D %d %d %lld %299s", &index, &tid, &ns, hex) != 4 ||
	    strlen(hex) != 2 * SI_BYTES || unhex(hex, si))
		return mismatch("malformed ledger line", line);
	v.delivered++;
	code = i32(si + 8);
	if (pid_namespace && i32(si + lay->pid) == 0 &&
	    (code == SI_QUEUE || code == SI_USER || code == SI_TKILL))
		sender_outside(si, code);
	if (code == SI_TIMER)
		return timer_delivery(si, restored, line);
	if (code == SI_QUEUE && is_sender_pid(i32(si + lay->pid)) && tagged(sival(si)))
		return payload_delivery(si, index, ns, restored, line);
	if ((code == SI_USER || code == SI_TKILL) && is_sender_pid(i32(si + lay->pid)))
		return plain_delivery(si, code, index, ns, restored, line);
	v.delivered--;
	v.local++;
}

static void parse_timers(const char *path)
{
	char line[512];
	FILE *f = open_or_die(path);

	while (fgets(line, sizeof(line), f) && ntimers < 4096)
		if (sscanf(line, "T %d %d %llx", &timers[ntimers].id, &timers[ntimers].signo,
			   &timers[ntimers].value) == 3)
			ntimers++;
	fclose(f);
}

static void parse_ledger(const char *path)
{
	char line[512];
	int restored = 0, pid, r, arch;
	long long ns;
	FILE *f = open_or_die(path);

	while (fgets(line, sizeof(line), f)) {
		if (line[0] == 'H' && sscanf(line, "H %d %d", &pid, &r) == 2) {
			arch = 62;
			sscanf(line, "H %d %d %lld %d", &pid, &r, &ns, &arch);
			lay = arch == 3 ? &lay32 : &lay64;
			restored = r;
			v.restores += (unsigned long)r;
		} else if (line[0] == 'D') {
			delivery(line, restored);
		}
	}
	fclose(f);
}

/*
 * The syscall of a send happened after its line was logged (@ns) and before
 * the sender's next line (@next): it may have met the window if those
 * overlap it.
 */
static int in_exit_window(int pid, long long ns, long long next)
{
	return window.set && pid == window.pid && ns <= window.to && next >= window.from;
}

static void lost_send(const struct send *s)
{
	int excused = in_exit_window(s->to, s->ns, s->next_ns);

	if (excused)
		v.exit_window++;
	else
		v.lost++;
	if (verbose)
		fprintf(stderr, "%s: sender %u seq %lu signal %d\n",
			excused ? "lost in the exit window" : "lost", s->id, s->seq, s->signo);
}

static void ledger_verdict(void)
{
	size_t i;

	for (i = 0; i < nsends; i++)
		if (sends[i].payload && sends[i].signo >= SIGRTMIN && !sends[i].delivered)
			lost_send(&sends[i]);
	for (i = 0; i < ngroups; i++) {
		struct group *g = &groups[i];
		int source_ok = !g->source_sent || g->moved ||
				(g->delivered && g->last_delivery >= g->last_send);
		int target_ok = !g->target_sent ||
				g->last_restored_delivery >= g->last_target_send;
		unsigned long lost = !source_ok || !target_ok;

		if (lost && verbose)
			fprintf(stderr, "lost: signal %d queue %d: nothing delivered after the last send\n",
				g->signo, g->queue);
		if (lost && in_exit_window(g->last_pid, g->last_send, g->last_next)) {
			v.exit_window++;
			lost = 0;
		} else {
			v.lost += lost;
		}
		if (g->delivered > g->sent)
			v.duplicated += g->delivered - g->sent;
		else if (g->sent - g->delivered > lost)
			v.coalesced += g->sent - g->delivered - lost;
	}
	if (v.lost)
		add_reason("lost = %lu", v.lost);
	if (v.duplicated)
		add_reason("duplicated = %lu", v.duplicated);
	if (v.mismatched)
		add_reason("mismatched = %lu", v.mismatched);
}

/* ------------------------------------------------------------- queues */

static struct queue *queue_of(struct snapshot *snap, const char *name)
{
	size_t i;

	for (i = 0; i < snap->nq; i++)
		if (!strcmp(snap->q[i].name, name))
			return &snap->q[i];
	return NULL;
}

static void queue_add(const char *path, struct queue *q, const char *hex)
{
	if (!q)
		fatal("%s: a record before the first Q line", path);
	if (strlen(hex) != 2 * SI_BYTES)
		fatal("%s: queue %s: a record is not %d hex digits", path, q->name, 2 * SI_BYTES);
	if (q->n == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 256;
		q->rec = xrealloc(q->rec, q->cap * sizeof(*q->rec));
	}
	if (unhex(hex, q->rec[q->n++]))
		fatal("%s: queue %s: a record is not hex", path, q->name);
}

static void parse_queues(const char *path, struct snapshot *snap)
{
	char line[512], name[32];
	unsigned long count;
	struct queue *q = NULL;
	FILE *f = open_or_die(path);

	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0])
			continue;
		if (sscanf(line, "Q %31s %lu", name, &count) != 2) {
			queue_add(path, q, line);
			continue;
		}
		if (queue_of(snap, name))
			fatal("%s: queue %s listed twice", path, name);
		if (snap->nq == MAX_QUEUES)
			fatal("%s: more than %d queues", path, MAX_QUEUES);
		q = &snap->q[snap->nq++];
		snprintf(q->name, sizeof(q->name), "%s", name);
		q->count = count;
	}
	fclose(f);
	if (!snap->nq)
		fatal("%s: no Q line (an empty snapshot still lists its queues)", path);
}

static int is_timer_record(const unsigned char *rec)
{
	return i32(rec + 8) == SI_TIMER;
}

/*
 * The same record, or the same SI_TIMER entry with its overrun raised:
 * a moved timer record is its timer's own entry on the target, and each
 * expiry there raises si_overrun instead of queueing a record.
 */
static int same_or_raised(const unsigned char *b, const unsigned char *a, int *raised)
{
	unsigned char tmp[SI_BYTES];

	*raised = 0;
	if (!memcmp(a, b, SI_BYTES))
		return 1;
	if (!is_timer_record(a) || !is_timer_record(b) ||
	    i32(a + lay->timer_overrun) < i32(b + lay->timer_overrun))
		return 0;
	memcpy(tmp, a, SI_BYTES);
	memcpy(tmp + lay->timer_overrun, b + lay->timer_overrun, 4);
	*raised = 1;
	return !memcmp(tmp, b, SI_BYTES);
}

/*
 * "identical", "timers" (identical but for SI_TIMER records raised or
 * queued behind on the target), "truncated", "different".
 */
static const char *compare_queue(const struct queue *b, const struct queue *a,
				 size_t *added, size_t *raised)
{
	size_t i;
	int r;

	*added = *raised = 0;
	if (b->n < b->count || a->n < a->count)
		return "truncated";
	if (a->n < b->n)
		return "different";
	for (i = 0; i < b->n; i++) {
		if (!same_or_raised(b->rec[i], a->rec[i], &r))
			return "different";
		*raised += (size_t)r;
	}
	for (i = b->n; i < a->n; i++)
		if (!is_timer_record(a->rec[i]))
			return "different";
	*added = a->n - b->n;
	return *added || *raised ? "timers" : "identical";
}

static const struct queue empty_queue = { .name = "" };

static void queues_verdict(void)
{
	unsigned long pending = 0;
	const struct queue *b, *a;
	const char *how;
	size_t i, added, raised;

	for (i = 0; i < before.nq; i++)
		pending += before.q[i].count;
	if (!pending)
		add_reason("nothing was pending before the move");
	for (i = 0; i < before.nq; i++) {
		b = &before.q[i];
		a = queue_of(&after, b->name);
		how = a ? compare_queue(b, a, &added, &raised) : "missing";
		if (!strcmp(how, "truncated"))
			add_reason("queue %s: a snapshot lists fewer records than it counts "
				   "(raise the snapshot limit)", b->name);
		else if (strcmp(how, "identical") && strcmp(how, "timers"))
			add_reason("queue %s %s after the move", b->name,
				   a ? "differs" : "is missing");
	}
	for (i = 0; i < after.nq; i++)
		if (!queue_of(&before, after.q[i].name) &&
		    strcmp(compare_queue(&empty_queue, &after.q[i], &added, &raised), "different") == 0)
			add_reason("queue %s is new after the move", after.q[i].name);
}

/* -------------------------------------------------------------- output */

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_queues(void)
{
	const struct queue *b, *a;
	size_t i, added = 0, raised = 0;
	const char *how;

	printf(",\"queues\":[");
	for (i = 0; i < before.nq; i++) {
		b = &before.q[i];
		a = queue_of(&after, b->name);
		how = a ? compare_queue(b, a, &added, &raised) : "missing";
		printf("%s{\"queue\":", i ? "," : "");
		json_string(b->name);
		printf(",\"before\":%lu,\"after\":%lu,\"result\":\"%s\","
		       "\"timers_added\":%zu,\"timers_raised\":%zu}",
		       b->count, a ? a->count : 0, how, a ? added : 0,
		       a ? raised : 0);
	}
	printf("]");
}

static void print_json(int pass)
{
	size_t i;

	printf("{\"sent\":%lu,\"delivered\":%lu,\"lost\":%lu,\"duplicated\":%lu,\"mismatched\":%lu,"
	       "\"coalesced\":%lu,\"local\":%lu,\"timers\":%lu,\"timers_after_restore\":%lu,"
	       "\"invalid_timers\":%lu,\"max_overrun\":%ld,\"max_overrun_after_restore\":%ld,"
	       "\"failed_sends\":%lu,\"restores\":%lu,\"senders\":%d,\"exit_window\":%lu",
	       v.sent, v.delivered, v.lost, v.duplicated, v.mismatched, v.coalesced,
	       v.local, v.timers, v.timers_after_restore, v.invalid_timers,
	       v.max_overrun, v.max_overrun_after_restore, v.failed_sends, v.restores,
	       nsenders, v.exit_window);
	if (have_queues)
		json_queues();
	printf(",\"verdict\":{\"pass\":%s,\"reasons\":[", pass ? "true" : "false");
	for (i = 0; i < nreasons; i++) {
		if (i)
			putchar(',');
		json_string(reasons[i]);
	}
	printf("]}}\n");
}

static void print_text(int pass)
{
	size_t i;

	printf("verdict: %s sent=%lu delivered=%lu lost=%lu duplicated=%lu mismatched=%lu "
	       "(coalesced=%lu local=%lu timers=%lu timers_after_restore=%lu max_overrun=%ld "
	       "failed_sends=%lu restores=%lu senders=%d exit_window=%lu)", pass ? "PASS" : "FAIL",
	       v.sent, v.delivered, v.lost, v.duplicated, v.mismatched, v.coalesced,
	       v.local, v.timers, v.timers_after_restore, v.max_overrun,
	       v.failed_sends, v.restores, nsenders, v.exit_window);
	for (i = 0; i < nreasons; i++)
		printf("%s%s", i ? "; " : ": ", reasons[i]);
	putchar('\n');
}

struct args {
	const char *logs[MAX_FILES], *ledgers[MAX_FILES];
	int on_target[MAX_FILES];	/* logs[i] came with --target-log */
	const char *before, *after;
	const char *fails[MAX_FILES];
	int nlogs, nledgers, nfails, json;
};

static void add_file(const char **list, int *n, const char *opt, const char *path)
{
	if (*n == MAX_FILES)
		fatal("more than %d %s", MAX_FILES, opt);
	list[(*n)++] = path;
}

static void parse_args(int argc, char **argv, struct args *a)
{
	static const struct option lo[] = {
		{ "log", 1, 0, 'l' }, { "target-log", 1, 0, 't' },
		{ "ledger", 1, 0, 'L' }, { "json", 0, 0, 'j' },
		{ "before", 1, 0, 'b' }, { "after", 1, 0, 'a' }, { "fail", 1, 0, 'f' },
		{ "verbose", 0, 0, 'v' }, { "exit-window", 1, 0, 'w' },
		{ "pid-namespace", 0, 0, 'p' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'l': add_file(a->logs, &a->nlogs, "--log", optarg); break;
		case 't':
			a->on_target[a->nlogs] = 1;
			add_file(a->logs, &a->nlogs, "--target-log", optarg);
			break;
		case 'L': add_file(a->ledgers, &a->nledgers, "--ledger", optarg); break;
		case 'b': a->before = optarg; break;
		case 'a': a->after = optarg; break;
		case 'f': add_file(a->fails, &a->nfails, "--fail", optarg); break;
		case 'j': a->json = 1; break;
		case 'v': verbose = 1; break;
		case 'p': pid_namespace = 1; break;
		case 'w':
			if (sscanf(optarg, "%d:%lld:%lld", &window.pid, &window.from,
				   &window.to) != 3 || window.pid <= 0 || window.from > window.to)
				fatal("--exit-window PID:FROM_NS:TO_NS, got '%s'", optarg);
			window.set = 1;
			break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	/* "--log a b" would read a and silently ignore b. */
	if (optind < argc)
		fatal("unexpected argument '%s': each file needs its own --log or --ledger "
		      "(see --help)", argv[optind]);
	if (!a->nlogs || !a->nledgers)
		fatal("at least one --log and one --ledger are needed (see --help)");
	if (!a->before != !a->after)
		fatal("--before and --after go together");
}

int main(int argc, char **argv)
{
	struct args a = { .nlogs = 0 };
	int i, pass;

	parse_args(argc, argv, &a);
	for (i = 0; i < a.nlogs; i++)
		parse_log(a.logs[i], i, a.on_target[i]);
	account_sends();
	for (i = 0; i < a.nledgers; i++)
		parse_timers(a.ledgers[i]);
	for (i = 0; i < a.nledgers; i++)
		parse_ledger(a.ledgers[i]);
	ledger_verdict();
	if (a.before) {
		parse_queues(a.before, &before);
		parse_queues(a.after, &after);
		have_queues = 1;
		queues_verdict();
	}
	for (i = 0; i < a.nfails; i++)
		add_reason("%s", a.fails[i]);
	pass = nreasons == 0;
	if (a.json)
		print_json(pass);
	else
		print_text(pass);
	return pass ? 0 : 1;
}
