/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The records a copy restored by CRIU already holds in one queue (its
 * restorer queued what CRIU's dump saw pending), matched by content
 * against the commit delta's records for the same queue, so that each is
 * delivered once: a multiset of 128-byte records, each standing for one
 * queued signal.
 */
#ifndef SIGMIG_AGENT_HELD_SET_H
#define SIGMIG_AGENT_HELD_SET_H

#include <stddef.h>
#include <stdint.h>

#define HELD_RECORD_BYTES	128

struct held_set {
	uint8_t *rec;		/* sorted by content */
	uint8_t *taken;		/* one flag per record: matched already */
	size_t nr;
};

/*
 * Every record of @dir/@queue (shared.bin, private.TID.bin) but SI_TIMER
 * ones (a timer's entry is its own: CRIU re-armed the timer). A missing
 * file is an empty set. 0, or -1 with @why.
 */
int held_set_load(struct held_set *s, const char *dir, const char *queue,
		  char *why, size_t len);
/*
 * Rewrites the records file @path without the records @s holds, each
 * record of @s matching one record of @path at most. Returns how many were
 * left out, or -1 with @why.
 */
long held_set_filter(struct held_set *s, const char *path, char *why, size_t len);
void held_set_free(struct held_set *s);

#endif /* SIGMIG_AGENT_HELD_SET_H */
