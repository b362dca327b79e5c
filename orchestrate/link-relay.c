// SPDX-License-Identifier: GPL-2.0
/*
 * link-relay: the middle of the guest-to-guest link.  Two socat processes
 * accept the QEMU "-netdev socket,connect=" connections of guest A and B and
 * bridge each to one of our UNIX sockets; we forward the QEMU socket framing
 * (4-byte big-endian length + Ethernet frame) between them and apply the
 * fault the control file asks for:
 *
 *   pass                         forward everything (default)
 *   cut                          drop every frame, both directions
 *   delay MS                     hold every frame MS milliseconds
 *   cut-after ab|ba BYTES        pass BYTES of TCP payload in that direction,
 *                                then behave as "cut"
 *   corrupt-after ab|ba BYTES    once BYTES of TCP payload went by in that
 *                                direction, flip one byte of the next TCP
 *                                data segment and fix the TCP checksum (so
 *                                the corruption reaches the application, as
 *                                with a faulty middlebox), then "pass"
 *   drop-reply-after ab BYTES    after BYTES of TCP payload a->b, drop every
 *                                TCP data segment b->a (replies never arrive)
 *
 * The file is re-read whenever its modification time changes.  Counters and
 * the current state are rewritten to the stats file (key=value, one line)
 * at most every 100 ms, so tests can wait for a trigger to have fired.
 *
 * Usage: link-relay SOCK_A SOCK_B CONTROL_FILE STATS_FILE
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAME	(69632 + 4)
#define BUF_SIZE	(4 * MAX_FRAME)
#define MAX_HELD	(64u << 20)	/* bytes held by "delay" before dropping */

enum mode { M_PASS, M_CUT, M_DELAY, M_CUT_AFTER, M_CORRUPT_AFTER, M_DROP_REPLY };
enum dir { AB = 0, BA = 1 };

struct held {
	struct held *next;
	uint64_t due_ms;
	uint32_t len;		/* including the 4-byte length prefix */
	uint8_t data[];
};

struct side {
	int fd;
	uint8_t buf[BUF_SIZE];
	size_t have;
	struct held *head, *tail;	/* frames waiting to be written to it */
	size_t held_bytes;
};

struct relay {
	struct side side[2];
	const char *control, *stats;
	struct timespec control_mtime;
	enum mode mode;
	enum dir trigger_dir;
	uint64_t trigger_bytes, delay_ms;
	int fired;
	uint64_t frames[2], bytes[2], payload[2];
	uint64_t dropped[2], corrupted;
	uint64_t last_stats_ms;
	int stats_dirty;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *mode_name(const struct relay *r)
{
	static const char *const names[] = {
		"pass", "cut", "delay", "cut-after", "corrupt-after", "drop-reply-after",
	};
	return names[r->mode];
}

static void write_stats(struct relay *r)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", r->stats);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "mode=%s fired=%d frames_ab=%llu frames_ba=%llu bytes_ab=%llu bytes_ba=%llu "
		"payload_ab=%llu payload_ba=%llu dropped_ab=%llu dropped_ba=%llu corrupted=%llu\n",
		mode_name(r), r->fired,
		(unsigned long long)r->frames[AB], (unsigned long long)r->frames[BA],
		(unsigned long long)r->bytes[AB], (unsigned long long)r->bytes[BA],
		(unsigned long long)r->payload[AB], (unsigned long long)r->payload[BA],
		(unsigned long long)r->dropped[AB], (unsigned long long)r->dropped[BA],
		(unsigned long long)r->corrupted);
	fclose(f);
	rename(tmp, r->stats);
	r->last_stats_ms = now_ms();
	r->stats_dirty = 0;
}

static int parse_dir(const char *s, enum dir *d)
{
	if (!strcmp(s, "ab"))
		*d = AB;
	else if (!strcmp(s, "ba"))
		*d = BA;
	else
		return -1;
	return 0;
}

static void apply_control_line(struct relay *r, const char *line)
{
	char word[32] = "", arg1[32] = "";
	unsigned long long n = 0;
	int got = sscanf(line, "%31s %31s %llu", word, arg1, &n);

	r->fired = 0;
	r->mode = M_PASS;
	if (got < 1 || !strcmp(word, "pass"))
		return;
	if (!strcmp(word, "cut")) {
		r->mode = M_CUT;
		return;
	}
	if (!strcmp(word, "delay") && got >= 2) {
		r->mode = M_DELAY;
		r->delay_ms = strtoull(arg1, NULL, 10);
		return;
	}
	if (got < 3 || parse_dir(arg1, &r->trigger_dir)) {
		fprintf(stderr, "link-relay: bad control line '%s': pass\n", line);
		return;
	}
	/* Triggers count from now, not from the start of the link. */
	r->trigger_bytes = r->payload[r->trigger_dir] + n;
	if (!strcmp(word, "cut-after"))
		r->mode = M_CUT_AFTER;
	else if (!strcmp(word, "corrupt-after"))
		r->mode = M_CORRUPT_AFTER;
	else if (!strcmp(word, "drop-reply-after"))
		r->mode = M_DROP_REPLY;
	else
		fprintf(stderr, "link-relay: unknown mode '%s': pass\n", word);
}

