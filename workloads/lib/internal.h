/* SPDX-License-Identifier: GPL-2.0 */
/* Runtime internals shared by runtime.c, freeze.c, dump.c, restore.c, ctl.c. */
#ifndef SIGMIG_INTERNAL_H
#define SIGMIG_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sigmig/image.h>

uint32_t sigmig_crc32c(const uint8_t *p, size_t len);
uint16_t sigmig_native_arch(void);

#ifdef SIGMIG_RUNTIME_INTERNALS

enum rt_state { ST_RUNNING, ST_FROZEN, ST_RESTORING, ST_FAILED };

/* Commands posted to a parked (or restoring) thread through its futex word. */
enum thread_cmd {
	CMD_NONE = 0,
	CMD_PEEK,	/* peek the private queue into the thread's buffer */
	CMD_THAW,	/* leave the freeze handler */
	CMD_REQUEUE,	/* restore: requeue the image's private queue */
	CMD_GO,		/* restore: set the image mask and run */
	CMD_RELEASE,	/* restore: the held restorer thread may go on */
};

/* A growable array of raw siginfo records, mmap()ed: usable in handlers. */
struct rawbuf {
	uint8_t *data;
	size_t count;	/* records */
	size_t cap;	/* records */
};

struct rt_thread {
	int registered;
	pid_t tid;
	_Atomic uint32_t cmd;		/* futex word */
	_Atomic uint32_t acked;		/* futex word: bumped when a cmd finishes */
	_Atomic int parked;
	uint64_t blocked;		/* from the freeze handler's uc_sigmask */
	int result;			/* 0 or -errno of the last command */
	char err[160];
	struct rawbuf peek;		/* private queue as peeked */
	const struct sigmig_thread *image;	/* restore: this thread's part */
};

struct rt_handler {
	char name[SIGMIG_HANDLER_NAME_MAX];
	void (*fn)(int, siginfo_t *, void *);
};

#define RT_MAX_HANDLERS 128

struct runtime {
	pthread_mutex_t lock;
	enum rt_state state;
	char ctl_path[108];
	char program[64];
	unsigned int nthreads;
	struct rt_thread *threads;
	_Atomic uint32_t nparked;	/* futex word */
	_Atomic int freezing;		/* a freeze signal now means: park */
	_Atomic uint32_t nregistered;	/* futex word */
	struct rt_handler handlers[RT_MAX_HANDLERS];
	int nhandlers;
	int listen_fd;
	pthread_t ctl_thread;
	int ctl_started;
	_Atomic int stopping;
	void (*on_commit)(void);
	/* restore */
	int restoring;
	struct sigmig_image image;
	_Atomic uint32_t restore_done;	/* futex word: 1 ok, 2 failed */
	int restore_result;
	char restore_err[256];
	uint64_t requeued, restore_ns;
	int restored;
	int restore_hold;		/* hold after a verified restore */
	int held;			/* frozen in the restorer, not by FREEZE */
	_Atomic uint32_t hold_release;	/* futex word: THAW sets it */
	struct rt_thread *restorer;	/* the restorer's own slot, or NULL */
};

extern struct runtime sigmig_rt;

/* runtime.c */
uint64_t sigmig_now_ns(void);
uint64_t sigmig_sigset_to_u64(const sigset_t *set);
void sigmig_u64_to_sigset(uint64_t bits, sigset_t *set);
void sigmig_futex_wait(_Atomic uint32_t *word, uint32_t val, int timeout_ms);
void sigmig_futex_wake(_Atomic uint32_t *word);
const char *sigmig_handler_name(void (*fn)(int, siginfo_t *, void *));
void (*sigmig_handler_fn(const char *name))(int, siginfo_t *, void *);
int sigmig_post(struct rt_thread *t, uint32_t cmd, int timeout_ms);
/*
 * The whole of @path, NUL-terminated, in a malloc()ed buffer, read to EOF
 * with read(2) (no stdio; /proc files report size 0). 0 or -errno.
 */
int sigmig_read_file(const char *path, uint8_t **out, size_t *len);
/*
 * On thread @t: run each command posted to it with @run (its result is
 * what sigmig_post() returns) until @last has been run. Async-signal-safe.
 */
void sigmig_serve(struct rt_thread *t, int (*run)(struct rt_thread *t, uint32_t cmd),
		  uint32_t last);

/* freeze.c */
int sigmig_install_freeze_handler(void);
int sigmig_freeze(uint64_t *ns, char *err, size_t errlen);
int sigmig_thaw(void);
int sigmig_peek_queue(int shared, struct rawbuf *out, char *err, size_t errlen);
void sigmig_rawbuf_free(struct rawbuf *b);
extern __thread struct rt_thread *sigmig_self;

/* dump.c */
int sigmig_dump(uint8_t **img, size_t *len, uint64_t *nsignals, char *err,
		size_t errlen);

/* restore.c */
int sigmig_restore_prepare(const char *path);
int sigmig_restore_start(void);
int sigmig_restore_thread(struct rt_thread *t);
int sigmig_restore_claim_leader(void);
int sigmig_restore_release(void);

/* ctl.c */
int sigmig_ctl_listen(const char *path);
void *sigmig_ctl_main(void *arg);

#endif /* SIGMIG_RUNTIME_INTERNALS */
#endif /* SIGMIG_INTERNAL_H */
