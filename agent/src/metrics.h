/* SPDX-License-Identifier: GPL-2.0 */
/* Counters and histograms served as Prometheus text on GET /metrics. */
#ifndef AGENT_METRICS_H
#define AGENT_METRICS_H

#include <stddef.h>
#include <stdint.h>

enum migration_phase {
	PHASE_FREEZE,
	PHASE_DUMP,
	PHASE_TRANSFER,
	PHASE_RESTORE,
	PHASE_COMMIT,
	PHASE_RESUME,
	PHASE_DOWNTIME,
	PHASE_COUNT,
};

void metrics_request(const char *route, const char *method,
		     unsigned int status, double seconds);
void metrics_migration(const char *result);
void metrics_phase(enum migration_phase phase, double seconds);
void metrics_signals_dumped(uint64_t n);
void metrics_signals_requeued(uint64_t n);
void metrics_signals_carried(uint64_t n);
void metrics_signals_forwarded(uint64_t n);
void metrics_signals_spooled(uint64_t n);
void metrics_restore(const char *result);

/* malloc()ed text/plain; version=0.0.4 page, NULL on allocation failure. */
char *metrics_render(size_t *len);

#endif
