/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sigmig checkpoint image: the pending signals of one process and the state
 * that gives them meaning (masks, dispositions, POSIX timers).
 *
 * The on-wire encoding is little-endian, versioned, self-describing and
 * covered by a CRC-32C trailer; see docs/image-format.md. The reader
 * validates everything before a caller may act on it.
 */
#ifndef SIGMIG_IMAGE_H
#define SIGMIG_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <sigmig/sfd.h>	/* SI_MAX_SIZE: one record */

#define SIGMIG_IMAGE_MAGIC	"SIGMIGIM"	/* 8 bytes, no NUL */
#define SIGMIG_IMAGE_VERSION	1
#define SIGMIG_NSIG		64
#define SIGMIG_HANDLER_NAME_MAX	32
#define SIGMIG_MAX_THREADS	1024
#define SIGMIG_MAX_TIMERS	4096
#define SIGMIG_MAX_SIGNALS	(1u << 22)	/* per queue */

/* One raw siginfo_t exactly as SFD_RAW returns it. */
struct sigmig_siginfo {
	uint8_t bytes[SI_MAX_SIZE];
};

struct sigmig_queue {
	uint32_t count;
	struct sigmig_siginfo *entries;	/* oldest first */
};

struct sigmig_thread {
	uint32_t index;		/* the application's stable thread index */
	int32_t tid;		/* tid on the dumping host, informational */
	uint64_t blocked;	/* bit (sig - 1) set when sig is blocked */
	struct sigmig_queue pending;	/* the thread's private queue */
};

enum sigmig_handler_kind {
	SIGMIG_HANDLER_DEFAULT = 0,
	SIGMIG_HANDLER_IGNORE = 1,
	SIGMIG_HANDLER_NAMED = 2,	/* registered with sigmig_register_handler() */
};

struct sigmig_disposition {
	uint32_t kind;		/* enum sigmig_handler_kind */
	uint32_t sa_flags;	/* SA_* as the kernel reports them */
	uint64_t sa_mask;	/* bit (sig - 1) */
	char handler[SIGMIG_HANDLER_NAME_MAX];	/* NUL-terminated when NAMED */
};

struct sigmig_timer {
	int32_t id;		/* kernel timer id, recreated identical */
	int32_t clock;		/* clockid_t */
	int32_t notify;		/* SIGEV_SIGNAL, SIGEV_THREAD_ID or SIGEV_NONE */
	int32_t signo;
	uint64_t value;		/* sigev_value.sival_ptr */
	uint32_t thread_index;	/* target for SIGEV_THREAD_ID */
	int32_t overrun;	/* timer_getoverrun() at dump */
	int64_t interval_ns;
	int64_t remaining_ns;	/* 0 when disarmed */
};

struct sigmig_image {
	uint32_t version;
	uint32_t arch;		/* ELF e_machine of the dumping process */
	uint64_t created_ns;	/* CLOCK_REALTIME at dump */
	int32_t pid;		/* pid on the dumping host, informational */
	char program[64];	/* NUL-terminated */
	struct sigmig_disposition dispositions[SIGMIG_NSIG];	/* [sig - 1] */
	uint32_t nthreads;
	struct sigmig_thread *threads;
	struct sigmig_queue shared;
	uint32_t ntimers;
	struct sigmig_timer *timers;
};

/* Total pending signals over every queue. */
uint64_t sigmig_image_pending_total(const struct sigmig_image *img);

/*
 * Serialise @img; on success *out is malloc()ed and owned by the caller.
 * Returns 0 or a negative errno.
 */
int sigmig_image_encode(const struct sigmig_image *img, uint8_t **out,
			size_t *out_len);

/*
 * The same bytes, handed to @sink in order as they are encoded, for a
 * writer that sends an image while it is made: no copy of the queues is
 * made. A sink returns 0, or a negative errno that stops the encoder and
 * is returned. @img is checked as sigmig_image_encode() checks it before
 * the first byte goes to @sink.
 */
typedef int (*sigmig_image_sink)(void *arg, const uint8_t *p, size_t len);
int sigmig_image_encode_to(const struct sigmig_image *img,
			   sigmig_image_sink sink, void *arg);
/* The length the encoding of @img will have: 0 or a negative errno. */
int sigmig_image_encoded_size(const struct sigmig_image *img, uint64_t *total);

/*
 * Every check of sigmig_image_decode(), with the same result and reason,
 * for a reader that needs to know only that the image is good: nothing is
 * allocated or copied.
 */
int sigmig_image_check(const uint8_t *buf, size_t len, char *err, size_t errlen);

/* Bytes of the header: what sigmig_image_check_head() needs. */
#define SIGMIG_IMAGE_HEAD_SIZE	160

/*
 * The checks that need only the header of an image of @total bytes (the
 * length a transfer announces), for a receiver that starts to restore
 * before the rest has arrived: 0, or a negative errno with the reason in
 * @err, as sigmig_image_decode() gives it for the whole image. The CRC
 * and every record are left to sigmig_image_decode(), which must still
 * pass before anything is requeued.
 */
int sigmig_image_check_head(const uint8_t *head, size_t len, uint64_t total,
			    char *err, size_t errlen);
/*
 * What a header of SIGMIG_IMAGE_HEAD_SIZE bytes says: the image's whole
 * length, and the program it came from (64 bytes, NUL-terminated once
 * sigmig_image_check_head() has passed).
 */
uint64_t sigmig_image_head_total(const uint8_t *head);
const char *sigmig_image_head_program(const uint8_t *head);
#define SIGMIG_IMAGE_PROGRAM_LEN	64

/*
 * Parse and fully validate @len bytes. On success fills @img (free with
 * sigmig_image_free()) and returns 0; on failure returns a negative errno
 * and writes a one-line reason to @err (truncated, always NUL-terminated).
 * Rejects: short/truncated data, bad magic, unknown version, foreign arch,
 * foreign byte order, wrong siginfo size, counts above the limits or
 * inconsistent with the length, checksum mismatch, trailing garbage.
 */
int sigmig_image_decode(const uint8_t *buf, size_t len,
			struct sigmig_image *img, char *err, size_t errlen);

void sigmig_image_free(struct sigmig_image *img);

#endif /* SIGMIG_IMAGE_H */
