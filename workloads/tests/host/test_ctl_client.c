// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of the control-protocol client against a scripted server:
 * replies it must take apart (the line, the image that follows, a reply
 * split over many writes), replies that break the protocol (-EPROTO: no
 * newline, a line over the limit, bytes after the image, an absurd
 * image_size), and servers that never answer or stall (-ETIMEDOUT, in
 * about the time asked for). Built with ASan+UBSan and with TSan.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <sigmig/ctl.h>
#include "tap.h"

struct script {
	const char *reply;	/* sent after the request line */
	size_t len;
	int dribble;		/* one byte per send */
	int flood;		/* then 'a's until the client hangs up */
	int stall_ms;		/* then silence before closing */
	int listen_fd;
	char request[64];	/* what the client sent */
};

static char path[108];

static void send_reply(int fd, const struct script *s)
{
	size_t off, step = s->dribble ? 1 : s->len;

	for (off = 0; off < s->len; off += step) {
		if (send(fd, s->reply + off, step, MSG_NOSIGNAL) < 0)
			return;
		if (s->dribble)
			poll(NULL, 0, 1);
	}
}

static void flood(int fd)
{
	static const char chunk[4096] = { [0 ... 4095] = 'a' };

	while (send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL) > 0)
		;
}

/* Silent until the client hangs up (or @ms pass). */
static void stall(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	poll(&p, 1, ms);
}

static void *serve_one(void *arg)
{
	struct script *s = arg;
	size_t got = 0;
	ssize_t n;
	int fd;

	fd = accept(s->listen_fd, NULL, NULL);
	if (fd < 0)
		return NULL;
	while (got + 1 < sizeof(s->request) &&
	       (n = read(fd, s->request + got, 1)) == 1 && s->request[got] != '\n')
		got++;
	s->request[got] = '\0';
	send_reply(fd, s);
	if (s->flood)
		flood(fd);
	if (s->stall_ms)
		stall(fd, s->stall_ms);
	close(fd);
	return NULL;
}

static int listen_here(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	strcpy(sa.sun_path, path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4))
		return -1;
	return fd;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static pthread_t serve(struct script *s)
{
	pthread_t th;

	if (!s->len && s->reply)
		s->len = strlen(s->reply);
	s->listen_fd = listen_here();
	pthread_create(&th, NULL, serve_one, s);
	return th;
}

static void served(struct script *s, pthread_t th)
{
	pthread_join(th, NULL);
	close(s->listen_fd);
}

/* One request against @s; the client's return value, reply in @reply. */
static int run(struct script *s, const char *verb, int timeout_ms,
	       struct sigmig_ctl_reply *reply, double *took)
{
	double start = now_s();
	pthread_t th = serve(s);
	int ret;

	ret = sigmig_ctl_request(path, verb, timeout_ms, reply);
	if (took)
		*took = now_s() - start;
	served(s, th);
	return ret;
}

/*
 * The image read through the stream, @step bytes at a time, into @out
 * (@cap bytes); how many came, or the first error.
 */
static ssize_t read_stream(struct sigmig_ctl_stream *st, uint8_t *out,
			   size_t cap, size_t step, int stall_ms)
{
	size_t have = 0;
	ssize_t n;

	while (have < cap) {
		n = sigmig_ctl_read(st, out + have, step < cap - have ? step : cap - have,
				    stall_ms);
		if (n < 0)
			return n;
		if (!n)
			break;
		have += (size_t)n;
	}
	return (ssize_t)have;
}

/* What a streamed read of one scripted reply gave. */
struct streamed {
	int open;		/* sigmig_ctl_open()'s return */
	ssize_t read;		/* read_stream()'s */
	ssize_t after;		/* a read after that */
	int ok, image;		/* the line's "ok"; an image was announced */
	uint64_t size, done;
	uint8_t got[16];
};

static void stream_from(struct script *s, int timeout_ms, int stall_ms, size_t step,
			struct streamed *out)
{
	pthread_t th = serve(s);
	struct sigmig_ctl_stream st;
	struct sigmig_ctl_reply r;
	uint8_t more[4];

