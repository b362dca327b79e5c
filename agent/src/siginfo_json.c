// SPDX-License-Identifier: GPL-2.0
/*
 * siginfo_t -> JSON. The layout choice follows the kernel's
 * siginfo_layout() (kernel/signal.c) so that a record is shown exactly as
 * copy_siginfo_to_user() would have interpreted it; offsets are those of
 * the x86_64 siginfo_t and of the i386 compat_siginfo_t. Only the fields
 * of the selected layout are emitted: the rest of the union is noise.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "siginfo_json.h"

/* Kernel values, independent of the libc the agent was built with. */
#define K_SI_USER	0
#define K_SI_KERNEL	0x80
#define K_SI_TIMER	(-2)
#define K_SI_SIGIO	(-5)
#define K_NSIGPOLL	6
#define K_SIGRTMIN	32

/* Offsets of the __sifields union members for one ABI. */
struct siginfo_offsets {
	unsigned int fields;	/* start of the union */
	unsigned int ptr_size;	/* void *, long, clock_t */
};

static const struct siginfo_offsets abi_offsets[] = {
	[SIGINFO_ABI_64] = { .fields = 16, .ptr_size = 8 },
	[SIGINFO_ABI_32] = { .fields = 12, .ptr_size = 4 },
};

static const char *const layout_names[] = {
	[SIL_KILL] = "kill",
	[SIL_TIMER] = "timer",
	[SIL_POLL] = "poll",
	[SIL_FAULT] = "fault",
	[SIL_FAULT_TRAPNO] = "fault_trapno",
	[SIL_FAULT_MCEERR] = "fault_mceerr",
	[SIL_FAULT_BNDERR] = "fault_bnderr",
	[SIL_FAULT_PKUERR] = "fault_pkuerr",
	[SIL_FAULT_PERF_EVENT] = "fault_perf_event",
	[SIL_CHLD] = "chld",
	[SIL_RT] = "rt",
	[SIL_SYS] = "sys",
};

const char *siginfo_layout_name(enum siginfo_layout layout)
{
	return layout_names[layout];
}

/* Kernel signal numbers whose si_code > 0 selects a specific layout. */
struct code_filter {
	int limit;
	enum siginfo_layout layout;
};

static const struct code_filter code_filters[] = {
	[SIGILL] = { 11, SIL_FAULT },
	[SIGFPE] = { 15, SIL_FAULT },
	[SIGSEGV] = { 9, SIL_FAULT },
	[SIGBUS] = { 5, SIL_FAULT },
	[SIGTRAP] = { 6, SIL_FAULT },
	[SIGCHLD] = { 6, SIL_CHLD },
	[SIGSYS] = { 2, SIL_SYS },
};

#define N_FILTERS ((int)(sizeof(code_filters) / sizeof(code_filters[0])))

static enum siginfo_layout fault_exception(int signo, int code,
					   enum siginfo_layout layout)
{
	if (signo == SIGBUS && (code == 4 || code == 5))	/* BUS_MCEERR_* */
		return SIL_FAULT_MCEERR;
	if (signo == SIGSEGV && code == 3)			/* SEGV_BNDERR */
		return SIL_FAULT_BNDERR;
	if (signo == SIGSEGV && code == 4)			/* SEGV_PKUERR */
		return SIL_FAULT_PKUERR;
	if (signo == SIGTRAP && code == 6)			/* TRAP_PERF */
		return SIL_FAULT_PERF_EVENT;
	return layout;
}

enum siginfo_layout siginfo_layout_of(int signo, int code)
{
	if (code > K_SI_USER && code < K_SI_KERNEL) {
		if (signo > 0 && signo < N_FILTERS && code_filters[signo].limit &&
		    code <= code_filters[signo].limit)
			return fault_exception(signo, code,
					       code_filters[signo].layout);
		if (code <= K_NSIGPOLL)
			return SIL_POLL;
		return SIL_KILL;
	}
	if (code == K_SI_TIMER)
		return SIL_TIMER;
	if (code == K_SI_SIGIO)
		return SIL_POLL;
	if (code < 0)
		return SIL_RT;
	return SIL_KILL;
}

