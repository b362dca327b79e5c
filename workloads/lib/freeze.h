/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Freezing and thawing the registered threads (on the core's mailbox):
 * each parks in the freeze signal's handler with every signal blocked and
 * serves PEEK until THAW.
 */
#ifndef SIGMIG_FREEZE_H
#define SIGMIG_FREEZE_H

#include <stddef.h>
#include <stdint.h>

#define FREEZE_TIMEOUT_MS	10000

/* The freeze signal's handler and the fork guard; once, at start. */
int sigmig_freeze_install(void);
/* A registered thread may now be parked. */
void sigmig_freeze_signal_unblock(void);

/* Park every registered thread, within FREEZE_TIMEOUT_MS or none stays parked. */
int sigmig_freeze(uint64_t *ns, char *err, size_t errlen);
/* Let every parked thread go: 0, or -ETIMEDOUT if one is still parked. */
int sigmig_thaw(void);

#endif /* SIGMIG_FREEZE_H */