	memset(out, 0, sizeof(*out));
	out->open = sigmig_ctl_open(path, "DUMP", timeout_ms, &r, &st);
	if (!out->open) {
		out->ok = sigmig_ctl_reply_ok(&r) && !r.image;
		out->image = st.head != NULL;
		out->size = st.size;
		out->read = read_stream(&st, out->got, sizeof(out->got), step, stall_ms);
		if (out->read >= 0)
			out->after = sigmig_ctl_read(&st, more, sizeof(more), 0);
		out->done = st.done;
	}
	sigmig_ctl_close(&st);
	sigmig_ctl_reply_free(&r);
	served(s, th);
}

static void test_streamed_image(void)
{
	struct script s = { .reply = "{\"ok\":true,\"image_size\":6}\nABCDEF", .dribble = 1 };
	struct streamed r;
	double took;

	stream_from(&s, 2000, 0, 4, &r);
	ok(!r.open && r.ok && r.size == 6 && r.read == 6 && !memcmp(r.got, "ABCDEF", 6) &&
	   !r.after, "a streamed image, dribbled, is read whole and then ends (%d, %zd)",
	   r.open, r.read);
	s = (struct script){ .reply = "{\"ok\":true,\"image_size\":5}\nABCDE" };
	stream_from(&s, 2000, 0, 1, &r);
	ok(!r.open && r.read == 5 && !memcmp(r.got, "ABCDE", 5),
	   "bytes that came with the line come first, one at a time (%zd)", r.read);
	s = (struct script){ .reply = "{\"ok\":true,\"image_size\":9}\nABC" };
	stream_from(&s, 2000, 0, 2, &r);
	ok(!r.open && r.read == -EPROTO && r.done == 3,
	   "a runtime that closes inside the image: -EPROTO after its 3 bytes (%zd)", r.read);
	s = (struct script){ .reply = "{\"ok\":false,\"error\":\"dump_failed\"}\n" };
	stream_from(&s, 2000, 0, 1, &r);
	ok(!r.open && !r.ok && !r.image && !r.read && !r.after,
	   "a refusal without an image: the line, and an empty stream (%d)", r.open);
	s = (struct script){ .reply = "{\"ok\":true,\"image_size\":10}\nabc", .stall_ms = 3000 };
	stream_from(&s, 300, 0, 16, &r);
	ok(!r.open && r.read == -ETIMEDOUT, "a stall inside a streamed image: -ETIMEDOUT (%zd)",
	   r.read);
	took = now_s();
	stream_from(&s, 10000, 300, 16, &r);
	took = now_s() - took;
	ok(!r.open && r.read == -ETIMEDOUT && took < 2.0,
	   "with a stall bound, -ETIMEDOUT after %.2f s of silence (the exchange had 10)", took);
}

static void test_good_replies(void)
{
	struct script s = { .reply = "{\"ok\":true,\"image_size\":5,\"signals\":0}\nABCDE" };
	struct sigmig_ctl_reply r;
	int ret;

	ret = run(&s, "DUMP", 2000, &r, NULL);
	ok(ret == 0 && !strcmp(s.request, "DUMP") && r.image_len == 5 &&
	   !memcmp(r.image, "ABCDE", 5) && !strcmp(r.line, "{\"ok\":true,\"image_size\":5,\"signals\":0}"),
	   "line and image that arrive together are told apart (%d)", ret);
	ok(sigmig_ctl_reply_ok(&r), "ok:true is ok");
	sigmig_ctl_reply_free(&r);

	s = (struct script){ .reply = "{\"ok\":true,\"image_size\":3}\nxyz", .dribble = 1 };
	ret = run(&s, "PEEK", 2000, &r, NULL);
	ok(ret == 0 && r.image_len == 3 && !memcmp(r.image, "xyz", 3),
	   "a reply dribbled one byte per write is whole (%d)", ret);
	sigmig_ctl_reply_free(&r);

	s = (struct script){ .reply = "{\"ok\":false,\"error\":\"wrong_state\",\"message\":\"\\\"ok\\\":true, \\\"image_size\\\":9\"}\n" };
	ret = run(&s, "DUMP", 2000, &r, NULL);
	ok(ret == 0 && !r.image && !sigmig_ctl_reply_ok(&r),
	   "members quoted inside a string are not members (%d)", ret);
	sigmig_ctl_reply_free(&r);

	s = (struct script){ .reply = "{\"restore\":{\"ok\":true},\"threads\":[{\"ok\":1}],\"ok\":false}\n" };
	ret = run(&s, "STATUS", 2000, &r, NULL);
	ok(ret == 0 && !sigmig_ctl_reply_ok(&r), "nested \"ok\" members are not the reply's (%d)", ret);
	sigmig_ctl_reply_free(&r);
}