static const char *const std_signal_names[] = {
	[SIGHUP] = "SIGHUP", [SIGINT] = "SIGINT", [SIGQUIT] = "SIGQUIT",
	[SIGILL] = "SIGILL", [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
	[SIGBUS] = "SIGBUS", [SIGFPE] = "SIGFPE", [SIGKILL] = "SIGKILL",
	[SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
	[SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
	[SIGSTKFLT] = "SIGSTKFLT", [SIGCHLD] = "SIGCHLD", [SIGCONT] = "SIGCONT",
	[SIGSTOP] = "SIGSTOP", [SIGTSTP] = "SIGTSTP", [SIGTTIN] = "SIGTTIN",
	[SIGTTOU] = "SIGTTOU", [SIGURG] = "SIGURG", [SIGXCPU] = "SIGXCPU",
	[SIGXFSZ] = "SIGXFSZ", [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF",
	[SIGWINCH] = "SIGWINCH", [SIGIO] = "SIGIO", [SIGPWR] = "SIGPWR",
	[SIGSYS] = "SIGSYS",
};

/*
 * Real-time signals are named as glibc applications (and kill -l) know
 * them: glibc reserves kernel signals 32 and 33, so SIGRTMIN is 34.
 */
void signal_name(int signo, char *buf, size_t len)
{
	int rtmin = SIGRTMIN, rtmax = SIGRTMAX;

	if (signo > 0 && signo < K_SIGRTMIN && std_signal_names[signo])
		snprintf(buf, len, "%s", std_signal_names[signo]);
	else if (signo == rtmin)
		snprintf(buf, len, "SIGRTMIN");
	else if (signo == rtmax)
		snprintf(buf, len, "SIGRTMAX");
	else if (signo > rtmin && signo < rtmax)
		snprintf(buf, len, "SIGRTMIN+%d", signo - rtmin);
	else
		snprintf(buf, len, "SIG%d", signo);
}

struct code_name {
	int code;
	const char *name;
};

static const struct code_name generic_codes[] = {
	{ 0, "SI_USER" }, { 0x80, "SI_KERNEL" }, { -1, "SI_QUEUE" },
	{ -2, "SI_TIMER" }, { -3, "SI_MESGQ" }, { -4, "SI_ASYNCIO" },
	{ -5, "SI_SIGIO" }, { -6, "SI_TKILL" }, { -7, "SI_DETHREAD" },
	{ -60, "SI_ASYNCNL" },
};

static const char *const ill_codes[] = {
	NULL, "ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP",
	"ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK",
	"ILL_BADIADDR", "ILL_BREAK", "ILL_BNDMOD",
};

static const char *const fpe_codes[] = {
	NULL, "FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF",
	"FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB", "FPE_DECOVF",
	"FPE_DECDIV", "FPE_DECERR", "FPE_INVASC", "FPE_INVDEC", "FPE_FLTUNK",
	"FPE_CONDTRAP",
};

static const char *const segv_codes[] = {
	NULL, "SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR",
	"SEGV_ACCADI", "SEGV_ADIDERR", "SEGV_ADIPERR", "SEGV_MTEAERR",
	"SEGV_MTESERR", "SEGV_CPERR",
};

static const char *const bus_codes[] = {
	NULL, "BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR",
	"BUS_MCEERR_AO",
};

static const char *const trap_codes[] = {
	NULL, "TRAP_BRKPT", "TRAP_TRACE", "TRAP_BRANCH", "TRAP_HWBKPT",
	"TRAP_UNK", "TRAP_PERF",
};

static const char *const chld_codes[] = {
	NULL, "CLD_EXITED", "CLD_KILLED", "CLD_DUMPED", "CLD_TRAPPED",
	"CLD_STOPPED", "CLD_CONTINUED",
};

static const char *const poll_codes[] = {
	NULL, "POLL_IN", "POLL_OUT", "POLL_MSG", "POLL_ERR", "POLL_PRI",
	"POLL_HUP",
};

static const char *const sys_codes[] = {
	NULL, "SYS_SECCOMP", "SYS_USER_DISPATCH",
};

#define CODE_TABLE(t) { t, sizeof(t) / sizeof(t[0]) }

struct code_table {
	const char *const *names;
	int count;
};

static struct code_table positive_codes_of(int signo)
{
	switch (signo) {
	case SIGILL: return (struct code_table)CODE_TABLE(ill_codes);
	case SIGFPE: return (struct code_table)CODE_TABLE(fpe_codes);
	case SIGSEGV: return (struct code_table)CODE_TABLE(segv_codes);
	case SIGBUS: return (struct code_table)CODE_TABLE(bus_codes);
	case SIGTRAP: return (struct code_table)CODE_TABLE(trap_codes);
	case SIGCHLD: return (struct code_table)CODE_TABLE(chld_codes);
	case SIGSYS: return (struct code_table)CODE_TABLE(sys_codes);
	default: return (struct code_table)CODE_TABLE(poll_codes);
	}
}

const char *si_code_name(int signo, int code)
{
	struct code_table table;
	unsigned int i;

	for (i = 0; i < sizeof(generic_codes) / sizeof(generic_codes[0]); i++)
		if (generic_codes[i].code == code)
			return generic_codes[i].name;
	if (code <= 0 || code >= K_SI_KERNEL)
		return NULL;
	table = positive_codes_of(signo);
	if (code >= table.count)
		return NULL;
	return table.names[code];
}

void hex_encode(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xf];
	}
	out[2 * len] = '\0';
}

static int32_t get_s32(const uint8_t *raw, unsigned int off)
{
	int32_t v;

	memcpy(&v, raw + off, sizeof(v));
	return v;
}

static uint32_t get_u32(const uint8_t *raw, unsigned int off)
{
	uint32_t v;

	memcpy(&v, raw + off, sizeof(v));
	return v;
}

static int16_t get_s16(const uint8_t *raw, unsigned int off)
{
	int16_t v;

	memcpy(&v, raw + off, sizeof(v));
	return v;
}

/* An unsigned word of the ABI's pointer size (void *, unsigned long). */
static uint64_t get_uword(const uint8_t *raw, unsigned int off,
			  const struct siginfo_offsets *abi)
{
	uint64_t v = 0;

	if (abi->ptr_size == 4)
		return get_u32(raw, off);
	memcpy(&v, raw + off, sizeof(v));
	return v;
}

/* A signed word of the ABI's long size (long, clock_t). */
static int64_t get_sword(const uint8_t *raw, unsigned int off,
			 const struct siginfo_offsets *abi)
{
	int64_t v;

	if (abi->ptr_size == 4)
		return get_s32(raw, off);
	memcpy(&v, raw + off, sizeof(v));
	return v;
}

static int set_int(json_t *obj, const char *key, json_int_t v)
{
	return json_object_set_new(obj, key, json_integer(v));
}

/* Addresses are shown in hex: that is how every tool prints them. */
static int set_addr(json_t *obj, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_object_set_new(obj, key, json_string(buf));
}

/*
 * sigval is a union of int and pointer: show the word as an unsigned
 * integer (exact up to 2^63, else hex) and its int member separately.
 */
static int set_sigval(json_t *obj, const uint8_t *raw, unsigned int off,
		      const struct siginfo_offsets *abi)
{
	uint64_t word = get_uword(raw, off, abi);
	int err;

	if (word <= INT64_MAX)
		err = set_int(obj, "value", (json_int_t)word);
	else
		err = set_addr(obj, "value", word);
	return err | set_int(obj, "value_int", get_s32(raw, off));
}

static int put_kill(json_t *o, const uint8_t *raw,
		    const struct siginfo_offsets *abi)
{
	return set_int(o, "pid", get_s32(raw, abi->fields)) |
	       set_int(o, "uid", get_u32(raw, abi->fields + 4));
}

static int put_rt(json_t *o, const uint8_t *raw,
		  const struct siginfo_offsets *abi)
{
	return put_kill(o, raw, abi) |
	       set_sigval(o, raw, abi->fields + 8, abi);
}

static int put_timer(json_t *o, const uint8_t *raw,
		     const struct siginfo_offsets *abi)
{
	return set_int(o, "timerid", get_s32(raw, abi->fields)) |
	       set_int(o, "overrun", get_s32(raw, abi->fields + 4)) |
	       set_sigval(o, raw, abi->fields + 8, abi);
}

static int put_chld(json_t *o, const uint8_t *raw,
		    const struct siginfo_offsets *abi)
{
	unsigned int f = abi->fields;
	unsigned int times = f + 8 + abi->ptr_size;	/* after int status, aligned */

	return put_kill(o, raw, abi) |
	       set_int(o, "status", get_s32(raw, f + 8)) |
	       set_int(o, "utime", get_sword(raw, times, abi)) |
	       set_int(o, "stime", get_sword(raw, times + abi->ptr_size, abi));
}

static int put_poll(json_t *o, const uint8_t *raw,
		    const struct siginfo_offsets *abi)
{
	return set_int(o, "band", get_sword(raw, abi->fields, abi)) |
	       set_int(o, "fd", get_s32(raw, abi->fields + abi->ptr_size));
}

static int put_sys(json_t *o, const uint8_t *raw,
		   const struct siginfo_offsets *abi)
{
	unsigned int f = abi->fields;

	return set_addr(o, "call_addr", get_uword(raw, f, abi)) |
	       set_int(o, "syscall", get_s32(raw, f + abi->ptr_size)) |
	       set_int(o, "arch", get_u32(raw, f + abi->ptr_size + 4));
}

/* _sigfault: the address, then a union that starts one pointer later. */
static int put_fault(json_t *o, const uint8_t *raw, enum siginfo_layout layout,
		     const struct siginfo_offsets *abi)
{
	unsigned int u = abi->fields + abi->ptr_size;	/* the inner union */
	unsigned int p = abi->ptr_size;			/* __ADDR_BND_PKEY_PAD */
	int err = set_addr(o, "addr", get_uword(raw, abi->fields, abi));

	switch (layout) {
	case SIL_FAULT_TRAPNO:
		return err | set_int(o, "trapno", get_s32(raw, u));
	case SIL_FAULT_MCEERR:
		return err | set_int(o, "addr_lsb", get_s16(raw, u));
	case SIL_FAULT_BNDERR:
		return err | set_addr(o, "lower", get_uword(raw, u + p, abi)) |
		       set_addr(o, "upper", get_uword(raw, u + 2 * p, abi));
	case SIL_FAULT_PKUERR:
		return err | set_int(o, "pkey", get_u32(raw, u + p));
	case SIL_FAULT_PERF_EVENT:
		return err | set_addr(o, "perf_data", get_uword(raw, u, abi)) |
		       set_int(o, "perf_type", get_u32(raw, u + p)) |
		       set_int(o, "perf_flags", get_u32(raw, u + p + 4));
	default:
		return err;
	}
}

static int put_layout_fields(json_t *o, const uint8_t *raw,
			     enum siginfo_layout layout,
			     const struct siginfo_offsets *abi)
{
	switch (layout) {
	case SIL_KILL:
		return put_kill(o, raw, abi);
	case SIL_RT:
		return put_rt(o, raw, abi);
	case SIL_TIMER:
		return put_timer(o, raw, abi);
	case SIL_CHLD:
		return put_chld(o, raw, abi);
	case SIL_POLL:
		return put_poll(o, raw, abi);
	case SIL_SYS:
		return put_sys(o, raw, abi);
	default:
		return put_fault(o, raw, layout, abi);
	}
}

static int put_header(json_t *o, int signo, int code, int err,
		      enum siginfo_layout layout)
{
	const char *cname = si_code_name(signo, code);
	char sname[24];

	signal_name(signo, sname, sizeof(sname));
	return set_int(o, "signo", signo) |
	       json_object_set_new(o, "signal", json_string(sname)) |
	       set_int(o, "errno", err) |
	       set_int(o, "code", code) |
	       json_object_set_new(o, "code_name",
				   cname ? json_string(cname) : json_null()) |
	       json_object_set_new(o, "layout",
				   json_string(siginfo_layout_name(layout)));
}

json_t *siginfo_to_json(const uint8_t raw[SI_MAX_SIZE],
			enum siginfo_abi abi)
{
	const struct siginfo_offsets *offs;
	char hex[2 * SI_MAX_SIZE + 1];
	enum siginfo_layout layout;
	int signo, code, err;
	json_t *o;

	if (abi != SIGINFO_ABI_64 && abi != SIGINFO_ABI_32)
		return NULL;
	offs = &abi_offsets[abi];
	signo = get_s32(raw, 0);
	err = get_s32(raw, 4);
	code = get_s32(raw, 8);
	layout = siginfo_layout_of(signo, code);

	o = json_object();
	if (!o)
		return NULL;
	hex_encode(raw, SI_MAX_SIZE, hex);
	if (put_header(o, signo, code, err, layout) ||
	    put_layout_fields(o, raw, layout, offs) ||
	    json_object_set_new(o, "raw", json_string(hex))) {
		json_decref(o);
		return NULL;
	}
	return o;
}
