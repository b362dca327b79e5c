// SPDX-License-Identifier: GPL-2.0
/*
 * Metrics live in small fixed tables under one mutex: label sets are
 * bounded (routes are the route table's patterns, never raw paths), so a
 * client cannot grow the agent's memory by inventing URLs.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "metrics.h"
#include "workload.h"

#define MAX_REQUEST_SERIES	128
#define MAX_RESULT_SERIES	8
#define N_BUCKETS		12

static const double bucket_bounds[N_BUCKETS] = {
	0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

struct histogram {
	uint64_t buckets[N_BUCKETS];
	uint64_t count;
	double sum;
};

struct request_series {
	const char *route;	/* static route pattern */
	char method[8];
	unsigned int status;
	uint64_t count;
};

struct result_series {
	const char *result;	/* static */
	uint64_t count;
};

static const char *const phase_names[PHASE_COUNT] = {
	[PHASE_FREEZE] = "freeze", [PHASE_DUMP] = "dump",
	[PHASE_TRANSFER] = "transfer", [PHASE_RESTORE] = "restore",
	[PHASE_COMMIT] = "commit", [PHASE_RESUME] = "resume",
	[PHASE_DOWNTIME] = "downtime",
};

static struct {
	pthread_mutex_t lock;
	struct request_series requests[MAX_REQUEST_SERIES];
	unsigned int nrequests;
	uint64_t requests_dropped;
	struct histogram request_seconds;
	struct result_series migrations[MAX_RESULT_SERIES];
	struct result_series restores[MAX_RESULT_SERIES];
	struct histogram phases[PHASE_COUNT];
	uint64_t signals_dumped;
	uint64_t signals_requeued;
	uint64_t signals_carried;
	uint64_t signals_forwarded;
	uint64_t signals_spooled;
} m = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void observe(struct histogram *h, double v)
{
	unsigned int i;

	for (i = 0; i < N_BUCKETS; i++)
		if (v <= bucket_bounds[i])
			h->buckets[i]++;
	h->count++;
	h->sum += v;
}

void metrics_request(const char *route, const char *method,
		     unsigned int status, double seconds)
{
	struct request_series *s = NULL;
	unsigned int i;

	pthread_mutex_lock(&m.lock);
	observe(&m.request_seconds, seconds);
	for (i = 0; i < m.nrequests && !s; i++)
		if (m.requests[i].route == route && m.requests[i].status == status &&
		    strcmp(m.requests[i].method, method) == 0)
			s = &m.requests[i];
	if (!s && m.nrequests < MAX_REQUEST_SERIES) {
		s = &m.requests[m.nrequests++];
		s->route = route;
		snprintf(s->method, sizeof(s->method), "%s", method);
		s->status = status;
	}
	if (s)
		s->count++;
	else
		m.requests_dropped++;
	pthread_mutex_unlock(&m.lock);
}

static void count_result(struct result_series *table, const char *result)
{
	unsigned int i;

	pthread_mutex_lock(&m.lock);
	for (i = 0; i < MAX_RESULT_SERIES; i++) {
		if (!table[i].result)
			table[i].result = result;
		if (strcmp(table[i].result, result) == 0) {
			table[i].count++;
			break;
		}
	}
	pthread_mutex_unlock(&m.lock);
}

void metrics_migration(const char *result)
{
	count_result(m.migrations, result);
}

void metrics_restore(const char *result)
{
	count_result(m.restores, result);
}

void metrics_phase(enum migration_phase phase, double seconds)
{
	pthread_mutex_lock(&m.lock);
	observe(&m.phases[phase], seconds);
	pthread_mutex_unlock(&m.lock);
}

static void add_count(uint64_t *counter, uint64_t n)
{
	pthread_mutex_lock(&m.lock);
	*counter += n;
	pthread_mutex_unlock(&m.lock);
}

void metrics_signals_dumped(uint64_t n)
{
	add_count(&m.signals_dumped, n);
}

void metrics_signals_requeued(uint64_t n)
{
	add_count(&m.signals_requeued, n);
}

void metrics_signals_carried(uint64_t n)
{
	add_count(&m.signals_carried, n);
}

void metrics_signals_forwarded(uint64_t n)
{
	add_count(&m.signals_forwarded, n);
}

void metrics_signals_spooled(uint64_t n)
{
	add_count(&m.signals_spooled, n);
}

static void render_histogram(FILE *f, const char *name, const char *labels,
			     const struct histogram *h)
{
	const char *sep = labels[0] ? "," : "";
	unsigned int i;
	char braced[64] = "";

	for (i = 0; i < N_BUCKETS; i++)
		fprintf(f, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep,
			bucket_bounds[i], (unsigned long long)h->buckets[i]);
	fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
		(unsigned long long)h->count);

	if (labels[0])
		snprintf(braced, sizeof(braced), "{%s}", labels);
	fprintf(f, "%s_sum%s %.6f\n%s_count%s %llu\n", name, braced, h->sum,
		name, braced, (unsigned long long)h->count);
}

