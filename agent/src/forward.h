/* SPDX-License-Identifier: GPL-2.0 */
/*
 * After the cutover, what reaches the original goes to the copy: the
 * commit delta, then, for a lease, each batch a forwarding original's
 * DRAIN reads from its queues. Batches are numbered and posted in order
 * (POST .../requeue?source=S&batch=N, which the target takes once), each
 * retried until acknowledged; what the target has not acknowledged when
 * the lease ends is kept in a spool on this host, and POST
 * /v1/workloads/{id}/replay sends it later.
 */
#ifndef AGENT_FORWARD_H
#define AGENT_FORWARD_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "ctl.h"
#include "httpc.h"
#include "problem.h"
#include "validate.h"
#include "workload.h"

/* A peer that sends nothing for this long has stalled. */
#define MIGRATE_STALL_MS	15000

struct forwarder;

/*
 * POST /v1/workloads/@id/thaw on the target, on @conn (NULL: a connection
 * of its own): its workload document, or NULL with @problem set.
 */
json_t *forward_thaw_target(struct httpc_conn *conn, const struct target_url *target,
			    const char *target_text, const char *token,
			    unsigned int timeout_ms, const char *id, char *problem,
			    size_t len);

/*
 * For @w's copy @target_id on @req's target; NULL when out of memory.
 * @conn, an open connection to the target or NULL, is taken over: every
 * request of the forwarder goes on it.
 */
struct forwarder *forwarder_new(struct workload *w, const struct migrate_request *req,
				const char *target_id, struct httpc_conn *conn);
/* forward_thaw_target() of the forwarder's copy, on its connection. */
json_t *forwarder_thaw(struct forwarder *f, char *problem, size_t len);
/*
 * Batch @image (@signals signals; taken over) goes behind the earlier
 * ones; then every batch not yet acknowledged is posted, in order, until
 * one gets no answer, retried for up to @budget_ms. 0: all acknowledged,
 * 1: some still waiting, -1: the target refused one (every later batch
 * goes to the spool).
 */
int forwarder_put(struct forwarder *f, struct ctl_reply *image, uint64_t signals,
		  unsigned int budget_ms);
/*
 * The lease: every poll, DRAIN the forwarding original and forward what
 * it took, until @lease_ms have passed; then COMMIT ends it, its last
 * drain is forwarded, and what the target has not acknowledged within
 * the migration's timeout is spooled. @acked: COMMIT was answered (else
 * @commit's method becomes "killed": settle it).
 */
void forwarder_lease(struct forwarder *f, unsigned int lease_ms, json_t *commit,
		     bool *acked);
/* Writes every batch not acknowledged into the spool. */
void forwarder_spool_rest(struct forwarder *f);
bool forwarder_spooled(const struct forwarder *f);
/* The first spool file, "" when none. */
const char *forwarder_first_spool(const struct forwarder *f);
/* After replaying the spool the held copy is to be thawed. */
void forwarder_thaw_after_replay(struct forwarder *f);
/* Counts and spool files for the migrate reply. */
json_t *forwarder_json(const struct forwarder *f);
/* Kept for replay while it has a spool, freed otherwise. */
void forwarder_done(struct forwarder *f);

/*
 * POST /v1/workloads/{id}/replay: the spool of @w's migration, in order,
 * into its target; then the thaw of a copy left held. The caller holds
 * the workload's operation.
 */
int forward_replay(struct workload *w, json_t **result, struct api_error *err);

/*
 * At start, after the workloads were adopted: every lease whose forwarder
 * still runs (its agent died during the lease) goes on, in a thread of
 * its own, from its record and its unacknowledged batches.
 */
void forward_resume_adopted(void);

#endif
