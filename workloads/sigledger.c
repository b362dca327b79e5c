// SPDX-License-Identifier: GPL-2.0
/*
 * sigledger: compares sigsend logs with sigstorm ledgers (any number of
 * each, from any hosts) and prints a verdict. See --help for the rules.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAYLOAD_TAG	0x5347000000000000ull
#define TAG_MASK	0xffff000000000000ull
#define MAX_FILES	32

struct send {
	int sender, seq_hi;
	unsigned long seq;
	int signo, target, uid, payload;
	long long ns;
	int delivered;
};

struct group {			/* standard signals: one per (signo, queue) */
	int signo, queue;	/* queue: -1 shared, else thread index */
	unsigned long sent, delivered;
	long long last_send, last_delivery;
};

struct timer_def { int id, signo; unsigned long long value; };

static struct send *sends;
static size_t nsends, capsends;
static struct group groups[64 * 66];
static size_t ngroups;
static struct timer_def timers[4096];
static size_t ntimers;
static int senders[256], nsenders;
static int verbose;

static struct {
	unsigned long sent, delivered, lost, duplicated, mismatched, coalesced;
	unsigned long local, timers, timers_after_restore, invalid_timers, failed_sends;
	long max_overrun, max_overrun_after_restore;
	unsigned long restores;
} v;

static const char help[] =
"usage: sigledger --log SENDLOG... --ledger LEDGER... [--json] [--verbose]\n"
"\n"
"Compares what sigsend sent (its logs) with what sigstorm delivered (its\n"
"ledgers, from one or several processes/hosts, e.g. before and after a\n"
"checkpoint/restore) and prints: sent, delivered, lost, duplicated,\n"
"mismatched (and coalesced, local, timer counts). Exit 0 iff lost,\n"
"duplicated and mismatched are all 0.\n"
"\n"
"Rules:\n"
" * Real-time signals sent with a payload (sigqueue, rt_tgsigqueueinfo) are\n"
"   exact: the kernel queues every one, so each sequence number must be\n"
"   delivered exactly once (else lost / duplicated), with the same signal,\n"
"   si_code SI_QUEUE, si_pid, si_uid, sival, the right thread for a thread-\n"
"   directed send, and zero in every unused byte (else mismatched).\n"
" * Standard signals (1-31) coalesce in the kernel: while one is pending in\n"
"   a queue, another of the same number to the same queue is dropped. So n\n"
"   sends of signal S to one queue (process-wide, or one thread) yield\n"
"   between 1 and n deliveries. Per (signal, queue): lost if no delivery\n"
"   happened at or after the last send (the last send must find or leave\n"
"   an instance pending, which must then be delivered); duplicated if more\n"
"   deliveries than sends, or a payload sequence number delivered twice;\n"
"   mismatched if a payload names no send or differs from it. The sends\n"
"   that were legitimately merged are reported as coalesced.\n"
"   This uses CLOCK_REALTIME stamps from both logs, so compare logs from\n"
"   hosts whose clocks agree.\n"
" * Ledgers of i386 workloads (H line arch 3) hold the compat siginfo\n"
"   layout, whose sival is 32 bits: it carries the sequence number only.\n"
" * Signals the workload raises itself (timers, SIGCHLD, SIGIO, mq_notify)\n"
"   are counted as local; a SI_TIMER delivery must name (si_timerid) a timer\n"
"   the workload created, with the same signal and sival, else mismatched.\n";

static void usage(int rc)
{
	fputs(help, rc ? stderr : stdout);
	exit(rc);
}

static int cmp_send(const void *a, const void *b)
{
	const struct send *x = a, *y = b;

	if (x->sender != y->sender)
		return x->sender < y->sender ? -1 : 1;
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

static void add_sender(int pid)
{
	int i;

	for (i = 0; i < nsenders; i++)
		if (senders[i] == pid)
			return;
	if (nsenders < 256)
		senders[nsenders++] = pid;
}

static int is_sender(int pid)
{
	int i;

	for (i = 0; i < nsenders; i++)
		if (senders[i] == pid)
			return 1;
	return 0;
}

static void parse_log(const char *path)
{
	char line[512], kind[32], value[32];
	struct send s;
	int pid, tid;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "sigledger: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long fseq;

		if (line[0] == 'F' && sscanf(line, "F %lu", &fseq) == 1) {
			size_t i;

			/* a failed send was logged as S first: drop it */
			for (i = nsends; i-- > 0;)
				if (sends[i].seq == fseq) {
					sends[i].signo = 0;
					break;
				}
			v.failed_sends++;
			continue;
		}
		memset(&s, 0, sizeof(s));
		if (sscanf(line, "S %lu %31s %d %d %d %d %31s %d %d %lld", &s.seq, kind,
			   &s.signo, &pid, &s.target, &tid, value, &s.sender, &s.uid,
			   &s.ns) != 10)
			continue;
		s.payload = value[0] != '-';
		if (!strcmp(kind, "kill") || !strcmp(kind, "sigqueue"))
			s.target = -1;
		add_sender(s.sender);
		if (nsends == capsends) {
			capsends = capsends ? capsends * 2 : 4096;
			sends = realloc(sends, capsends * sizeof(*sends));
			if (!sends)
				exit(2);
		}
		sends[nsends++] = s;
	}
	fclose(f);
}

static void account_sends(void)
{
	size_t i, o = 0;

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
		if (sends[i].ns > g->last_send)
			g->last_send = sends[i].ns;
	}
	nsends = o;
	v.sent = nsends;
	qsort(sends, nsends, sizeof(*sends), cmp_send);
}

