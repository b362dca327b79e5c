// SPDX-License-Identifier: GPL-2.0
/*
 * siginfo codec, one case per layout. Records are built through glibc's
 * siginfo_t accessors (si_pid, si_timerid, si_band, ...), not through the
 * codec's own offsets, so a wrong offset in the codec shows up here.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "siginfo_json.h"
#include "tap.h"

static json_t *decode(const siginfo_t *si)
{
	uint8_t raw[SI_MAX_SIZE];

	memcpy(raw, si, sizeof(raw));
	return siginfo_to_json(raw, SIGINFO_ABI_64);
}

static siginfo_t blank(int signo, int code)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = signo;
	si.si_code = code;
	return si;
}

static json_int_t num(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "(none)";
}

static bool has(json_t *o, const char *key)
{
	return json_object_get(o, key) != NULL;
}

static void test_kill(void)
{
	siginfo_t si = blank(SIGUSR1, SI_USER);
	json_t *o;

	si.si_pid = 4242;
	si.si_uid = 1000;
	o = decode(&si);
	ok(o && !strcmp(str(o, "layout"), "kill"), "SI_USER decodes as kill");
	ok(!strcmp(str(o, "signal"), "SIGUSR1") && !strcmp(str(o, "code_name"), "SI_USER"),
	   "kill: signal and code names");
	ok(num(o, "pid") == 4242 && num(o, "uid") == 1000, "kill: pid and uid");
	ok(!has(o, "value") && !has(o, "timerid") && !has(o, "addr"),
	   "kill: no fields of other layouts");
	json_decref(o);

	si = blank(SIGTERM, 0x80);
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "kill") && !strcmp(str(o, "code_name"), "SI_KERNEL"),
	   "SI_KERNEL decodes as kill");
	json_decref(o);
}

static void test_rt(void)
{
	siginfo_t si = blank(SIGRTMIN + 3, SI_QUEUE);
	json_t *o;

	si.si_pid = 77;
	si.si_uid = 5;
	si.si_value.sival_ptr = (void *)0x0000123456789abcULL;
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "rt") && !strcmp(str(o, "code_name"), "SI_QUEUE"),
	   "SI_QUEUE decodes as rt");
	ok(!strcmp(str(o, "signal"), "SIGRTMIN+3"), "rt: named SIGRTMIN+3 (%s)",
	   str(o, "signal"));
	ok(num(o, "pid") == 77 && num(o, "uid") == 5 && num(o, "value") == 0x123456789abcLL,
	   "rt: pid, uid, value");
	ok(num(o, "value_int") == (int32_t)0x56789abc, "rt: value_int is the low int");
	json_decref(o);

	si = blank(SIGRTMIN, SI_TKILL);
	si.si_pid = 3;
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "rt") && !strcmp(str(o, "code_name"), "SI_TKILL") &&
	   num(o, "pid") == 3, "SI_TKILL decodes as rt like the kernel");
	json_decref(o);

	si = blank(SIGRTMAX, SI_MESGQ);
	si.si_value.sival_int = -5;
	o = decode(&si);
	ok(!strcmp(str(o, "code_name"), "SI_MESGQ") && num(o, "value_int") == -5 &&
	   !strcmp(str(o, "signal"), "SIGRTMAX"), "SI_MESGQ: rt with an int value");
	json_decref(o);

	si = blank(SIGUSR2, SI_QUEUE);
	si.si_value.sival_ptr = (void *)0xffffffffffffff00ULL;
	o = decode(&si);
	ok(!strcmp(str(o, "value"), "0xffffffffffffff00"),
	   "rt: a value above 2^63 is shown in hex (%s)", str(o, "value"));
	json_decref(o);
}

static void test_timer(void)
{
	siginfo_t si = blank(SIGALRM, SI_TIMER);
	json_t *o;

	si.si_timerid = 7;
	si.si_overrun = 3;
	si.si_value.sival_int = 99;
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "timer"), "SI_TIMER decodes as timer");
	ok(num(o, "timerid") == 7 && num(o, "overrun") == 3 && num(o, "value") == 99,
	   "timer: timerid, overrun, value");
	ok(!has(o, "pid") && !has(o, "uid"), "timer: no pid/uid");
	json_decref(o);
}

static void test_chld(void)
{
	siginfo_t si = blank(SIGCHLD, CLD_EXITED);
	json_t *o;

	si.si_pid = 900;
	si.si_uid = 0;
	si.si_status = 42;
	si.si_utime = 12345;
	si.si_stime = 678;
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "chld") && !strcmp(str(o, "code_name"), "CLD_EXITED"),
	   "CLD_EXITED decodes as chld");
	ok(num(o, "pid") == 900 && num(o, "status") == 42 && num(o, "utime") == 12345 &&
	   num(o, "stime") == 678, "chld: pid, status, utime, stime");
	json_decref(o);

	si = blank(SIGCHLD, SI_USER);
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "kill"), "kill(SIGCHLD) is a kill layout, not chld");
	json_decref(o);
}

static void test_poll(void)
{
	siginfo_t si = blank(SIGIO, POLL_IN);
	json_t *o;

	si.si_band = 0x41;
	si.si_fd = 5;
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "poll") && !strcmp(str(o, "code_name"), "POLL_IN"),
	   "POLL_IN decodes as poll");
	ok(num(o, "band") == 0x41 && num(o, "fd") == 5, "poll: band and fd");
	ok(!has(o, "pid"), "poll: no pid");
	json_decref(o);

	si = blank(SIGRTMIN + 1, SI_SIGIO);
	si.si_fd = 9;
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "poll") && num(o, "fd") == 9,
	   "SI_SIGIO with an F_SETSIG signal decodes as poll");
	json_decref(o);

	si = blank(SIGUSR1, 3);
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "poll"),
	   "a small positive code on an unfiltered signal is poll (kernel rule)");
	json_decref(o);

	si = blank(SIGUSR1, 0x7f);
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "kill") && json_is_null(json_object_get(o, "code_name")),
	   "an unknown positive code is kill with code_name null");
	json_decref(o);
}

static void test_fault(void)
{
	siginfo_t si = blank(SIGSEGV, SEGV_MAPERR);
	json_t *o;

	si.si_addr = (void *)0xdeadbeef;
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "fault") && !strcmp(str(o, "addr"), "0xdeadbeef"),
	   "SEGV_MAPERR: fault with addr");
	ok(!has(o, "lower") && !has(o, "pkey") && !has(o, "pid"), "fault: addr only");
	json_decref(o);

	si = blank(SIGSEGV, SEGV_BNDERR);
	si.si_addr = (void *)0x1000;
	si.si_lower = (void *)0x2000;
	si.si_upper = (void *)0x3000;
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "fault_bnderr") && !strcmp(str(o, "lower"), "0x2000") &&
	   !strcmp(str(o, "upper"), "0x3000"), "SEGV_BNDERR: lower and upper");
	json_decref(o);

	si = blank(SIGSEGV, SEGV_PKUERR);
	si.si_pkey = 6;
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "fault_pkuerr") && num(o, "pkey") == 6,
	   "SEGV_PKUERR: pkey");
	json_decref(o);

	si = blank(SIGBUS, BUS_MCEERR_AR);
	si.si_addr_lsb = 12;
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "fault_mceerr") && num(o, "addr_lsb") == 12,
	   "BUS_MCEERR_AR: addr_lsb");
	json_decref(o);

	si = blank(SIGTRAP, 6);	/* TRAP_PERF */
	si.si_addr = (void *)0x400000;
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "fault_perf_event") && has(o, "perf_type") &&
	   !strcmp(str(o, "code_name"), "TRAP_PERF"), "TRAP_PERF: perf fields");
	json_decref(o);

	si = blank(SIGFPE, FPE_INTDIV);
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "fault") && !strcmp(str(o, "code_name"), "FPE_INTDIV"),
	   "FPE_INTDIV: fault (no trapno on x86)");
	json_decref(o);

	si = blank(SIGILL, ILL_ILLOPC);
	o = decode(&si);
	ok(!strcmp(str(o, "code_name"), "ILL_ILLOPC"), "ILL_ILLOPC named");
	json_decref(o);
}

