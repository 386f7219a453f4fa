/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the in-VM tests (tests/vm/NAME.c): loading and unloading
 * gpupool.ko, skipping cleanly when something they need is missing.
 *
 * The tests run as root inside the test VM (vm/run-vm.sh), which passes the
 * module's path in GPUPOOL_KO.  Run by hand elsewhere, they skip.
 *
 * Loading uses finit_module(2) and unloading delete_module(2) directly, so
 * nothing but the kernel is needed.  delete_module() is called with
 * O_NONBLOCK: while the module is in use (an open /dev/gpupool, a mapping,
 * an exported chunk fd) it fails with EAGAIN (== EWOULDBLOCK) at once.
 */
#ifndef GPUPOOL_TESTS_VM_LIB_H
#define GPUPOOL_TESTS_VM_LIB_H

/*
 * Every test program includes kselftest_harness.h first, whose bound of 30 s
 * per test is made for a native machine.  Here the tests run under TCG, on a
 * host whose two cores also run another VM of make check, and a CI machine
 * can be slower still: the stress test, 8 s alone, was cut off at 30 s in
 * one CI run, and reserving most of the VM's memory takes from 7 s alone to
 * 36 s.  A hung test is still caught, here after 180 s and by the runner's
 * bound per program (vm/run-vm.sh --test-timeout); tests that need longer
 * say so with TEST_F_TIMEOUT.
 */
#ifdef TEST_TIMEOUT_DEFAULT
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 180
#endif

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GP_MODNAME	"gpupool"
#define GP_DEV		"/dev/gpupool"
#define GP_PROC		"/proc/gpupool"
#define GP_SYSMOD	"/sys/module/gpupool"

/* Small pool for tests that don't care about its size: fast to reserve
 * under TCG.
 */
#define GP_TEST_PARAMS	"pool_size=16M"

/* The module to test, or NULL when the runner gave none. */
static inline const char *gp_ko(void)
{
	const char *p = getenv("GPUPOOL_KO");

	return p && *p ? p : NULL;
}

/* 1 if gpupool is loaded (in any state), 0 if not. */
static inline int gp_loaded(void)
{
	char line[256];
	int found = 0;
	FILE *f = fopen("/proc/modules", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, GP_MODNAME " ", strlen(GP_MODNAME) + 1)) {
			found = 1;
			break;
		}
	}
	fclose(f);
	return found;
}

/* Load the module with these parameters ("" or NULL for none).
 * Returns 0 or -errno (e.g. -EEXIST when already loaded, -EINVAL for a bad
 * parameter value).
 */
static inline int gp_load(const char *params)
{
	const char *ko = gp_ko();
	int fd, ret, err;

	if (!ko)
		return -ENOENT;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params ? params : "", 0);
	err = errno;
	close(fd);
	return ret ? -err : 0;
}

/* One unload attempt: 0, or -errno (-EAGAIN while in use, -ENOENT when not
 * loaded).
 */
static inline int gp_unload(void)
{
	return syscall(SYS_delete_module, GP_MODNAME, O_NONBLOCK) ? -errno : 0;
}

/* Unload, retrying for up to `ms` milliseconds while the module is still
 * referenced (e.g. by a child that is exiting).  0 or -errno; not being
 * loaded counts as success.
 */
static inline int gp_unload_wait(int ms)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int ret;

	for (;;) {
		ret = gp_unload();
		if (ret == -ENOENT)
			return 0;
		if (ret != -EAGAIN && ret != -EBUSY)
			return ret;
		if (ms <= 0)
			return ret;
		nanosleep(&ts, NULL);
		ms -= 10;
	}
}

/* Why this test cannot run here, or NULL when it can: root, the module
 * file, and no copy of the module left loaded that cannot be removed.
 */
static inline const char *gp_cannot_run(void)
{
	static char why[256];
	const char *ko = gp_ko();

	if (geteuid() != 0)
		return "needs root (run inside the test VM: vm/run-vm.sh)";
	if (!ko)
		return "GPUPOOL_KO not set (run inside the test VM: vm/run-vm.sh --ko ...)";
	if (access(ko, R_OK)) {
		snprintf(why, sizeof(why), "%s: %s", ko, strerror(errno));
		return why;
	}
	if (gp_loaded() && gp_unload_wait(2000)) {
		snprintf(why, sizeof(why),
			 "gpupool is loaded and cannot be unloaded (%s)",
			 strerror(-gp_unload()));
		return why;
	}
	return NULL;
}

