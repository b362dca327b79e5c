/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Injected crashes for the fault tests (POST /v1/debug/fault, only with
 * SIGMIG_AGENT_FAULTS=1): armed by name, each makes the agent _exit(86)
 * once, at its point, as a crash there would.
 */
#ifndef AGENT_FAULT_H
#define AGENT_FAULT_H

#include <stdbool.h>

enum fault_point {
	FAULT_RESTORE_BEFORE_REPLY,	/* a restore succeeded, not answered */
	FAULT_BATCH_BEFORE_RECORD,	/* a batch requeued, not yet recorded */
	FAULT_BATCH_BEFORE_REPLY,	/* a batch requeued and recorded, not answered */
	FAULT_DELTA_BEFORE_REPLY,	/* the same for batch 1, the commit delta */
	FAULT_DRAIN_BEFORE_SPOOL,	/* a forwarder's DRAIN answered, not written ahead */
	FAULT_DELTA_BEFORE_POST,	/* the commit delta written ahead, not posted */
	FAULT_POINTS
};

bool fault_injection_enabled(void);
/* The point named @name armed; false when there is none of that name. */
bool fault_arm(const char *name);
/* The names, for an error message: "a", "b" or "c". */
const char *fault_names(void);
/* At @point: exits 86 if it is armed (once), saying @what in the log. */
void fault_hit(enum fault_point point, const char *what);

#endif
