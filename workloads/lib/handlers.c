// SPDX-License-Identifier: GPL-2.0
/*
 * Handler registry. Writers serialise on a mutex and publish an entry by
 * bumping the count (release) after filling it; readers load the count
 * (acquire) and scan what it covers, which never changes again.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sigmig/image.h>
#include "handlers.h"

#define MAX_HANDLERS	128

static struct {
	pthread_mutex_t add_lock;
	_Atomic unsigned int count;
	struct {
		char name[SIGMIG_HANDLER_NAME_MAX];
		sigmig_handler_t fn;
	} entry[MAX_HANDLERS];
} registry = {
	.add_lock = PTHREAD_MUTEX_INITIALIZER,
};

static unsigned int published(void)
{
	return atomic_load_explicit(&registry.count, memory_order_acquire);
}

const char *sigmig_handler_name(sigmig_handler_t fn)
{
	unsigned int i, n = published();

	for (i = 0; i < n; i++)
		if (registry.entry[i].fn == fn)
			return registry.entry[i].name;
	return NULL;
}

sigmig_handler_t sigmig_handler_fn(const char *name)
{
	unsigned int i, n = published();

	for (i = 0; i < n; i++)
		if (!strcmp(registry.entry[i].name, name))
			return registry.entry[i].fn;
	return NULL;
}

/* With add_lock held. */
static int add_locked(const char *name, sigmig_handler_t fn)
{
	unsigned int n = published();
	const char *known = sigmig_handler_name(fn);

	if (known)
		return strcmp(known, name) ? -EEXIST : 0;
	if (sigmig_handler_fn(name))
		return -EEXIST;
	if (n == MAX_HANDLERS)
		return -ENOSPC;
	strcpy(registry.entry[n].name, name);
	registry.entry[n].fn = fn;
	atomic_store_explicit(&registry.count, n + 1, memory_order_release);
	return 0;
}

int sigmig_handlers_add(const char *name, sigmig_handler_t fn)
{
	int ret;

	if (!name || !fn || !name[0] || strlen(name) >= SIGMIG_HANDLER_NAME_MAX)
		return -EINVAL;
	pthread_mutex_lock(&registry.add_lock);
	ret = add_locked(name, fn);
	pthread_mutex_unlock(&registry.add_lock);
	return ret;
}