static void expect_eproto(const char *what, struct script *s)
{
	struct sigmig_ctl_reply r;
	int ret = run(s, "DUMP", 5000, &r, NULL);

	ok(ret == -EPROTO && !r.line && !r.image, "%s: -EPROTO, nothing returned (%d)", what, ret);
}

static void test_broken_replies(void)
{
	struct script s;

	s = (struct script){ .reply = "{\"ok\":true" };
	expect_eproto("EOF before the newline", &s);
	s = (struct script){ .reply = "{\"ok\":true}\nX" };
	expect_eproto("bytes after a line without an image", &s);
	s = (struct script){ .reply = "{\"ok\":true,\"image_size\":2}\nABC" };
	expect_eproto("bytes after the image", &s);
	s = (struct script){ .reply = "{\"ok\":true,\"image_size\":4}\nAB" };
	expect_eproto("EOF inside the image", &s);
	s = (struct script){ .reply = "{\"ok\":true,\"image_size\":99999999999999}\n" };
	expect_eproto("image_size over SIGMIG_CTL_IMAGE_MAX", &s);
	s = (struct script){ .reply = "{\"ok\":true,\"image_size\":-1}\n" };
	expect_eproto("a negative image_size", &s);
	s = (struct script){ .reply = "", .flood = 1 };
	expect_eproto("a line that never ends (bounded by SIGMIG_CTL_LINE_MAX)", &s);
}

static void test_timeouts(void)
{
	struct sigmig_ctl_reply r;
	struct script s;
	double took;
	int ret;

	s = (struct script){ .stall_ms = 3000 };
	ret = run(&s, "STATUS", 300, &r, &took);
	ok(ret == -ETIMEDOUT && took < 2.0, "a silent server: -ETIMEDOUT after %.2f s (asked 0.3)", took);
	s = (struct script){ .reply = "{\"ok\":true,\"image_size\":10}\nabc", .stall_ms = 3000 };
	ret = run(&s, "DUMP", 300, &r, &took);
	ok(ret == -ETIMEDOUT && took < 2.0, "a stall inside the image: -ETIMEDOUT after %.2f s", took);
}

static void test_requests(void)
{
	struct sigmig_ctl_reply r;
	char overlong[302];
	int ret;

	unlink(path);
	ret = sigmig_ctl_request(path, "STATUS", 1000, &r);
	ok(ret == -ENOENT || ret == -ECONNREFUSED, "nothing listening: %d", ret);
	ok(sigmig_ctl_request(path, "STATUS\nTHAW", 1000, &r) == -EINVAL,
	   "a verb with a newline is refused");
	ok(sigmig_ctl_request(path, "", 1000, &r) == -EINVAL, "an empty verb is refused");
	/* 300: "REQUEUE " and a path in the agent's state directory */
	memset(overlong, 'A', sizeof(overlong) - 1);
	overlong[sizeof(overlong) - 1] = '\0';
	ok(sigmig_ctl_request(path, overlong, 1000, &r) == -EINVAL,
	   "an overlong request (301 bytes) is refused");
}

int main(void)
{
	snprintf(path, sizeof(path), "/tmp/sigmig-ctl-client-%d.sock", getpid());
	tap_plan_start();
	test_good_replies();
	test_broken_replies();
	test_timeouts();
	test_streamed_image();
	test_requests();
	unlink(path);
	return tap_done();
}
