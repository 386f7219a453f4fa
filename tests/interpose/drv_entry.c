// SPDX-License-Identifier: MIT
/*
 * drv_entry: the interposer's dlsym() and dlvsym() entries (assembly:
 * userlib/interpose/dlsym_*.S).
 *
 * - dlvsym() is hooked like dlsym(): on the runtime (by its versions; the
 *   driver has none, and dlvsym() finds nothing unversioned) it hands out
 *   the interposer's entry points; everything else is the real answer,
 *   RTLD_NEXT stays relative to the caller.
 * - A backtrace taken inside a lookup made through the entry (an IFUNC's
 *   resolver, which dlsym() and dlvsym() run: libunwind_probe.so) finds
 *   the caller's frame, through the handle path and the RTLD_DEFAULT one.
 * - gdb, in batch mode, stopped in the entry's one frame of its own (its
 *   first call binds the real function: ip_dlsym_resolve) unwinds
 *   through it to the program's first frame: the CFI describes it.
 * - Built with the target's branch protection (-fcf-protection,
 *   -mbranch-protection=standard), the entry's object says so in its GNU
 *   property note: an object without it drops IBT and SHSTK, or BTI and
 *   PAC, for the whole library.
 */
#include "ip_test.h"

#include <sys/stat.h>

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

TEST(dlvsym_on_the_runtime)
{
	void *rt = dlopen(tests_cudart, RTLD_NOW | RTLD_LOCAL);

	ASSERT_NE(NULL, rt);
	dlerror();
	EXPECT_EQ(dlvsym(RTLD_DEFAULT, "cudaHostAlloc", "libcudart.so.13"),
		  dlvsym(rt, "cudaHostAlloc", "libcudart.so.13"));
	EXPECT_EQ(NULL, dlerror());
	EXPECT_TRUE(ip_is_ours(dlvsym(rt, "cudaGetLastError", "libcudart.so.13")));
	EXPECT_TRUE(ip_is_ours(dlvsym(rt, "cudaGetDriverEntryPointByVersion",
				      "libcudart.so.13")));
	/* What it does not wrap, and what the runtime does not have. */
	EXPECT_FALSE(ip_is_ours(dlvsym(rt, "cudaMalloc", "libcudart.so.13")));
	EXPECT_NE(NULL, dlvsym(rt, "cudaMalloc", "libcudart.so.13"));
	EXPECT_EQ(NULL, dlvsym(rt, "cudaHostAlloc", "libcudart.so.9"));
	EXPECT_NE(NULL, dlerror());
	/* RTLD_NEXT from here: the interposer's, then libc's. */
	EXPECT_TRUE(ip_is_ours(dlvsym(RTLD_NEXT, "cuMemFreeHost",
				      "GPUPOOL_INTERPOSE_1")));
	EXPECT_NE(NULL, dlvsym(RTLD_NEXT, "malloc", "GLIBC_2.2.5") ?:
		  dlvsym(RTLD_NEXT, "malloc", "GLIBC_2.17"));
}

/* The functions that look up, each in a section of its own: whether a
 * frame is theirs is exact (__start_ and __stop_ of the section).
 */
#define CALLER(sec) __attribute__((noinline, noclone, used, section(#sec)))
extern const char __start_ip_by_handle[], __stop_ip_by_handle[];
extern const char __start_ip_by_default[], __stop_ip_by_default[];
extern const char __start_ip_by_version[], __stop_ip_by_version[];

CALLER(ip_by_handle) void *by_handle(dlsym_fn f, void *dl)
{
	void *p = f(dl, "unwind_probe");

	__asm__ volatile("" ::: "memory");	/* not a tail call */
	return p;
}

CALLER(ip_by_default) void *by_default(dlsym_fn f)
{
	void *p = f(RTLD_DEFAULT, "unwind_probe");

	__asm__ volatile("" ::: "memory");
	return p;
}

CALLER(ip_by_version) void *by_version(dlvsym_fn f, void *dl)
{
	void *p = f(dl, "unwind_probe", "UNWIND_PROBE_1");

	__asm__ volatile("" ::: "memory");
	return p;
}

/* Is one of the probe's last frames between start and stop? */
static int frame_in(void *const *(*frames)(int *), const char *start,
		    const char *stop)
{
	void *const *f;
	int i, n = 0;

	f = frames(&n);
	for (i = 0; i < n; i++)
		if ((const char *)f[i] >= start && (const char *)f[i] < stop)
			return 1;
	return 0;
}

