// SPDX-License-Identifier: GPL-2.0
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "log.h"

static const char *const names[FAULT_POINTS] = {
	[FAULT_RESTORE_BEFORE_REPLY] = "restore-before-reply",
	[FAULT_BATCH_BEFORE_RECORD] = "batch-before-record",
	[FAULT_BATCH_BEFORE_REPLY] = "batch-before-reply",
	[FAULT_DELTA_BEFORE_REPLY] = "delta-before-reply",
	[FAULT_DRAIN_BEFORE_SPOOL] = "drain-before-spool",
	[FAULT_DELTA_BEFORE_POST] = "delta-before-post",
};

static _Atomic int armed[FAULT_POINTS];
static char name_list[256];	/* "a", "b" or "c": from names[] */

static void list_names(void)
{
	size_t o = 0;
	unsigned int i;

	for (i = 0; i < FAULT_POINTS; i++)
		o += (size_t)snprintf(name_list + o, sizeof(name_list) - o, "%s\"%s\"",
				      !i ? "" : i + 1 < FAULT_POINTS ? ", " : " or ", names[i]);
}

bool fault_injection_enabled(void)
{
	const char *v = getenv("SIGMIG_AGENT_FAULTS");

	return v && strcmp(v, "1") == 0;
}

bool fault_arm(const char *name)
{
	unsigned int i;

	for (i = 0; i < FAULT_POINTS; i++) {
		if (name && !strcmp(name, names[i])) {
			atomic_store(&armed[i], 1);
			log_warn("fault armed: %s", name);
			return true;
		}
	}
	return false;
}

const char *fault_names(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, list_names);
	return name_list;
}

void fault_hit(enum fault_point point, const char *what)
{
	if (!atomic_exchange(&armed[point], 0))
		return;
	log_warn("fault %s: %s, exiting 86", names[point], what);
	_exit(86);
}
