/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The signalfd pending-signal interface as userspace sees it: the series'
 * uapi additions and the two sizes every caller needs, each under the one
 * name the kernel's uapi gives it. Included by the selftests, the stress
 * programs, the bench, libsigmig and the agent; nothing else defines them.
 */
#ifndef SIGMIG_SFD_H
#define SIGMIG_SFD_H

#include "../uapi/sigmig/signalfd.h"

/*
 * One siginfo_t, thus one SFD_RAW record (<asm-generic/siginfo.h>, which
 * cannot be included beside glibc's <signal.h>).
 */
#ifndef SI_MAX_SIZE
#define SI_MAX_SIZE	128
#endif

/*
 * signalfd4()'s sizemask: the kernel's sigset_t, _NSIG (64) bits on every
 * architecture the series runs on, i386 compat included. glibc's sigset_t
 * is 1024 bits; the kernel reads only the first 8 bytes of it.
 */
#define KERNEL_SIGSET_SIZE	8

#endif /* SIGMIG_SFD_H */
