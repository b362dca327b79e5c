// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of the runtime parts that do not need the patched kernel:
 * control protocol, freeze/thaw (nothing delivered while frozen, all of it
 * after), state errors, COMMIT through the program's hook, restore
 * refusals (bad image, wrong program, RLIMIT_SIGPENDING) and a restore
 * that fails with threads registered: the errors come back to the program,
 * which exits 3 before anything runs. DUMP on a kernel without SFD_RAW
 * must fail cleanly. Built with ASan+UBSan and with TSan.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sigmig/ctl.h>
#include <sigmig/runtime.h>
#include "tap.h"

static char sock[108];
static _Atomic int delivered;
static _Atomic int stop;
static _Atomic pid_t tids[2];

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)si; (void)uc;
	delivered++;
}

static void *worker(void *arg)
{
	unsigned int index = (unsigned int)(uintptr_t)arg;

	sigset_t usr1;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	tids[index] = (pid_t)syscall(SYS_gettid);
	if (sigmig_thread_register(index))
		return NULL;
	while (!stop)
		usleep(1000);
	return NULL;
}

static int answers(const char *path, const char *verb, const char *expect, int quiet)
{
	struct sigmig_ctl_reply reply;
	int ret = sigmig_ctl_request(path, verb, 20000, &reply), good;

	good = !ret && strstr(reply.line, expect);
	if (!good && !quiet)
		printf("# %s -> %d %s\n", verb, ret, reply.line ? reply.line : "(null)");
	sigmig_ctl_reply_free(&reply);
	return good;
}

static int request_on(const char *path, const char *verb, const char *expect)
{
	return answers(path, verb, expect, 0);
}

static int request(const char *verb, const char *expect)
{
	return request_on(sock, verb, expect);
}

static void test_protocol(void)
{
	struct sigmig_runtime_opts o = { .ctl_path = sock, .program = "test_runtime", .nthreads = 2 };
	pthread_t th[2];
	int i, before;
	sigset_t usr1;

	/* like an application's main thread: unregistered, so it takes no signal */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);

	ok(sigmig_install_handler(SIGUSR1, "on_usr1", on_usr1, 0, NULL) == 0, "install a named handler");
	ok(sigmig_register_handler("other", on_usr1) == -EEXIST, "one function has one name");
	char err[256];

	ok(sigmig_runtime_start(&o, err, sizeof(err)) == 0, "runtime starts");
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i);
	for (i = 0; i < 200 && (!tids[0] || !tids[1]); i++)
		usleep(5000);
	usleep(50000);
	ok(request("STATUS", "\"state\":\"running\""), "STATUS running");
	ok(request("STATUS", "{\"index\":1,"), "STATUS lists the threads");
	ok(request("THAW", "\"error\":\"wrong_state\""), "THAW when running: wrong_state");
	ok(request("DUMP", "\"error\":\"wrong_state\""), "DUMP when running: wrong_state");
	ok(request("COMMIT", "\"error\":\"wrong_state\""), "COMMIT when running: wrong_state");
	ok(request("FREEZE", "\"freeze_ns\":"), "FREEZE");
	ok(request("FREEZE", "\"error\":\"wrong_state\""), "FREEZE twice: wrong_state");
	ok(request("STATUS", "\"state\":\"frozen\""), "STATUS frozen");
	before = delivered;
	for (i = 0; i < 2; i++)
		syscall(SYS_tgkill, getpid(), tids[i], SIGUSR1);
	kill(getpid(), SIGUSR1);
	usleep(100000);
	ok(delivered == before, "nothing delivered while frozen (%d)", delivered - before);
	ok(request("DUMP", "\"ok\":") , "DUMP answers (ok on a patched kernel, dump_failed without SFD_RAW)");
	ok(request("THAW", "\"ok\":true"), "THAW");
	for (i = 0; i < 100 && delivered - before < 3; i++)
		usleep(10000);
	ok(delivered - before == 3, "the three pending signals delivered after THAW (%d)", delivered - before);
	ok(request("NOPE", "\"error\":\"unknown_verb\""), "unknown verb");
	ok(request("FREEZE", "\"freeze_ns\":") && request("COMMIT", "\"error\":\"not_supported\"") &&
	   request("THAW", "\"ok\":true"), "COMMIT without a commit_exit hook: not_supported, still frozen");
	ok(request("PEEK", "\"ok\":"), "PEEK while running answers and thaws");
	ok(request("STATUS", "\"state\":\"running\""), "running again after PEEK");
	stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	sigmig_runtime_stop();
}

