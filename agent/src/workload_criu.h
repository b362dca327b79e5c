/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Engine "criu" on one workload (workload_criu.c): the source's dump,
 * abort and commit delta, the target's held restore, requeue and release.
 * migrate_criu.c drives a move with them over HTTP.
 */
#ifndef AGENT_WORKLOAD_CRIU_H
#define AGENT_WORKLOAD_CRIU_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "workload.h"

struct criu_move {
	char dir[256];		/* STATE/ID.move: the dump, its logs, the delta */
	uint8_t *bundle;	/* CRIU's images, the drained records, the externals */
	size_t bundle_len;
	unsigned long records;	/* drained before CRIU's dump */
	unsigned long long drain_us, criu_us;
	unsigned long delta_drained;	/* what the original's queues held at commit */
	unsigned long carried;	/* of them, what the copy did not have yet */
	unsigned long timers;	/* timer records left to the timer CRIU moved */
	unsigned long already_held;	/* of the delta, what the copy held already */
	uint8_t *delta;		/* their bundle; NULL when none */
	size_t delta_len;
};

/*
 * Drains @w's queues, CRIU dumps it and leaves it frozen, and *@m gets
 * the bundle. On failure @w runs on with its signals.
 */
int criu_dump(struct workload *w, struct criu_move *m, struct api_error *err);
/*
 * The drained records back into @w, in front; it runs on. -1 with the
 * tool's reason in @why when they could not all go back.
 */
int criu_abort(struct workload *w, struct criu_move *m, char *why, size_t len);
/*
 * After the target's answer: the original sealed, its queues drained, the
 * original killed, their records but the timers' into m->delta (the
 * target leaves out what its copy holds already).
 */
int criu_delta(struct workload *w, struct criu_move *m, struct api_error *err);
void criu_move_free(struct criu_move *m);

/* The target: @bundle restored by CRIU, records requeued and verified, held. */
int workload_restore_criu(const uint8_t *bundle, size_t len, const char *program,
			  const struct workload_args *args, bool hold,
			  struct workload **out, struct api_error *err);
/*
 * A delta bundle's records into the held copy @w, behind what it holds
 * (workload_requeue() of an engine criu workload; no @source batches).
 */
int criu_requeue_held(struct workload *w, const uint8_t *bundle, size_t len,
		      const char *source, json_t **result, struct api_error *err);
/* The held copy @w runs. */
int criu_release(struct workload *w, json_t **result, struct api_error *err);
/* Engine "criu". */
bool workload_is_criu(const struct workload *w);

#endif
