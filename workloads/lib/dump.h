/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Dumping a parked process into an image (on the core's mailbox): every
 * thread peeks its own queue, the caller peeks the shared one, and the
 * dispositions and POSIX timers that give the signals meaning are added.
 */
#ifndef SIGMIG_DUMP_H
#define SIGMIG_DUMP_H

#include <stddef.h>
#include <stdint.h>

/* Every registered thread must be parked (frozen, or held). */
int sigmig_dump(uint8_t **img, size_t *len, uint64_t *nsignals, char *err,
		size_t errlen);

#endif /* SIGMIG_DUMP_H */
