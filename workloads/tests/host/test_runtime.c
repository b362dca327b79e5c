// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of the runtime parts that do not need the patched kernel:
 * control protocol, freeze/thaw (nothing delivered while frozen, all of it
 * after), state errors, and restore refusals (bad image, wrong program,
 * RLIMIT_SIGPENDING) exiting 3 before anything runs. DUMP on a kernel
 * without SFD_RAW must fail cleanly.
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
#include <unistd.h>
#include <sigmig/ctl.h>
#include <sigmig/runtime.h>
#include "tap.h"

static char sock[108];
static _Atomic int delivered;
static _Atomic int stop;
static pid_t tids[2];

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

static int request(const char *verb, const char *expect)
{
	char *json = NULL;
	uint8_t *payload = NULL;
	size_t len;
	int ret = sigmig_ctl_request(sock, verb, &json, &payload, &len, 20000), good;

	good = !ret && json && strstr(json, expect);
	if (!good)
		printf("# %s -> %d %s\n", verb, ret, json ? json : "(null)");
	free(json);
	free(payload);
	return good;
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
	ok(sigmig_runtime_start(&o) == 0, "runtime starts");
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

		dup2(efd, 2);
		if (rlimit) {
			setrlimit(RLIMIT_SIGPENDING, &rl);
			drop_sys_resource();
		}
		sigmig_runtime_start(&o);
		_exit(0);	/* only reached if the restore was not refused */
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

int main(void)
{
	snprintf(sock, sizeof(sock), "/tmp/sigmig-test-%d/ctl.sock", getpid());
	tap_plan_start();
	test_restore_refusals();
	test_protocol();
	return tap_done();
}