static void test_sys(void)
{
	siginfo_t si = blank(SIGSYS, 1);	/* SYS_SECCOMP */
	json_t *o;

	si.si_call_addr = (void *)0x7fff0000;
	si.si_syscall = 231;
	si.si_arch = 0xc000003e;
	o = decode(&si);
	ok(!strcmp(str(o, "layout"), "sys") && !strcmp(str(o, "code_name"), "SYS_SECCOMP"),
	   "SYS_SECCOMP decodes as sys");
	ok(!strcmp(str(o, "call_addr"), "0x7fff0000") && num(o, "syscall") == 231 &&
	   num(o, "arch") == 0xc000003e, "sys: call_addr, syscall, arch");
	json_decref(o);
}

static void put32(uint8_t *raw, unsigned int off, uint32_t v)
{
	memcpy(raw + off, &v, sizeof(v));
}

static void test_compat32(void)
{
	uint8_t raw[SI_MAX_SIZE] = { 0 };
	json_t *o;

	put32(raw, 0, SIGCHLD);
	put32(raw, 8, CLD_KILLED);
	put32(raw, 12, 321);	/* pid */
	put32(raw, 16, 7);	/* uid */
	put32(raw, 20, 9);	/* status */
	put32(raw, 24, 100);	/* utime */
	put32(raw, 28, 200);	/* stime */
	o = siginfo_to_json(raw, SIGINFO_ABI_32);
	ok(num(o, "pid") == 321 && num(o, "uid") == 7 && num(o, "status") == 9 &&
	   num(o, "utime") == 100 && num(o, "stime") == 200,
	   "i386 compat layout: chld fields at 32-bit offsets");
	json_decref(o);

	memset(raw, 0, sizeof(raw));
	put32(raw, 0, SIGRTMIN);
	put32(raw, 8, (uint32_t)SI_TIMER);
	put32(raw, 12, 4);	/* timerid */
	put32(raw, 16, 2);	/* overrun */
	put32(raw, 20, 0xfffffffe);	/* sival_ptr, 32-bit */
	o = siginfo_to_json(raw, SIGINFO_ABI_32);
	ok(num(o, "timerid") == 4 && num(o, "overrun") == 2 && num(o, "value") == 0xfffffffe,
	   "i386 compat layout: timer value is a 32-bit word");
	json_decref(o);
}

