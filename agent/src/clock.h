/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's one clock: CLOCK_MONOTONIC for every timeout, deadline and
 * duration (wall-clock time is only ever displayed, or compared with the
 * stamps other processes of the same host log).
 */
#ifndef AGENT_CLOCK_H
#define AGENT_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

int64_t clock_mono_ms(void);
double clock_mono_s(void);
/* CLOCK_REALTIME in ns: a stamp to compare with the senders' logs. */
int64_t clock_realtime_ns(void);
void clock_sleep_ms(unsigned int ms);
/*
 * @ms from now, as pthread_cond_timedwait() wants it for a condition
 * variable created with clock_cond_init() (a monotonic one: a clock step
 * neither cuts a wait short nor makes it endless).
 */
void clock_mono_after(struct timespec *ts, unsigned int ms);
int clock_cond_init(pthread_cond_t *cond);

#endif
