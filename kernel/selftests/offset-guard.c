// SPDX-License-Identifier: GPL-2.0
/*
 * Compiled, never run, by check-offset-guard.sh: a pread() at the shared
 * queue offset must not compile where off_t is 32 bits, and one at the
 * per-thread offset (-DPER_THREAD_ONLY) compiles everywhere.
 */
#include <unistd.h>

#include <linux/signalfd.h>

#define SI_MAX_SIZE	128

/* A position known only at run time: no constant-overflow warning. */
int main(int argc, char **argv)
{
	char rec[SI_MAX_SIZE];

	(void)argv;
#ifdef PER_THREAD_ONLY
	return pread(0, rec, sizeof(rec), SFD_PER_THREAD_QUEUE_OFFSET + argc) < 0;
#else
	return pread(0, rec, sizeof(rec), SFD_SHARED_QUEUE_OFFSET + argc) < 0;
#endif
}
