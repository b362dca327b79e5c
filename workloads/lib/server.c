// SPDX-License-Identifier: GPL-2.0
/*
 * Control server: one thread accepts one request per connection, a line
 * "VERB\n", and answers one JSON line, followed by the image bytes for
 * DUMP and PEEK. Each verb runs under the control lock, so registration
 * never interleaves with it, and changes state only through the core's
 * transitions. See docs/control-protocol.md.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "core.h"
#include "dump.h"
#include "freeze.h"
#include "peek.h"
#include "restore.h"
#include "server.h"
#include "util.h"

#define REQUEST_TIMEOUT_MS	5000
#define REQUEST_MAX		400	/* "REQUEUE ", a state-directory path, a tag */
#define REQUEUE_TAG_MAX		80
#define ACCEPT_POLL_MS		200	/* how soon sigmig_server_stop() is noticed */
#define STATE_BIT(s)		(1u << (s))
#define ANY_STATE		(~0u)
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

static struct {
	char path[108];
	int listen_fd;
	pthread_t thread;
	int started;
	_Atomic int stopping;
	void (*commit_exit)(void);
	/*
	 * The tag of the last REQUEUE that succeeded, under the control lock:
	 * the agent names each forwarded batch, and one that restarts learns
	 * here whether the batch it was posting when it died went in.
	 */
	char requeue_tag[REQUEUE_TAG_MAX + 1];
} srv = {
	.listen_fd = -1,
};

/* ---- socket and reply helpers ---- */

static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n ? 0 : -ETIMEDOUT;
}

/* A client that stops reading stalls only this request, then it is dropped. */
static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void json_escape(char *out, size_t outlen, const char *in)
{
	size_t o = 0;

	for (; *in && o + 7 < outlen; in++) {
		unsigned char c = (unsigned char)*in;

		if (c == '"' || c == '\\')
			o += (size_t)snprintf(out + o, outlen - o, "\\%c", c);
		else if (c < 0x20)
			o += (size_t)snprintf(out + o, outlen - o, "\\u%04x", c);
		else
			out[o++] = (char)c;
	}
	out[o] = '\0';
}

static void reply_error(int fd, const char *code, const char *message)
{
	char esc[1200], line[1400];

	json_escape(esc, sizeof(esc), message);
	snprintf(line, sizeof(line), "{\"ok\":false,\"error\":\"%s\",\"message\":\"%s\"}\n",
		 code, esc);
	write_all(fd, line, strlen(line));
}

static void reply_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void reply_line(int fd, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	write_all(fd, line, strlen(line));
}

/* ---- verbs ---- */

static size_t status_threads(char *line, size_t cap)
{
	const char *sep = "";
	unsigned int i;
	size_t o = 0;

	for (i = 0; i < sigmig_nthreads(); i++) {
		struct rt_thread *t = sigmig_thread(i);

		if (!atomic_load(&t->registered))
			continue;
		o += (size_t)snprintf(line + o, cap - o, "%s{\"index\":%u,\"tid\":%d}",
				      sep, i, t->tid);
		sep = ",";
	}
	return o;
}

static size_t status_restore(char *line, size_t cap, const struct restore_status *st)
{
	char esc[512];
	size_t o;

	if (st->verified)
		o = (size_t)snprintf(line, cap,
				     ",\"restore\":{\"requeued\":%llu,\"verified\":true,\"restore_ns\":%llu,\"requeue\":\"%s\"}",
				     (unsigned long long)st->requeued,
				     (unsigned long long)st->restore_ns, st->requeue);
	else
		o = (size_t)snprintf(line, cap, ",\"restore\":null");
	if (!st->error)
		return o;
	json_escape(esc, sizeof(esc), st->error);
	return o + (size_t)snprintf(line + o, cap - o,
				    ",\"error\":\"restore_failed\",\"message\":\"%s\"", esc);
}