static void render_results(FILE *f, const char *name, const char *help,
			   const struct result_series *table)
{
	unsigned int i;

	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (i = 0; i < MAX_RESULT_SERIES && table[i].result; i++)
		fprintf(f, "%s{result=\"%s\"} %llu\n", name, table[i].result,
			(unsigned long long)table[i].count);
}

static void render_requests(FILE *f)
{
	unsigned int i;

	fputs("# HELP sigmig_agent_http_requests_total HTTP requests by route, method and status.\n"
	      "# TYPE sigmig_agent_http_requests_total counter\n", f);
	for (i = 0; i < m.nrequests; i++)
		fprintf(f, "sigmig_agent_http_requests_total{route=\"%s\",method=\"%s\",status=\"%u\"} %llu\n",
			m.requests[i].route, m.requests[i].method,
			m.requests[i].status,
			(unsigned long long)m.requests[i].count);
	fputs("# HELP sigmig_agent_http_request_duration_seconds Time to answer a request.\n"
	      "# TYPE sigmig_agent_http_request_duration_seconds histogram\n", f);
	render_histogram(f, "sigmig_agent_http_request_duration_seconds", "",
			 &m.request_seconds);
}

static void render_phases(FILE *f)
{
	char labels[32];
	unsigned int i;

	fputs("# HELP sigmig_agent_migration_phase_seconds Duration of each migration phase (downtime: freeze to commit).\n"
	      "# TYPE sigmig_agent_migration_phase_seconds histogram\n", f);
	for (i = 0; i < PHASE_COUNT; i++) {
		snprintf(labels, sizeof(labels), "phase=\"%s\"", phase_names[i]);
		render_histogram(f, "sigmig_agent_migration_phase_seconds",
				 labels, &m.phases[i]);
	}
}

static void render_gauges(FILE *f)
{
	unsigned int running, exited;

	workloads_count(&running, &exited);
	fprintf(f, "# HELP sigmig_agent_info Agent version.\n"
		"# TYPE sigmig_agent_info gauge\n"
		"sigmig_agent_info{version=\"%s\"} 1\n"
		"# HELP sigmig_agent_workloads Tracked workloads by process state.\n"
		"# TYPE sigmig_agent_workloads gauge\n"
		"sigmig_agent_workloads{state=\"alive\"} %u\n"
		"sigmig_agent_workloads{state=\"exited\"} %u\n",
		AGENT_VERSION, running, exited);
}

char *metrics_render(size_t *len)
{
	char *buf = NULL;
	FILE *f;

	f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	render_gauges(f);
	pthread_mutex_lock(&m.lock);
	render_requests(f);
	render_results(f, "sigmig_agent_migrations_total",
		       "Migrations by result.", m.migrations);
	render_results(f, "sigmig_agent_restores_total",
		       "Restores by result.", m.restores);
	fprintf(f, "# HELP sigmig_agent_signals_dumped_total Pending signals read into images.\n"
		"# TYPE sigmig_agent_signals_dumped_total counter\n"
		"sigmig_agent_signals_dumped_total %llu\n"
		"# HELP sigmig_agent_signals_requeued_total Pending signals requeued by restores.\n"
		"# TYPE sigmig_agent_signals_requeued_total counter\n"
		"sigmig_agent_signals_requeued_total %llu\n"
		"# HELP sigmig_agent_signals_carried_total Signals that reached a migrating original after its dump, carried to the target at commit.\n"
		"# TYPE sigmig_agent_signals_carried_total counter\n"
		"sigmig_agent_signals_carried_total %llu\n"
		"# HELP sigmig_agent_signals_forwarded_total Signals that reached a forwarding original after the cutover and the target acknowledged.\n"
		"# TYPE sigmig_agent_signals_forwarded_total counter\n"
		"sigmig_agent_signals_forwarded_total %llu\n"
		"# HELP sigmig_agent_signals_spooled_total Signals kept in a spool on the source because the target could not take them.\n"
		"# TYPE sigmig_agent_signals_spooled_total counter\n"
		"sigmig_agent_signals_spooled_total %llu\n",
		(unsigned long long)m.signals_dumped,
		(unsigned long long)m.signals_requeued,
		(unsigned long long)m.signals_carried,
		(unsigned long long)m.signals_forwarded,
		(unsigned long long)m.signals_spooled);
	render_phases(f);
	pthread_mutex_unlock(&m.lock);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}