static void drop_sys_resource(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	prctl(PR_CAPBSET_DROP, CAP_SYS_RESOURCE, 0, 0, 0);
	if (!syscall(SYS_capget, &hdr, data)) {
		data[0].effective &= ~(1u << CAP_SYS_RESOURCE);
		data[0].permitted &= ~(1u << CAP_SYS_RESOURCE);
		syscall(SYS_capset, &hdr, data);
	}
}

static void diag_lines(const char *text)
{
	const char *nl;

	for (; *text; text = nl ? nl + 1 : text + strlen(text)) {
		nl = strchr(text, '\n');
		printf("# %.*s\n", nl ? (int)(nl - text) : (int)strlen(text), text);
	}
}

/* Run @fn in a child; its exit status, its stderr in @err. */
static int in_child(int (*fn)(const char *, int), const char *arg, int n,
		    char *err, size_t errlen)
{
	char errf[] = "/tmp/sigmig-test-errXXXXXX";
	int efd = mkstemp(errf), status = -1;
	ssize_t len;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		dup2(efd, 2);
		_exit(fn(arg, n));
	}
	waitpid(pid, &status, 0);
	len = pread(efd, err, errlen - 1, 0);
	err[len > 0 ? len : 0] = '\0';
	if (len > 0 && err[len - 1] == '\n')
		err[len - 1] = '\0';
	close(efd);
	unlink(errf);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Restore @bytes in a child; returns its exit status, stderr in @err. */