static void do_status(int fd, enum rt_state state, const char *arg)
{
	size_t cap = 1024 + (size_t)sigmig_nthreads() * 40, o;
	char *line = malloc(cap), esc[160];
	struct restore_status st;

	(void)arg;
	if (!line)
		return reply_error(fd, "internal", "out of memory");
	sigmig_restore_status(&st);
	json_escape(esc, sizeof(esc), sigmig_program());
	o = (size_t)snprintf(line, cap, "{\"ok\":true,\"state\":\"%s\",\"pid\":%d,\"program\":\"%s\",\"restored\":%s,\"threads\":[",
			     sigmig_state_name(state), getpid(), esc,
			     st.verified ? "true" : "false");
	o += status_threads(line + o, cap - o);
	o += (size_t)snprintf(line + o, cap - o, "]");
	o += status_restore(line + o, cap - o, &st);
	if (srv.requeue_tag[0])
		o += (size_t)snprintf(line + o, cap - o, ",\"requeue_tag\":\"%s\"",
				      srv.requeue_tag);
	snprintf(line + o, cap - o, "}\n");
	write_all(fd, line, strlen(line));
	free(line);
}

static int freeze_process(int fd, uint64_t *ns)
{
	char err[1024];
	int ret;

	ret = sigmig_freeze(ns, err, sizeof(err));
	if (ret) {
		reply_error(fd, "freeze_timeout", err);
		return ret;
	}
	/* a DUMP of an earlier freeze says nothing about this one */
	sigmig_dump_forget();
	return sigmig_transition(RT_RUNNING, RT_FROZEN);
}

/* Running again even when a thread was slow to leave: THAW was posted to all. */
static int thaw_process(void)
{
	int ret = sigmig_thaw();

	sigmig_dump_forget();
	sigmig_transition(RT_FROZEN, RT_RUNNING);
	return ret;
}

static void do_freeze(int fd, enum rt_state state, const char *arg)
{
	uint64_t ns = 0;

	(void)state;
	(void)arg;
	if (!freeze_process(fd, &ns))
		reply_line(fd, "{\"ok\":true,\"freeze_ns\":%llu}", (unsigned long long)ns);
}

static void do_thaw(int fd, enum rt_state state, const char *arg)
{
	(void)arg;
	if (state == RT_HELD && sigmig_restore_release())
		return reply_error(fd, "resume_failed", "resuming the restored threads failed");
	if (state == RT_FROZEN && thaw_process())
		return reply_error(fd, "thaw_timeout",
				   "a thread did not leave the freeze handler in time");
	reply_line(fd, "{\"ok\":true}");
}

static int to_client(void *arg, const uint8_t *p, size_t len)
{
	return write_all(*(int *)arg, p, len);
}

/*
 * The line goes out as soon as the queues are taken, and the image after
 * it as it is encoded: the reader can pass it on (the agent, to the
 * target) while the rest is still being made. The queues are kept for
 * the delta only when the whole image went out.
 */
static void dump_reply(int fd, int keep)
{
	uint64_t start = sigmig_now_ns();
	struct sigmig_dump d;
	char err[300];
	int ret;

	if (sigmig_dump_take(&d, err, sizeof(err))) {
		reply_error(fd, "dump_failed", err);
		return;
	}
	reply_line(fd, "{\"ok\":true,\"image_size\":%llu,\"signals\":%llu,\"dump_ns\":%llu}",
		   (unsigned long long)d.size, (unsigned long long)d.nsignals,
		   (unsigned long long)(sigmig_now_ns() - start));
	ret = sigmig_image_encode_to(&d.img, to_client, &fd);
	sigmig_dump_release(&d, keep && !ret);
}

static void do_dump(int fd, enum rt_state state, const char *arg)
{
	(void)state;
	(void)arg;
	dump_reply(fd, 1);
}

/* A running process is frozen for the peek and thawed after it. */
static void do_peek(int fd, enum rt_state state, const char *arg)
{
	uint64_t ns;

	(void)arg;
	if (state != RT_RUNNING)
		return dump_reply(fd, 0);
	if (freeze_process(fd, &ns))
		return;
	dump_reply(fd, 0);
	thaw_process();
}

static void commit_reply(int fd, const uint8_t *delta, size_t len,
			 const struct delta_counts *n)
{
	if (!delta)
		return reply_line(fd, "{\"ok\":true}");
	reply_line(fd, "{\"ok\":true,\"carried\":%llu,\"removed\":%llu,\"timers\":%llu,\"read_realtime_ns\":%llu,\"sealed\":%s,\"image_size\":%zu}",
		   (unsigned long long)n->carried, (unsigned long long)n->removed,
		   (unsigned long long)n->timers, (unsigned long long)n->read_ns,
		   n->sealed ? "true" : "false", len);
	write_all(fd, delta, len);
}

/*
 * What the queues gained since the DUMP (FROZEN) or since the last read
 * (FORWARDING). 0, -ENODATA when there is nothing to compare with (a held
 * copy, a freeze without a DUMP), or -errno with @err.
 */
