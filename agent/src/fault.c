// SPDX-License-Identifier: GPL-2.0
#include <stdatomic.h>
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
	return "\"restore-before-reply\", \"batch-before-record\", \"batch-before-reply\", "
	       "\"delta-before-reply\", \"drain-before-spool\" or \"delta-before-post\"";
}

void fault_hit(enum fault_point point, const char *what)
{
	if (!atomic_exchange(&armed[point], 0))
		return;
	log_warn("fault %s: %s, exiting 86", names[point], what);
	_exit(86);
}
