// SPDX-License-Identifier: MIT
/*
 * share_fork: a GP_HOST_SHARED buffer exported as a descriptor is imported
 * by a child after fork() (with a context of its own) and both see the same
 * bytes, both ways.  Only shared buffers can be exported.
 *
 * With a CUDA runtime, the parent has used CUDA before it forks (it
 * registered the buffer), so in the child CUDA refuses to initialize, as
 * it does for a data loader's fork-started workers: the child's memory is
 * pinned but not registered, and gp_info() says why.
 */
#include "helpers.h"	/* first: it defines _GNU_SOURCE */

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define SIZE ((3u << 20) + 12345)

TEST(fork_import)
{
	struct gp_host_stats st;
	struct gp_info info;
	struct gp_ctx *ctx;
	size_t size = 0;
	void *p, *q;
	int fd, status, cuda;
	struct rt rt;
	pid_t pid;

	cuda = rt_load(&rt) == 0;	/* none: the same, host only */
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_host_alloc(ctx, SIZE, GP_HOST_SHARED, &p));
	ASSERT_EQ(0, gp_info(ctx, &info));
	ASSERT_EQ(cuda ? GP_CUDA_REGISTERED : GP_CUDA_OFF, info.cuda_state);
	fill(p, SIZE, 7);
	ASSERT_EQ(0, gp_host_export(ctx, p, &fd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct gp_ctx *c2;
		int ok;

		if (gp_open(NULL, &c2))
			_exit(10);
		if (gp_host_import(c2, fd, &q, &size) || size < SIZE) {
			fprintf(stderr, "import: %s\n", gp_last_error(c2));
			_exit(11);
		}
		if (cuda && (gp_info(c2, &info) ||
			     info.cuda_state != GP_CUDA_OFF ||
			     !strstr(info.why, "fork()"))) {
			fprintf(stderr, "child: CUDA state %d, %s\n",
				info.cuda_state, info.why);
			_exit(13);
		}
		ok = check_fill(q, SIZE, 7);
		fill(q, SIZE, 99);
		gp_host_free(c2, q);
		gp_close(c2);
		_exit(ok ? 0 : 12);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_TRUE(check_fill(p, SIZE, 99));
	/* Import in this process too: another mapping of the same bytes. */
	ASSERT_EQ(0, gp_host_import(ctx, fd, &q, &size));
	ASSERT_NE(p, q);
	ASSERT_TRUE(check_fill(q, SIZE, 99));
	/* An imported buffer is not exported again (on either backend). */
	ASSERT_EQ(-EINVAL, gp_host_export(ctx, q, &status));
	ASSERT_NE(NULL, strstr(gp_last_error(ctx), "imported"));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_EQ(1, st.exports);
	ASSERT_EQ(1, st.imports);
	ASSERT_EQ(1, st.allocs);	/* p; q is an import */
	ASSERT_EQ(0, gp_host_free(ctx, q));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_EQ(st.allocs + st.imports, st.frees);
	close(fd);
	gp_close(ctx);
}

/* A child that asked for registered memory or nothing (GP_OPEN_REQUIRE_CUDA)
 * gets nothing, with the reason and what to do instead; the parent's
 * memory is untouched.
 */
TEST(fork_require_cuda)
{
	struct gp_options o;
	struct gp_ctx *ctx;
	int status;
	struct rt rt;
	pid_t pid;
	void *p;

	RT_SETUP(&rt);
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_host_alloc(ctx, 1 << 20, 0, &p));	/* CUDA in use */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct gp_ctx *c2;
		int ret;

		gp_options_init(&o);
		o.flags = GP_OPEN_REQUIRE_CUDA;
		if (gp_open(&o, &c2))
			_exit(10);
		ret = gp_host_alloc(c2, 1 << 20, 0, &p);
		if (ret != -EIO || !strstr(gp_last_error(c2), "fork()") ||
		    !strstr(gp_last_error(c2), "spawn")) {
			fprintf(stderr, "child: %d, %s\n", ret, gp_last_error(c2));
			_exit(11);
		}
		gp_close(c2);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	fill(p, 1 << 20, 3);
	ASSERT_TRUE(check_fill(p, 1 << 20, 3));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
}

/* "Either backend imports either kind of descriptor": the child opens the
 * other backend than the parent (a memfd into a kernel-backend context, a
 * gpupool chunk fd into a user-backend one).  Needs /dev/gpupool for the
 * kernel side.
 */
TEST(cross_backend)
{
	struct gp_options o;
	struct gp_info info;
	struct gp_ctx *ctx;
	int fd, status, other;
	size_t size = 0;
	pid_t pid;
	void *p, *q;

	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &info));
	other = info.backend == GP_BACKEND_KERNEL ? GP_BACKEND_USER : GP_BACKEND_KERNEL;
	if (other == GP_BACKEND_KERNEL && access("/dev/gpupool", R_OK | W_OK)) {
		gp_close(ctx);
		SKIP(return, "the kernel backend is not available (no /dev/gpupool)");
	}
	ASSERT_EQ(0, gp_host_alloc(ctx, SIZE, GP_HOST_SHARED, &p));
	fill(p, SIZE, 5);
	ASSERT_EQ(0, gp_host_export(ctx, p, &fd)) TH_LOG("%s", gp_last_error(ctx));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct gp_info ci;
		struct gp_ctx *c2;
		int ok;

		unsetenv("GPUPOOL_BACKEND");	/* it would override o.backend */
		gp_options_init(&o);
		o.backend = other;
		if (gp_open(&o, &c2))
			_exit(10);
		if (gp_info(c2, &ci) || ci.backend != other)
			_exit(11);
		if (gp_host_import(c2, fd, &q, &size) || size < SIZE) {
			fprintf(stderr, "import on the %s backend: %s\n",
				ci.backend_name, gp_last_error(c2));
			_exit(12);
		}
		ok = check_fill(q, SIZE, 5);
		fill(q, SIZE, 6);
		gp_host_free(c2, q);
		gp_close(c2);
		_exit(ok ? 0 : 13);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_TRUE(check_fill(p, SIZE, 6));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	close(fd);
	gp_close(ctx);
}

TEST(export_needs_shared)
{
	struct gp_ctx *ctx;
	void *p;
	int fd;

	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_host_alloc(ctx, 5 << 20, 0, &p));
	ASSERT_EQ(-EINVAL, gp_host_export(ctx, p, &fd));
	ASSERT_NE(NULL, strstr(gp_last_error(ctx), "GP_HOST_SHARED"));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	ASSERT_EQ(-EINVAL, gp_host_import(ctx, 0, &p, NULL));	/* stdin */
	gp_close(ctx);
}

/* A memfd its holder could still shrink is refused (the importer would
 * fault past the new end); the same memfd sealed against shrinking is
 * mapped.  Nothing is counted for the refusal.
 */
TEST(import_needs_shrink_seal)
{
	struct gp_host_stats st;
	struct gp_ctx *ctx;
	size_t size = 0;
	char *p = NULL;
	int fd = memfd_create("not-gpupool", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 2 << 20));
	OPEN(NULL, &ctx);
	ASSERT_EQ(-EINVAL, gp_host_import(ctx, fd, (void **)&p, &size));
	ASSERT_NE(NULL, strstr(gp_last_error(ctx), "F_SEAL_SHRINK"))
		TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_EQ(0, st.imports);
	ASSERT_EQ(0, fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK));
	ASSERT_EQ(0, gp_host_import(ctx, fd, (void **)&p, &size))
		TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(2u << 20, size);
	p[0] = 1;
	p[size - 1] = 2;
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
	close(fd);
}

TEST_HARNESS_MAIN