static void reload_control(struct relay *r)
{
	char line[256] = "";
	struct stat st;
	FILE *f;

	if (stat(r->control, &st))
		return;
	if (st.st_mtim.tv_sec == r->control_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == r->control_mtime.tv_nsec)
		return;
	r->control_mtime = st.st_mtim;
	f = fopen(r->control, "r");
	if (!f)
		return;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	apply_control_line(r, line);
	fprintf(stderr, "link-relay: control '%s' -> %s\n", line, mode_name(r));
	r->stats_dirty = 1;
}

/* Offsets of the TCP payload inside an Ethernet frame, or -1 if not TCP/IPv4. */
static int tcp_payload(const uint8_t *eth, size_t len, size_t *ip_off,
		       size_t *tcp_off, size_t *data_off, size_t *data_len)
{
	size_t ihl, thl, tot;

	if (len < 14 + 20 || eth[12] != 0x08 || eth[13] != 0x00)
		return -1;
	*ip_off = 14;
	if ((eth[14] >> 4) != 4 || eth[14 + 9] != 6)
		return -1;
	ihl = (eth[14] & 0x0f) * 4;
	tot = (size_t)eth[16] << 8 | eth[17];
	if (ihl < 20 || tot < ihl + 20 || 14 + tot > len)
		return -1;
	*tcp_off = 14 + ihl;
	thl = (eth[*tcp_off + 12] >> 4) * 4;
	if (thl < 20 || ihl + thl > tot)
		return -1;
	*data_off = *tcp_off + thl;
	*data_len = tot - ihl - thl;
	return 0;
}

static uint32_t sum16(const uint8_t *p, size_t len, uint32_t sum)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static void fix_tcp_checksum(uint8_t *eth, size_t ip_off, size_t tcp_off, size_t seg_len)
{
	uint8_t pseudo[12];
	uint32_t sum;

	memcpy(pseudo, eth + ip_off + 12, 8);	/* source and destination */
	pseudo[8] = 0;
	pseudo[9] = 6;
	pseudo[10] = seg_len >> 8;
	pseudo[11] = seg_len & 0xff;
	eth[tcp_off + 16] = 0;
	eth[tcp_off + 17] = 0;
	sum = sum16(pseudo, sizeof(pseudo), 0);
	sum = sum16(eth + tcp_off, seg_len, sum);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	eth[tcp_off + 16] = sum >> 8;
	eth[tcp_off + 17] = sum & 0xff;
}