/*
 * For a FIXTURE_SETUP (and TEST bodies): skip the test, with a reason,
 * when it cannot run.  In the kselftest harness of Linux 6.1 a SKIP() in a
 * fixture's setup does not stop the test body from running: jump back to
 * the harness the way a failed ASSERT does, so that neither the body nor
 * the teardown runs and the test is reported as skipped.
 */
#define GP_SKIP(fmt, ...) \
	SKIP(longjmp(_metadata->env, 1), fmt, ##__VA_ARGS__)

#define GP_REQUIRE() do { \
	const char *__why = gp_cannot_run(); \
	if (__why) \
		GP_SKIP("%s", __why); \
} while (0)

#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK	0x40000000	/* <linux/sched.h>; glibc's needs _GNU_SOURCE */
#endif

/*
 * For a test whose driver starts, SIGKILLs and replaces busy worker
 * processes: run the driver ahead of them (SCHED_FIFO), and its children
 * at the normal policy (SCHED_RESET_ON_FORK).  Under the normal policy,
 * 64 workers that never sleep leave the driver one share in 65 of the
 * VM's 2 CPUs: on the debug kernel, starting 64 workers took 40-65 s
 * and a driver meant to SIGKILL one every 20-80 ms for 20 s killed 7.
 * The driver sleeps between its steps, so the workers keep the CPUs.
 * Where the policy cannot be had, the test goes on at the normal one and
 * says so.  Kill workers with gp_kill_now().
 */
static inline void gp_driver_first(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp))
		ksft_print_msg("the driver stays at the normal policy: %s\n",
			       strerror(errno));
}

/*
 * SIGKILL a worker and let it die at once: its exit (unmapping, closing
 * its files, its chunks' last references) runs at the driver's policy.
 * A killed task that waits for its turn among 64 busy ones took 1.5-5 s
 * to be reaped on the debug kernel.  kill()'s result.
 */
static inline int gp_kill_now(pid_t pid)
{
	struct sched_param sp = { .sched_priority = 1 };

	sched_setscheduler(pid, SCHED_FIFO, &sp);	/* best effort */
	return kill(pid, SIGKILL);
}

/* Read a whole (small) file into buf, NUL-terminated.  Bytes read or -errno. */
static inline ssize_t gp_read_file(const char *path, char *buf, size_t size)
{
	ssize_t n, total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((size_t)total < size - 1) {
		n = read(fd, buf + total, size - 1 - total);
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (!n)
			break;
		total += n;
	}
	buf[total] = '\0';
	close(fd);
	return total;
}

/* Write a string to a file (sysfs, cgroupfs, tracefs): 0 or -errno. */
static inline int gp_write_file(const char *path, const char *val)
{
	ssize_t n;
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		n = -errno;
	close(fd);
	return n < 0 ? (int)n : n == (ssize_t)strlen(val) ? 0 : -EIO;
}

/* Write a module parameter (those of mode 0644): 0 or -errno. */
static inline int gp_set_param(const char *name, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), GP_SYSMOD "/parameters/%s", name);
	return gp_write_file(path, val);
}

/*
 * reclaim_wait_ms for tests whose asks are answered: an answered ask ends
 * when what it asked for is given back, whatever the bound, so a long one
 * costs nothing and never cuts a slow VM (the debug kernel's, under load)
 * short.  A test of a holder that cannot answer sets a short one.
 */
#define GP_RECLAIM_WAIT_MS	"30000"
#define GP_RECLAIM_WAIT		"reclaim_wait_ms=" GP_RECLAIM_WAIT_MS

/* The value of "Key:" in a `Key: value` text (e.g. /proc/gpupool), leading
 * blanks skipped, copied up to the end of the line; NULL when absent.
 */
static inline const char *gp_proc_value(const char *text, const char *key,
					char *val, size_t size)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, key, klen) && p[klen] == ':') {
			const char *v = p + klen + 1;
			size_t n = 0;

			while (*v == ' ' || *v == '\t')
				v++;
			while (v[n] && v[n] != '\n' && n < size - 1)
				n++;
			memcpy(val, v, n);
			val[n] = '\0';
			return val;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

#endif /* GPUPOOL_TESTS_VM_LIB_H */