static int unhex(const char *h, unsigned char *out)
{
	int i, a, b;

	for (i = 0; i < 128; i++) {
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

	for (i = from; i < 128; i++)
		if (si[i])
			return 0;
	return 1;
}

static void payload_delivery(const unsigned char *si, int index, long long ns,
			     const char *line)
{
	struct send key = { .sender = i32(si + lay->pid), .seq = sival(si) & ~TAG_MASK };
	struct send *s = bsearch(&key, sends, nsends, sizeof(*sends), cmp_send);
	struct group *g;

	if (!s)
		return mismatch("no such send", line);
	if (++s->delivered > 1) {
		v.duplicated++;
		if (verbose)
			fprintf(stderr, "duplicated seq %lu\n", s->seq);
		return;
	}
	if (s->signo != i32(si) || !s->payload || s->uid != i32(si + lay->uid) ||
	    (s->target >= 0 && s->target != index) ||
	    !tail_is_zero(si, lay->value + lay->value_size))
		return mismatch("content differs from the send", line);
	if (s->signo < SIGRTMIN && (g = group_of(s->signo, s->target))) {
		g->delivered++;
		if (ns > g->last_delivery)
			g->last_delivery = ns;
	}
}

static void plain_delivery(const unsigned char *si, int code, int index, long long ns,
			   const char *line)
{
	struct group *g = group_of(i32(si), code == SI_TKILL ? index : -1);

	if (!g || !g->sent || i32(si) >= SIGRTMIN || !tail_is_zero(si, lay->uid + 4))
		return mismatch("no matching kill/tgkill", line);
	g->delivered++;
	if (ns > g->last_delivery)
		g->last_delivery = ns;
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

static void delivery(const char *line, int restored)
{
	unsigned char si[128];
	char hex[300];
	long long ns;
	int index, tid, code;

	if (sscanf(line, "D %d %d %lld %299s", &index, &tid, &ns, hex) != 4 ||
	    strlen(hex) != 256 || unhex(hex, si))
		return mismatch("malformed ledger line", line);
	v.delivered++;
	code = i32(si + 8);
	if (code == SI_TIMER)
		return timer_delivery(si, restored, line);
	if (code == SI_QUEUE && is_sender(i32(si + lay->pid)) && tagged(sival(si)))
		return payload_delivery(si, index, ns, line);
	if ((code == SI_USER || code == SI_TKILL) && is_sender(i32(si + lay->pid)))
		return plain_delivery(si, code, index, ns, line);
	v.delivered--;
	v.local++;
}

static void parse_timers(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "sigledger: %s: %s\n", path, strerror(errno));
		exit(2);
	}
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
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "sigledger: %s: %s\n", path, strerror(errno));
		exit(2);
	}
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

static void verdict(void)
{
	size_t i;

	for (i = 0; i < nsends; i++)
		if (sends[i].payload && sends[i].signo >= SIGRTMIN && !sends[i].delivered) {
			v.lost++;
			if (verbose)
				fprintf(stderr, "lost seq %lu signal %d\n", sends[i].seq, sends[i].signo);
		}
	for (i = 0; i < ngroups; i++) {
		struct group *g = &groups[i];
		unsigned long lost = g->sent && (!g->delivered || g->last_delivery < g->last_send);

		if (lost && verbose)
			fprintf(stderr, "lost: signal %d queue %d: nothing delivered after the last send\n",
				g->signo, g->queue);
		v.lost += lost;
		if (g->delivered > g->sent)
			v.duplicated += g->delivered - g->sent;
		else if (g->sent - g->delivered > lost)
			v.coalesced += g->sent - g->delivered - lost;
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "log", 1, 0, 'l' }, { "ledger", 1, 0, 'L' }, { "json", 0, 0, 'j' },
		{ "verbose", 0, 0, 'v' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
	const char *logs[MAX_FILES], *ledgers[MAX_FILES];
	int nlogs = 0, nledgers = 0, json = 0, c, i;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'l' && nlogs < MAX_FILES)
			logs[nlogs++] = optarg;
		else if (c == 'L' && nledgers < MAX_FILES)
			ledgers[nledgers++] = optarg;
		else if (c == 'j')
			json = 1;
		else if (c == 'v')
			verbose = 1;
		else
			usage(c == 'h' ? 0 : 2);
	}
	if (!nlogs || !nledgers)
		usage(2);
	for (i = 0; i < nlogs; i++)
		parse_log(logs[i]);
	account_sends();
	for (i = 0; i < nledgers; i++)
		parse_timers(ledgers[i]);
	for (i = 0; i < nledgers; i++)
		parse_ledger(ledgers[i]);
	verdict();
	if (json)
		printf("{\"sent\":%lu,\"delivered\":%lu,\"lost\":%lu,\"duplicated\":%lu,\"mismatched\":%lu,"
		       "\"coalesced\":%lu,\"local\":%lu,\"timers\":%lu,\"timers_after_restore\":%lu,"
		       "\"invalid_timers\":%lu,\"max_overrun\":%ld,\"max_overrun_after_restore\":%ld,"
		       "\"failed_sends\":%lu,\"restores\":%lu}\n",
		       v.sent, v.delivered, v.lost, v.duplicated, v.mismatched, v.coalesced,
		       v.local, v.timers, v.timers_after_restore, v.invalid_timers,
		       v.max_overrun, v.max_overrun_after_restore, v.failed_sends, v.restores);
	else
		printf("verdict: sent=%lu delivered=%lu lost=%lu duplicated=%lu mismatched=%lu "
		       "(coalesced=%lu local=%lu timers=%lu timers_after_restore=%lu max_overrun=%ld "
		       "failed_sends=%lu restores=%lu)\n",
		       v.sent, v.delivered, v.lost, v.duplicated, v.mismatched, v.coalesced,
		       v.local, v.timers, v.timers_after_restore, v.max_overrun,
		       v.failed_sends, v.restores);
	return v.lost || v.duplicated || v.mismatched;
}
