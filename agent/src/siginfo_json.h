/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Decode a raw 128-byte siginfo_t (as SFD_RAW returns it) into JSON: the
 * signal and si_code names and exactly the fields of the union member that
 * the kernel's siginfo_layout() selects for that (signo, si_code) pair.
 */
#ifndef AGENT_SIGINFO_JSON_H
#define AGENT_SIGINFO_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <sigmig/sfd.h>	/* SI_MAX_SIZE */

/* Which siginfo ABI the bytes follow: native x86_64 or the i386 compat one. */
enum siginfo_abi {
	SIGINFO_ABI_64 = 0,
	SIGINFO_ABI_32,
};

/* Mirrors enum siginfo_layout in include/linux/signal.h. */
enum siginfo_layout {
	SIL_KILL,
	SIL_TIMER,
	SIL_POLL,
	SIL_FAULT,
	SIL_FAULT_TRAPNO,
	SIL_FAULT_MCEERR,
	SIL_FAULT_BNDERR,
	SIL_FAULT_PKUERR,
	SIL_FAULT_PERF_EVENT,
	SIL_CHLD,
	SIL_RT,
	SIL_SYS,
};

enum siginfo_layout siginfo_layout_of(int signo, int code);
const char *siginfo_layout_name(enum siginfo_layout layout);

/* "SIGUSR1", "SIGRTMIN+3", or "SIG<n>" for numbers without a name. */
void signal_name(int signo, char *buf, size_t len);

/* "SI_QUEUE", "CLD_EXITED", ...; NULL when the code has no name. */
const char *si_code_name(int signo, int code);

/* Lower-case hex of @len bytes into @out (2 * len + 1 bytes). */
void hex_encode(const uint8_t *in, size_t len, char *out);

/* New JSON object, or NULL on allocation failure. Never reads past 128 bytes. */
json_t *siginfo_to_json(const uint8_t raw[SI_MAX_SIZE],
			enum siginfo_abi abi);

#endif