/* Returns 1 to forward the frame, 0 to drop it. */
static int filter_frame(struct relay *r, enum dir d, uint8_t *eth, size_t len)
{
	size_t ip_off, tcp_off, data_off, data_len;
	int is_tcp_data;

	is_tcp_data = !tcp_payload(eth, len, &ip_off, &tcp_off, &data_off, &data_len) &&
		      data_len > 0;
	if (r->mode == M_CUT || (r->mode == M_CUT_AFTER && r->fired))
		return 0;
	if (r->mode == M_DROP_REPLY && r->fired && d != r->trigger_dir && is_tcp_data)
		return 0;
	if (!is_tcp_data)
		return 1;
	r->payload[d] += data_len;
	if (d != r->trigger_dir || r->fired || r->payload[d] < r->trigger_bytes)
		return 1;
	switch (r->mode) {
	case M_CUT_AFTER:
		r->fired = 1;
		fprintf(stderr, "link-relay: cut after %llu payload bytes\n",
			(unsigned long long)r->payload[d]);
		return 0;
	case M_CORRUPT_AFTER: {
		size_t at = data_off + data_len / 2;
		size_t seg_len = ((size_t)eth[ip_off + 2] << 8 | eth[ip_off + 3]) -
				 (tcp_off - ip_off);

		fprintf(stderr, "link-relay: corrupting byte %zu of a %zu-byte segment (0x%02x -> 0x%02x)\n",
			data_len / 2, data_len, eth[at], eth[at] ^ 0x5a);
		eth[at] ^= 0x5a;
		fix_tcp_checksum(eth, ip_off, tcp_off, seg_len);
		r->corrupted++;
		r->fired = 1;
		return 1;
	}
	case M_DROP_REPLY:
		r->fired = 1;
		fprintf(stderr, "link-relay: dropping replies from now on\n");
		return 1;
	default:
		return 1;
	}
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static int hold_frame(struct side *out, const uint8_t *frame, size_t len, uint64_t due)
{
	struct held *h;

	if (out->held_bytes + len > MAX_HELD)
		return 0;
	h = malloc(sizeof(*h) + len);
	if (!h)
		return 0;
	h->next = NULL;
	h->due_ms = due;
	h->len = len;
	memcpy(h->data, frame, len);
	if (out->tail)
		out->tail->next = h;
	else
		out->head = h;
	out->tail = h;
	out->held_bytes += len;
	return 1;
}

static int flush_held(struct side *out, uint64_t now)
{
	struct held *h;

	while ((h = out->head) && h->due_ms <= now) {
		if (write_all(out->fd, h->data, h->len))
			return -1;
		out->head = h->next;
		if (!out->head)
			out->tail = NULL;
		out->held_bytes -= h->len;
		free(h);
	}
	return 0;
}

/* Forward every complete frame buffered on side d; -1 when a peer is gone. */
static int pump(struct relay *r, enum dir d)
{
	struct side *in = &r->side[d], *out = &r->side[!d];
	size_t off = 0;

	while (in->have - off >= 4) {
		uint8_t *frame = in->buf + off;
		uint32_t len = ntohl(*(uint32_t *)frame);

		if (len > MAX_FRAME - 4) {
			fprintf(stderr, "link-relay: bad frame length %u\n", len);
			return -1;
		}
		if (in->have - off < 4 + len)
			break;
		r->frames[d]++;
		r->bytes[d] += len;
		r->stats_dirty = 1;
		if (!filter_frame(r, d, frame + 4, len)) {
			r->dropped[d]++;
		} else if (r->mode == M_DELAY || out->head) {
			if (!hold_frame(out, frame, 4 + len, now_ms() + r->delay_ms))
				r->dropped[d]++;
		} else if (write_all(out->fd, frame, 4 + len)) {
			return -1;
		}
		off += 4 + len;
	}
	memmove(in->buf, in->buf + off, in->have - off);
	in->have -= off;
	return 0;
}

/* -1 with errno set: ENAMETOOLONG when the path does not fit sun_path. */
static int listen_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, saved;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	strcpy(sa.sun_path, path);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1)) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

static int next_timeout(struct relay *r)
{
	uint64_t now = now_ms(), due = now + 50;
	int i;

	for (i = 0; i < 2; i++)
		if (r->side[i].head && r->side[i].head->due_ms < due)
			due = r->side[i].head->due_ms;
	return due > now ? (int)(due - now) : 0;
}

static int relay_loop(struct relay *r)
{
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = r->side[AB].fd, .events = POLLIN },
			{ .fd = r->side[BA].fd, .events = POLLIN },
		};
		int i;

		if (poll(pfd, 2, next_timeout(r)) < 0 && errno != EINTR)
			return -1;
		reload_control(r);
		for (i = 0; i < 2; i++) {
			struct side *s = &r->side[i];
			ssize_t n;

			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(s->fd, s->buf + s->have, sizeof(s->buf) - s->have);
			if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
				fprintf(stderr, "link-relay: side %c closed\n", i ? 'b' : 'a');
				return 0;
			}
			if (n > 0)
				s->have += n;
			if (pump(r, i))
				return -1;
		}
		for (i = 0; i < 2; i++)
			if (flush_held(&r->side[i], now_ms()))
				return -1;
		if (r->stats_dirty && now_ms() - r->last_stats_ms >= 100)
			write_stats(r);
	}
}

int main(int argc, char **argv)
{
	static struct relay r;
	int lfd[2], i, rc;

	if (argc != 5) {
		fprintf(stderr, "usage: %s SOCK_A SOCK_B CONTROL_FILE STATS_FILE\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	r.control = argv[3];
	r.stats = argv[4];
	r.trigger_dir = AB;
	reload_control(&r);
	write_stats(&r);
	for (i = 0; i < 2; i++) {
		lfd[i] = listen_unix(argv[1 + i]);
		if (lfd[i] < 0) {
			fprintf(stderr, "link-relay: listen on %s: %s\n",
				argv[1 + i], strerror(errno));
			return 1;
		}
	}
	for (i = 0; i < 2; i++) {
		r.side[i].fd = accept(lfd[i], NULL, NULL);
		if (r.side[i].fd < 0) {
			perror("link-relay: accept");
			return 1;
		}
		fprintf(stderr, "link-relay: guest %c connected\n", i ? 'b' : 'a');
	}
	rc = relay_loop(&r);
	write_stats(&r);
	return rc ? 1 : 0;
}