static int arrivals(enum rt_state state, uint8_t **delta, size_t *len,
		    struct delta_counts *n, char *err, size_t errlen)
{
	if (state != RT_FROZEN && state != RT_FORWARDING)
		return -ENODATA;
	return sigmig_dump_delta(state == RT_FORWARDING, delta, len, n, err, errlen);
}

/*
 * The threads stay parked from the delta to the exit: what arrived since
 * the DUMP (or, forwarding, since the last DRAIN) leaves with the reply.
 * The process is sealed first, so that a send after that read fails with
 * ESRCH instead of being accepted and lost with the process; a kernel
 * without SFD_IOC_SEAL leaves that window open (docs/design.md, "What a
 * sender is promised").
 */
/* The library never ends the process itself: the program's hook does. */
static int can_end(int fd)
{
	if (srv.commit_exit)
		return 1;
	reply_error(fd, "not_supported",
		    "this program does not end on COMMIT (no commit_exit hook)");
	return 0;
}

static void do_commit(int fd, enum rt_state state, const char *arg)
{
	struct delta_counts n = { 0 };
	uint8_t *delta = NULL;
	size_t len = 0;
	char err[300];
	int ret, sealed;

	(void)arg;
	if (!can_end(fd))
		return;
	/* no way back from here: a sealed process only ends (the agent kills it if this fails) */
	sealed = !sigmig_seal_queues();
	ret = arrivals(state, &delta, &len, &n, err, sizeof(err));
	n.sealed = sealed;
	if (ret && ret != -ENODATA)
		return reply_error(fd, "dump_failed", err);
	if (sigmig_transition(state, RT_COMMITTED)) {
		free(delta);
		return reply_error(fd, "wrong_state", "COMMIT raced with a state change");
	}
	commit_reply(fd, delta, len, &n);
	free(delta);
	shutdown(fd, SHUT_WR);
	unlink(srv.path);
	/* the parked threads never run again: nothing more is delivered */
	srv.commit_exit();
}

/*
 * The original becomes a forwarder: like COMMIT it never runs application
 * code again, but it stays alive, parked, so that its agent can read what
 * keeps arriving in its queues (DRAIN) and hand it to the copy, until
 * COMMIT ends it. The reply is the commit delta; each later read carries
 * only what arrived since the one before.
 */
static void do_forward(int fd, enum rt_state state, const char *arg)
{
	struct delta_counts n = { 0 };
	uint8_t *delta = NULL;
	size_t len = 0;
	char err[300];
	int ret;

	(void)arg;
	if (!can_end(fd))
		return;
	ret = sigmig_dump_delta(1, &delta, &len, &n, err, sizeof(err));
	if (ret == -ENODATA)
		return reply_error(fd, "wrong_state", "FORWARD needs a DUMP taken in this freeze");
	if (ret)
		return reply_error(fd, "dump_failed", err);
	/* FROZEN -> FORWARDING cannot race: every verb holds the control lock */
	sigmig_transition(state, RT_FORWARDING);
	commit_reply(fd, delta, len, &n);
	free(delta);
}