static int restore_child(const uint8_t *bytes, size_t len, long rlimit, const char *program,
			 char *err, size_t errlen)
{
	char img[] = "/tmp/sigmig-test-imgXXXXXX", errf[] = "/tmp/sigmig-test-errXXXXXX";
	int fd = mkstemp(img), efd = mkstemp(errf), status = -1;
	pid_t pid;
	ssize_t n;

	if (write(fd, bytes, len) != (ssize_t)len)
		return -1;
	close(fd);
	pid = fork();
	if (pid == 0) {
		struct sigmig_runtime_opts o = { .ctl_path = "/tmp/sigmig-test-restore.sock",
			.program = program, .restore_image = img, .nthreads = 1 };
		struct rlimit rl = { (rlim_t)rlimit, (rlim_t)rlimit };

		char why[256];

		dup2(efd, 2);
		if (rlimit) {
			setrlimit(RLIMIT_SIGPENDING, &rl);
			drop_sys_resource();
		}
		if (sigmig_runtime_start(&o, why, sizeof(why))) {
			fprintf(stderr, "sigmig restore: %s\n", why);
			_exit(3);
		}
		_exit(0);	/* the restore was not refused */
	}
	waitpid(pid, &status, 0);
	n = pread(efd, err, errlen - 1, 0);
	err[n > 0 ? n : 0] = '\0';
	if (n > 0 && err[n - 1] == '\n')
		err[n - 1] = '\0';
	close(efd);
	unlink(img);
	unlink(errf);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_restore_refusals(void)
{
	struct sigmig_image img;
	struct sigmig_siginfo *q;
	uint8_t *buf;
	size_t len;
	char err[512];
	int rc, i;

	memset(&img, 0, sizeof(img));
	img.version = SIGMIG_IMAGE_VERSION;
	img.arch = 62;	/* EM_X86_64 */
	strcpy(img.program, "prog");
	q = calloc(200, sizeof(*q));
	for (i = 0; i < 200; i++) {
		int signo = 40;

		memcpy(q[i].bytes, &signo, 4);
	}
	img.shared.count = 200;
	img.shared.entries = q;
	sigmig_image_encode(&img, &buf, &len);

	rc = restore_child((const uint8_t *)"garbage", 7, 0, "prog", err, sizeof(err));
	ok(rc == 3 && strstr(err, "truncated"), "garbage image: exit 3, %s", err);
	buf[len / 2] ^= 1;
	rc = restore_child(buf, len, 0, "prog", err, sizeof(err));
	ok(rc == 3 && strstr(err, "checksum"), "corrupt image: exit 3, %s", err);
	buf[len / 2] ^= 1;
	rc = restore_child(buf, len, 0, "other", err, sizeof(err));
	ok(rc == 3 && strstr(err, "cannot restore into"), "wrong program: exit 3, %s", err);
	rc = restore_child(buf, len, 50, "prog", err, sizeof(err));
	ok(rc == 3 && strstr(err, "RLIMIT_SIGPENDING") && strstr(err, "nothing requeued"),
	   "RLIMIT_SIGPENDING too low: exit 3, %s", err);
	ok(err[0] && !strchr(err, '\n'), "the reason is one line");
	free(buf);
	free(q);
}

static _Atomic int worker_ret[2];

static void *restore_worker(void *arg)
{
	unsigned int index = (unsigned int)(uintptr_t)arg;

	worker_ret[index] = sigmig_thread_register(index);
	return NULL;
}

/* What failing_restore()'s leader must get from the restore. */
static int failing_restore_error = -ENOENT;

/*
 * In a child: restore @img into two threads, main leading from
 * sigmig_thread_register(0) or from sigmig_runtime_wait_ready(). The
 * image is one this process cannot take (a handler it lacks, say), so the
 * restore fails once every thread has registered. Exit 3 with the reason
 * on stderr when the leader got failing_restore_error and every other
 * thread -ECANCELED, as a program would.
 */
static int failing_restore(const char *img, int main_registers)
{
	char path[108], why[256];
	struct sigmig_runtime_opts o = { .ctl_path = path, .program = "prog",
					 .restore_image = img, .nthreads = 2 };
	unsigned int i, first = main_registers ? 1 : 0;
	pthread_t th[2];
	int ret;

	snprintf(path, sizeof(path), "/tmp/sigmig-test-fail-%d.sock", getpid());
	if (sigmig_runtime_start(&o, why, sizeof(why))) {
		fprintf(stderr, "start: %s\n", why);
		return 10;
	}
	for (i = first; i < 2; i++)
		pthread_create(&th[i], NULL, restore_worker, (void *)(uintptr_t)i);
	if (main_registers && sigmig_thread_register(0) != failing_restore_error)
		return 11;
	ret = sigmig_runtime_wait_ready(why, sizeof(why));
	for (i = first; i < 2; i++)
		pthread_join(th[i], NULL);
	if (ret != failing_restore_error)
		return 12;
	for (i = first; i < 2; i++)
		if (worker_ret[i] != -ECANCELED)
			return 13;
	sigmig_runtime_stop();
	fprintf(stderr, "sigmig restore: %s\n", why);
	return 3;
}

static void test_failing_restore(void)
{
	char img[] = "/tmp/sigmig-test-imgXXXXXX", err[512];
	struct sigmig_disposition *d;
	struct sigmig_image image;
	uint8_t *buf;
	size_t len;
	int fd, rc, how;

	memset(&image, 0, sizeof(image));
	image.version = SIGMIG_IMAGE_VERSION;
	image.arch = 62;	/* EM_X86_64 */
	strcpy(image.program, "prog");
	d = &image.dispositions[SIGUSR2 - 1];
	d->kind = SIGMIG_HANDLER_NAMED;
	strcpy(d->handler, "not_here");
	if (sigmig_image_encode(&image, &buf, &len))
		return (void)ok(0, "encode an image naming a missing handler");
	fd = mkstemp(img);
	if (write(fd, buf, len) != (ssize_t)len)
		ok(0, "write the image");
	close(fd);
	free(buf);
	for (how = 0; how < 2; how++) {
		rc = in_child(failing_restore, img, how, err, sizeof(err));
		if (!ok(rc == 3 && !strchr(err, '\n') &&
			strstr(err, "handler \"not_here\" is not registered"),
			"restore fails after registration (main %s): the leader gets the reason, the others -ECANCELED, rc=%d",
			how ? "registered" : "waits", rc))
			diag_lines(err);
	}
	unlink(img);
}

/*
 * Timer ids come from the image: an id near INT_MAX must be refused after
 * a bounded number of fillers, not walked to. The child's CPU time is
 * capped so that a restore which walks them fails this test instead of
 * hanging it.
 */
static int far_timer_restore(const char *img, int unused)
{
	struct rlimit cpu = { 20, 20 };

	setrlimit(RLIMIT_CPU, &cpu);
	return failing_restore(img, unused);
}

static void test_far_timer_id(void)
{
	char img[] = "/tmp/sigmig-test-imgXXXXXX", err[512];
	struct sigmig_timer timers[2] = {
		{ .id = 0, .clock = CLOCK_MONOTONIC, .notify = SIGEV_SIGNAL,
		  .signo = SIGUSR1 },
		{ .id = 0x7fffffff, .clock = CLOCK_MONOTONIC,
		  .notify = SIGEV_SIGNAL, .signo = SIGUSR1 },
	};
	struct sigmig_image image;
	struct timespec t0, t1;
	uint8_t *buf;
	size_t len;
	int fd, rc;
	double s;

	memset(&image, 0, sizeof(image));
	image.version = SIGMIG_IMAGE_VERSION;
	image.arch = 62;	/* EM_X86_64 */
	strcpy(image.program, "prog");
	image.ntimers = 2;
	image.timers = timers;
	if (sigmig_image_encode(&image, &buf, &len))
		return (void)ok(0, "encode an image with timer id INT_MAX");
	fd = mkstemp(img);
	if (write(fd, buf, len) != (ssize_t)len)
		ok(0, "write the image");
	close(fd);
	free(buf);
	failing_restore_error = -E2BIG;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = in_child(far_timer_restore, img, 0, err, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	failing_restore_error = -ENOENT;
	s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (!ok(rc == 3 && strstr(err, "timer id 2147483647 is more than") && s < 10,
		"timer id INT_MAX in an image is refused in %.2f s (rc=%d)", s, rc))
		diag_lines(err);
	unlink(img);
}

static void commit_exit(void)
{
	_exit(42);
}

static void *idle_worker(void *arg)
{
	(void)arg;
	if (sigmig_thread_register(0))
		return NULL;
	for (;;)
		pause();
}

/* In a child: a runtime whose COMMIT ends the process through its hook. */
static int committing_child(const char *path, int unused)
{
	struct sigmig_runtime_opts o = { .ctl_path = path, .program = "commit",
					 .nthreads = 1, .commit_exit = commit_exit };
	char why[256];
	pthread_t th;

	(void)unused;
	if (sigmig_runtime_start(&o, why, sizeof(why)))
		return 10;
	pthread_create(&th, NULL, idle_worker, NULL);
	pthread_join(th, NULL);
	return 11;	/* not reached: COMMIT ends the process */
}

static int wait_answer(const char *path)
{
	int i;

	for (i = 0; i < 500; i++) {
		if (answers(path, "STATUS", "\"threads\":[{", 1))
			return 1;
		usleep(10000);
	}
	return 0;
}

static void test_commit(void)
{
	char path[108], errf[] = "/tmp/sigmig-test-errXXXXXX", err[512];
	int status = -1, efd = mkstemp(errf);
	ssize_t len;
	pid_t pid;

	snprintf(path, sizeof(path), "/tmp/sigmig-test-commit-%d.sock", getpid());
	pid = fork();
	if (pid == 0) {
		dup2(efd, 2);
		_exit(committing_child(path, 0));
	}
	ok(wait_answer(path), "committing child answers STATUS");
	ok(request_on(path, "COMMIT", "\"error\":\"wrong_state\""), "COMMIT when running: wrong_state");
	ok(request_on(path, "FREEZE", "\"freeze_ns\":"), "FREEZE the child");
	ok(request_on(path, "COMMIT", "{\"ok\":true}"), "COMMIT answers ok");
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 42,
	   "the program's commit_exit hook ended it (status 0x%x)", status);
	ok(access(path, F_OK) != 0, "the control socket is gone");
	len = pread(efd, err, sizeof(err) - 1, 0);
	err[len > 0 ? len : 0] = '\0';
	if (!ok(len <= 0, "the committed child wrote nothing to stderr"))
		diag_lines(err);
	close(efd);
	unlink(errf);
}

/*
 * A freeze while a thread is inside fork()'s lock window, waiting for a lock
 * that another registered thread holds: the holder must not be parked with
 * it (the forking thread, its freeze signal blocked, would then never park).
 * The lock is taken by an atfork prepare handler registered before the
 * runtime, so inside the window, as libc takes its malloc arena locks.
 */
static pthread_mutex_t window_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int window_holder_ready, forker_in_window;
static _Atomic pid_t forker_tid;

static void window_prepare(void)
{
	if ((pid_t)syscall(SYS_gettid) != forker_tid)
		return;
	forker_in_window = 1;
	pthread_mutex_lock(&window_lock);
}

static void window_parent(void)
{
	if ((pid_t)syscall(SYS_gettid) == forker_tid)
		pthread_mutex_unlock(&window_lock);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void *window_holder(void *arg)
{
	(void)arg;
	if (sigmig_thread_register(0))
		return NULL;
	pthread_mutex_lock(&window_lock);
	window_holder_ready = 1;
	sleep_ms(300);
	pthread_mutex_unlock(&window_lock);
	while (!stop)
		sleep_ms(1);
	return NULL;
}

static void *window_forker(void *arg)
{
	pid_t child;

	(void)arg;
	if (sigmig_thread_register(1))
		return NULL;
	while (!window_holder_ready)
		sleep_ms(1);
	forker_tid = (pid_t)syscall(SYS_gettid);
	child = fork();
	if (child == 0)
		_exit(0);
	if (child > 0)
		waitpid(child, NULL, 0);
	while (!stop)
		sleep_ms(1);
	return NULL;
}

/* In a child: 0 if FREEZE and THAW both answer ok, else what failed. */
static int freezing_forker_child(const char *path, int unused)
{
	struct sigmig_runtime_opts o = { .ctl_path = path, .program = "fork-window",
					 .nthreads = 2 };
	char why[256];
	pthread_t th[2];
	int ret = 0;

	(void)unused;
	pthread_atfork(window_prepare, window_parent, NULL);
	if (sigmig_runtime_start(&o, why, sizeof(why)))
		return 10;
	pthread_create(&th[0], NULL, window_holder, NULL);
	pthread_create(&th[1], NULL, window_forker, NULL);
	while (!forker_in_window)
		sleep_ms(1);
	sleep_ms(20);
	if (!answers(path, "FREEZE", "\"freeze_ns\":", 0))
		ret = 1;
	else if (!answers(path, "THAW", "\"ok\":true", 0))
		ret = 2;
	stop = 1;
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	sigmig_runtime_stop();
	fflush(stdout);
	return ret;
}

static void test_freeze_during_fork(void)
{
	char path[108], err[512];
	uint64_t start = (uint64_t)time(NULL);
	int rc;

	snprintf(path, sizeof(path), "/tmp/sigmig-test-fork-%d.sock", getpid());
	rc = in_child(freezing_forker_child, path, 0, err, sizeof(err));
	if (!ok(rc == 0, "FREEZE while a thread waits inside fork() for a registered thread's "
		"lock: answered ok (child rc=%d, %llus)", rc,
		(unsigned long long)((uint64_t)time(NULL) - start)))
		diag_lines(err);
	unlink(path);
}

int main(void)
{
	snprintf(sock, sizeof(sock), "/tmp/sigmig-test-%d/ctl.sock", getpid());
	tap_plan_start();
	/* the children first: fork() before this process has threads */
	test_restore_refusals();
	test_failing_restore();
	test_far_timer_id();
	test_commit();
	test_freeze_during_fork();
	test_protocol();
	return tap_done();
}
