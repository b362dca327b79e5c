// SPDX-License-Identifier: GPL-2.0
/*
 * Signals pending without a queue entry. Once RLIMIT_SIGPENDING is reached
 * the kernel marks a signal pending without queueing a sigqueue for it when
 * it may not fail the send: a real-time signal sent by kill() (SI_USER), a
 * standard one with a negative si_code (tgkill(), SI_TKILL). A peek cannot
 * see such a signal, yet it is delivered, with a siginfo the kernel makes
 * up at that moment (collect_signal()): si_signo, si_code SI_USER, si_pid
 * and si_uid 0, everything else zero.
 *
 * While every thread is parked with all signals blocked nothing leaves a
 * queue, so a signal in a queue's pending set with no record of it in
 * that queue's peek is one of those, and the image carries that siginfo
 * for it, behind the queue's records; on the target it is queued like any
 * other record and delivered with the same bytes. A signal that has both
 * entries and an entry-less sending merged into them already on the
 * source: the kernel delivers only the entries.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "unqueued.h"

int sigmig_pending_set(pid_t tid, int shared, uint64_t *set)
{
	const char *key = shared ? "ShdPnd:" : "SigPnd:";
	char path[64], line[256];
	int ret = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, strlen(key)))
			continue;
		ret = sscanf(line + strlen(key), "%" SCNx64, set) == 1 ? 0 : -EINVAL;
		break;
	}
	fclose(f);
	return ret;
}

static int record_signo(const struct sigmig_siginfo *e)
{
	int32_t signo;

	memcpy(&signo, e->bytes, sizeof(signo));
	return signo;
}

uint64_t sigmig_unqueued_set(const struct sigmig_queue *q, uint64_t pending)
{
	uint32_t i;
	int signo;

	pending &= ~((1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1)));
	for (i = 0; i < q->count && pending; i++) {
		signo = record_signo(&q->entries[i]);
		if (signo >= 1 && signo <= SIGMIG_NSIG)
			pending &= ~(1ULL << (signo - 1));
	}
	return pending;
}

int sigmig_append_unqueued(struct sigmig_queue *q, uint64_t set,
			   struct sigmig_siginfo **owned, uint32_t *added)
{
	struct sigmig_siginfo *e;
	int32_t signo;
	uint32_t n;

	*owned = NULL;
	*added = (uint32_t)__builtin_popcountll(set);
	if (!*added)
		return 0;
	e = calloc((size_t)q->count + *added, sizeof(*e));
	if (!e)
		return -ENOMEM;
	if (q->count)
		memcpy(e, q->entries, q->count * sizeof(*e));
	n = q->count;
	for (signo = 1; signo <= SIGMIG_NSIG; signo++) {
		if (!(set & (1ULL << (signo - 1))))
			continue;
		/* si_errno, si_code (SI_USER), si_pid, si_uid: all zero */
		memcpy(e[n++].bytes, &signo, sizeof(signo));
	}
	q->entries = e;
	q->count = n;
	*owned = e;
	return 0;
}