/* A tag is kept and shown in STATUS as it is: nothing that needs escaping. */
static bool tag_valid(const char *tag)
{
	size_t i, len = strlen(tag);

	if (!len || len > REQUEUE_TAG_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (tag[i] <= ' ' || tag[i] > '~' || tag[i] == '"' || tag[i] == '\\')
			return false;
	return true;
}

/*
 * The last non-empty DRAIN that named itself (DRAIN TAG), under the control
 * lock. The read position moves when DRAIN answers; an agent that died
 * before it had stored that answer asks again under the same TAG and gets
 * the same records, not the next ones.
 */
static struct {
	char tag[REQUEUE_TAG_MAX + 1];
	uint8_t *image;
	size_t len;
	struct delta_counts n;
} last_drain;

static void keep_drain(const char *tag, uint8_t *delta, size_t len,
		       const struct delta_counts *n)
{
	free(last_drain.image);
	memset(&last_drain, 0, sizeof(last_drain));
	if (!tag || !delta || !n->carried) {
		free(delta);
		return;
	}
	snprintf(last_drain.tag, sizeof(last_drain.tag), "%s", tag);
	last_drain.image = delta;
	last_drain.len = len;
	last_drain.n = *n;
}

/* "DRAIN [TAG]" */
static void do_drain(int fd, enum rt_state state, const char *arg)
{
	struct delta_counts n = { 0 };
	const char *tag = arg && *arg ? arg : NULL;
	uint8_t *delta = NULL;
	size_t len = 0;
	char err[300];

	if (tag && !tag_valid(tag))
		return reply_error(fd, "bad_request",
				   "DRAIN [TAG]: TAG is 1-80 printable characters, no space, quote or backslash");
	if (tag && last_drain.image && !strcmp(tag, last_drain.tag))
		return commit_reply(fd, last_drain.image, last_drain.len, &last_drain.n);
	if (arrivals(state, &delta, &len, &n, err, sizeof(err)))
		return reply_error(fd, "dump_failed", err);
	commit_reply(fd, delta, len, &n);
	keep_drain(tag, delta, len, &n);
}

static void keep_requeue_tag(const char *tag)
{
	if (tag)
		snprintf(srv.requeue_tag, sizeof(srv.requeue_tag), "%s", tag);
}

/* "PATH [TAG]": the image file, and what the agent calls this requeue. */
static void do_requeue(int fd, enum rt_state state, const char *arg)
{
	char err[300], path[REQUEST_MAX], *tag;
	uint64_t n = 0, merged = 0, ns;
	int ret;

	snprintf(path, sizeof(path), "%s", arg);
	tag = strchr(path, ' ');
	if (tag)
		*tag++ = '\0';
	if (tag && !tag_valid(tag))
		return reply_error(fd, "bad_request",
				   "REQUEUE PATH [TAG]: TAG is 1-80 printable characters, no quote or backslash");
	if (state == RT_HELD) {
		if (sigmig_restore_requeue_delta(path, &n, &merged, err, sizeof(err)))
			return reply_error(fd, "requeue_failed", err);
		keep_requeue_tag(tag);
		return reply_line(fd, "{\"ok\":true,\"requeued\":%llu,\"merged\":%llu}",
				  (unsigned long long)n, (unsigned long long)merged);
	}
	/* a running copy is parked for the requeue: only its own threads may */
	if (state == RT_RUNNING && freeze_process(fd, &ns))
		return;
	ret = sigmig_requeue_parked(path, &n, &merged, err, sizeof(err));
	if (state == RT_RUNNING)
		thaw_process();
	if (ret)
		return reply_error(fd, "requeue_failed", err);
	keep_requeue_tag(tag);
	reply_line(fd, "{\"ok\":true,\"requeued\":%llu,\"merged\":%llu}",
		   (unsigned long long)n, (unsigned long long)merged);
}

enum { VERB_ARG_NONE, VERB_ARG_NEEDED, VERB_ARG_OPTIONAL };

static const struct verb {
	const char *name;
	unsigned int states;	/* STATE_BIT()s it is valid in */
	const char *needs;	/* the wrong_state message otherwise */
	void (*run)(int fd, enum rt_state state, const char *arg);
	int arg;		/* VERB_ARG_*: "VERB ARG" */
} verbs[] = {
	{ "STATUS", ANY_STATE, NULL, do_status, 0 },
	{ "FREEZE", STATE_BIT(RT_RUNNING), "FREEZE needs a running process", do_freeze, 0 },
	{ "THAW", STATE_BIT(RT_FROZEN) | STATE_BIT(RT_HELD),
	  "THAW needs a frozen process", do_thaw, 0 },
	{ "DUMP", STATE_BIT(RT_FROZEN),
	  "DUMP needs a frozen process: send FREEZE first", do_dump, 0 },
	{ "PEEK", STATE_BIT(RT_RUNNING) | STATE_BIT(RT_FROZEN) | STATE_BIT(RT_HELD),
	  "PEEK needs a running or frozen process", do_peek, 0 },
	{ "COMMIT", STATE_BIT(RT_FROZEN) | STATE_BIT(RT_HELD) | STATE_BIT(RT_FORWARDING),
	  "COMMIT needs a frozen process", do_commit, 0 },
	{ "FORWARD", STATE_BIT(RT_FROZEN),
	  "FORWARD needs a frozen process with a DUMP", do_forward, 0 },
	{ "DRAIN", STATE_BIT(RT_FORWARDING),
	  "DRAIN needs a process that FORWARD made a forwarder", do_drain, VERB_ARG_OPTIONAL },
	{ "REQUEUE", STATE_BIT(RT_HELD) | STATE_BIT(RT_RUNNING) | STATE_BIT(RT_FROZEN),
	  "REQUEUE needs a restored copy, held, running or frozen", do_requeue, VERB_ARG_NEEDED },
};

static const char *why_not(const struct verb *v, enum rt_state state)
{
	if (v->run == do_requeue || v->run == do_drain)
		return v->needs;
	if (state == RT_FORWARDING)
		return "the process was committed and forwards what arrives: DRAIN or COMMIT it";
	if (state == RT_RESTORING || state == RT_FAILED)
		return "the process is restoring or failed to restore";
	if (state == RT_COMMITTED)
		return "the process was committed and is ending";
	/* its threads do not run the image's masks yet: not a source */
	if (state == RT_HELD)
		return "held after a restore: THAW or COMMIT it first";
	return v->needs;
}

static void dispatch(int fd, char *line)
{
	char *arg = strchr(line, ' ');
	enum rt_state state;
	size_t i;

	if (arg)
		*arg++ = '\0';
	for (i = 0; i < ARRAY_SIZE(verbs); i++)
		if (!strcmp(verbs[i].name, line))
			break;
	if (i == ARRAY_SIZE(verbs))
		return reply_error(fd, "unknown_verb",
				   "verbs: STATUS FREEZE THAW DUMP PEEK COMMIT FORWARD DRAIN REQUEUE");
	if ((verbs[i].arg == VERB_ARG_NONE && arg && *arg) ||
	    (verbs[i].arg == VERB_ARG_NEEDED && !(arg && *arg)))
		return reply_error(fd, "bad_request", verbs[i].arg ?
				   "expected one line: VERB ARG\\n" : "expected one line: VERB\\n");
	sigmig_control_lock();
	state = sigmig_state();
	if (verbs[i].states & STATE_BIT(state))
		verbs[i].run(fd, state, arg);
	else
		reply_error(fd, "wrong_state", why_not(&verbs[i], state));
	sigmig_control_unlock();
}

/* ---- the control thread ---- */

static int read_request(int fd, char *verb, size_t len)
{
	uint64_t deadline = sigmig_deadline(REQUEST_TIMEOUT_MS);
	size_t got = 0;
	ssize_t n;

	while (got + 1 < len) {
		if (wait_fd(fd, POLLIN, sigmig_ms_left(deadline)))
			return -ETIMEDOUT;
		n = read(fd, verb + got, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPIPE;
		if (verb[got] == '\n') {
			verb[got] = '\0';
			if (got && verb[got - 1] == '\r')
				verb[got - 1] = '\0';
			return 0;
		}
		got++;
	}
	return -E2BIG;
}

static void *server_main(void *arg)
{
	char verb[REQUEST_MAX];
	int fd;

	(void)arg;
	while (!atomic_load(&srv.stopping)) {
		if (wait_fd(srv.listen_fd, POLLIN, ACCEPT_POLL_MS))
			continue;
		fd = accept4(srv.listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (!read_request(fd, verb, sizeof(verb)))
			dispatch(fd, verb);
		else
			reply_error(fd, "bad_request", "expected one line: VERB\\n");
		close(fd);
	}
	return NULL;
}

static void mkdir_parents(const char *path)
{
	char dir[sizeof(srv.path)], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	for (slash = strchr(dir + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
}

static int listen_on(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, ret;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	mkdir_parents(path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 8)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

/* The control thread must never take a signal: it starts with all blocked. */
static int start_thread(void)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&srv.thread, NULL, server_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -ret;
}

int sigmig_server_start(const char *path, void (*commit_exit)(void))
{
	int ret;

	if (srv.started)
		return -EALREADY;
	if (strlen(path) >= sizeof(srv.path))
		return -ENAMETOOLONG;
	strcpy(srv.path, path);
	srv.commit_exit = commit_exit;
	srv.listen_fd = listen_on(path);
	if (srv.listen_fd < 0)
		return srv.listen_fd;
	ret = start_thread();
	if (ret) {
		close(srv.listen_fd);
		srv.listen_fd = -1;
		unlink(path);
		return ret;
	}
	srv.started = 1;
	return 0;
}

void sigmig_server_stop(void)
{
	if (!srv.started)
		return;
	atomic_store(&srv.stopping, 1);
	pthread_join(srv.thread, NULL);
	srv.started = 0;
	close(srv.listen_fd);
	srv.listen_fd = -1;
	unlink(srv.path);
}
