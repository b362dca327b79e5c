/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The handler registry: a name per signal handler, so that a disposition
 * can be dumped on one host and reinstalled on another (same binary,
 * different addresses). Append-only, and readers take no lock: the
 * control thread looks names up while application threads, maybe parked
 * in the middle of registering one, cannot be waited for.
 */
#ifndef SIGMIG_HANDLERS_H
#define SIGMIG_HANDLERS_H

#include <signal.h>

typedef void (*sigmig_handler_t)(int, siginfo_t *, void *);

/* 0, -EINVAL, -EEXIST (name or function taken otherwise), -ENOSPC. */
int sigmig_handlers_add(const char *name, sigmig_handler_t fn);
/* NULL when not registered. */
const char *sigmig_handler_name(sigmig_handler_t fn);
sigmig_handler_t sigmig_handler_fn(const char *name);

#endif /* SIGMIG_HANDLERS_H */