static void test_names_and_raw(void)
{
	uint8_t raw[SI_MAX_SIZE];
	char name[24], hex[2 * SI_MAX_SIZE + 1];
	unsigned int i;
	json_t *o;

	signal_name(32, name, sizeof(name));
	ok(!strcmp(name, "SIG32"), "kernel signal 32 (glibc-reserved) is SIG32");
	signal_name(SIGRTMIN + 1, name, sizeof(name));
	ok(!strcmp(name, "SIGRTMIN+1"), "SIGRTMIN+1 named");
	signal_name(99, name, sizeof(name));
	ok(!strcmp(name, "SIG99"), "out-of-range signal named SIG99");
	ok(si_code_name(SIGSEGV, 42) == NULL, "unknown SIGSEGV code has no name");
	ok(!strcmp(si_code_name(SIGCHLD, CLD_CONTINUED), "CLD_CONTINUED"), "CLD_CONTINUED");

	for (i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(i * 7 + 1);
	o = siginfo_to_json(raw, SIGINFO_ABI_64);
	hex_encode(raw, sizeof(raw), hex);
	ok(o && strlen(str(o, "raw")) == 256 && !strcmp(str(o, "raw"), hex),
	   "raw: all 128 bytes in hex");
	json_decref(o);
	ok(siginfo_to_json(raw, (enum siginfo_abi)7) == NULL, "unknown ABI refused");
}

/* Every (signo, code) pair decodes to valid JSON without touching past 128 bytes. */
static void test_exhaustive(void)
{
	uint8_t *raw = malloc(SI_MAX_SIZE);	/* ASan catches overreads */
	int signo, code, bad = 0;
	json_t *o;
	char *text;

	for (signo = -1; signo <= 66; signo++) {
		for (code = -70; code <= 0x90; code++) {
			memset(raw, 0xa5, SI_MAX_SIZE);
			memcpy(raw, &signo, 4);
			memcpy(raw + 8, &code, 4);
			o = siginfo_to_json(raw, (signo & 1) ? SIGINFO_ABI_32 :
					    SIGINFO_ABI_64);
			text = o ? json_dumps(o, 0) : NULL;
			bad += !text;
			free(text);
			json_decref(o);
		}
	}
	ok(bad == 0, "every signo x si_code decodes (%d failures)", bad);
	free(raw);
}

int main(void)
{
	test_kill();
	test_rt();
	test_timer();
	test_chld();
	test_poll();
	test_fault();
	test_sys();
	test_compat32();
	test_names_and_raw();
	test_exhaustive();
	return tap_done();
}
