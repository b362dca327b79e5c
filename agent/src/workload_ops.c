// SPDX-License-Identifier: GPL-2.0
/*
 * One state-changing operation at a time per workload: a thaw must not slip
 * into a migration. Its own lock and condition: waiting for an operation
 * never holds up the table.
 */
#include <pthread.h>

#include "clock.h"
#include "workload_internal.h"

static pthread_mutex_t ops_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t op_ended;
static pthread_once_t ops_once = PTHREAD_ONCE_INIT;

static void ops_init(void)
{
	clock_cond_init(&op_ended);
}

int workload_begin_op(struct workload *w, unsigned int wait_ms,
		      struct api_error *err)
{
	struct timespec until;
	bool taken;

	pthread_once(&ops_once, ops_init);
	clock_mono_after(&until, wait_ms);
	pthread_mutex_lock(&ops_lock);
	while (w->busy && wait_ms &&
	       pthread_cond_timedwait(&op_ended, &ops_lock, &until) == 0)
		;
	taken = w->busy;
	w->busy = true;
	pthread_mutex_unlock(&ops_lock);
	if (taken)
		return api_error_set(err, 409, "workload_busy",
				     "%s: another operation is in progress", w->id);
	return 0;
}

void workload_end_op(struct workload *w)
{
	pthread_once(&ops_once, ops_init);
	pthread_mutex_lock(&ops_lock);
	w->busy = false;
	pthread_cond_broadcast(&op_ended);
	pthread_mutex_unlock(&ops_lock);
}