TEST(a_backtrace_inside_finds_the_caller)
{
	void *dl = dlopen(tests_unwind_probe, RTLD_NOW | RTLD_GLOBAL);
	void *const *(*frames)(int *);
	dlsym_fn f = (dlsym_fn)dlsym(RTLD_DEFAULT, "dlsym");
	dlvsym_fn fv = (dlvsym_fn)dlsym(RTLD_DEFAULT, "dlvsym");

	ASSERT_NE(NULL, dl);
	ASSERT_TRUE(ip_is_ours(f) && ip_is_ours(fv));
	*(void **)&frames = dlsym(dl, "unwind_probe_frames");
	ASSERT_NE(NULL, frames);
	EXPECT_NE(NULL, by_handle(f, dl));
	EXPECT_TRUE(frame_in(frames, __start_ip_by_handle, __stop_ip_by_handle));
	EXPECT_NE(NULL, by_default(f));
	EXPECT_TRUE(frame_in(frames, __start_ip_by_default, __stop_ip_by_default));
	EXPECT_NE(NULL, by_version(fv, dl));
	EXPECT_TRUE(frame_in(frames, __start_ip_by_version, __stop_ip_by_version));
}

/* gdb's backtrace at the entry's binder: frames, one a line. */
static int gdb_backtrace(char *out, size_t len)
{
	char cmd[1024];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "env -u LD_PRELOAD gdb -nx -batch -ex 'set startup-with-shell off' "
		 "-ex 'set environment LD_PRELOAD=%s' "
		 "-ex 'set breakpoint pending on' -ex 'break ip_dlsym_resolve' "
		 "-ex run -ex bt -ex kill --args /proc/%d/exe --scenario none 2>&1",
		 tests_interposer,
		 (int)getpid());
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n + 1 < len && fgets(out + n, (int)(len - n), p))
		n += strlen(out + n);
	return pclose(p);
}

/* Is this frame of gdb's the start of the process (ld.so's, whose own
 * frames beyond it gdb cannot tell), or main?
 */
static int outermost(const char *line, const char *eol)
{
	static const char *const first[] = { " _dl_start_user ", " _start ",
					     " main (", " __libc_start_main" };
	unsigned int i;
	const char *at;

	for (i = 0; i < sizeof(first) / sizeof(first[0]); i++) {
		at = strstr(line, first[i]);
		if (at && at < eol)
			return 1;
	}
	return 0;
}

/* gdb, stopped in the entry's binder: every frame from the entry to the
 * process's first (whoever made the first lookup: a sanitizer's runtime
 * does, before main) is a named function.
 */
TEST(gdb_unwinds_through_the_entry)
{
	static char out[65536];
	const char *line, *eol;
	int unnamed = 0, reached = 0;

	if (system("env -u LD_PRELOAD gdb --version >/dev/null 2>&1"))
		SKIP(return, "no gdb");
	gdb_backtrace(out, sizeof(out));
	if (strstr(out, "ptrace: Operation not permitted") ||
	    strstr(out, "Couldn't get registers"))
		SKIP(return, "gdb cannot trace here");
	line = strstr(out, "\n#1 ");
	ASSERT_NE(NULL, line) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(line, " in ip_dlsym_entry")) TH_LOG("%s", out);
	for (line++; *line == '#' && !reached; line = eol + 1) {
		eol = strchr(line, '\n');
		if (!eol)
			break;
		unnamed += strstr(line, " in ?? (") && strstr(line, " in ?? (") < eol;
		reached = outermost(line, eol);
	}
	EXPECT_EQ(0, unnamed) TH_LOG("%s", out);
	EXPECT_TRUE(reached) TH_LOG("%s", out);
}

TEST(the_entry_keeps_branch_protection)
{
	char cmd[512], line[256];
	int found = 0;
	struct stat st;
	FILE *p;

	if (stat(tests_entry_hardened, &st) || !st.st_size)
		SKIP(return, "no entry on this architecture");
	snprintf(cmd, sizeof(cmd), "env -u LD_PRELOAD readelf -n %s 2>&1",
		 tests_entry_hardened);
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	while (fgets(line, sizeof(line), p))
		found |= strstr(line, "x86 feature: IBT, SHSTK") ||
			 strstr(line, "AArch64 feature: BTI, PAC");
	if (pclose(p) && !found)
		SKIP(return, "no readelf");
	EXPECT_TRUE(found);
}

static const struct ip_scenario scenarios[] = { { NULL, NULL } };
IP_TEST_MAIN(scenarios)
