// SPDX-License-Identifier: MIT
/*
 * versions: the interposer defines every runtime entry point it wraps
 * under each runtime's symbol version (libcudart.so.11.0, .12, .13; .13's
 * the default), and the real runtime of the toolkit exports exactly those
 * names under its version, so that a program linked against it binds the
 * interposer's.  dlsym is defined under both of glibc's versions.
 */
#include "ip_test.h"

static const char *const runtime_names[] = {
	"cudaHostAlloc", "cudaMallocHost", "cudaFreeHost", "cudaHostGetFlags",
	"cudaHostGetDevicePointer", "cudaGetDriverEntryPoint",
	"cudaGetDriverEntryPoint_ptsz", "cudaGetDriverEntryPointByVersion",
	"cudaGetDriverEntryPointByVersion_ptsz",
};
static const char *const runtime_versions[] = {
	"libcudart.so.11.0", "libcudart.so.12", "libcudart.so.13",
};
#define N(a) (sizeof(a) / sizeof((a)[0]))

TEST(interposer_has_each_runtime_version)
{
	unsigned int i, v, missing = 0;

	for (i = 0; i < N(runtime_names); i++)
		for (v = 0; v < N(runtime_versions); v++)
			if (!ip_is_ours(dlvsym(RTLD_DEFAULT, runtime_names[i],
					       runtime_versions[v]))) {
				fprintf(stderr, "# not ours: %s@%s\n",
					runtime_names[i], runtime_versions[v]);
				missing++;
			}
	EXPECT_EQ(0, missing);
	/* The default (unversioned lookups) is 13's. */
	EXPECT_EQ(dlvsym(RTLD_DEFAULT, "cudaHostAlloc", "libcudart.so.13"),
		  dlsym(RTLD_DEFAULT, "cudaHostAlloc"));
}

TEST(the_real_runtime_exports_the_same)
{
	void *dl = dlopen(tests_real_cudart, RTLD_LAZY | RTLD_LOCAL);
	unsigned int i, missing = 0;

	if (!dl)
		SKIP(return, "no CUDA toolkit runtime at %s", tests_real_cudart);
	for (i = 0; i < N(runtime_names); i++) {
		void *real = dlvsym(dl, runtime_names[i], "libcudart.so.13");

		if (!real || ip_is_ours(real)) {
			fprintf(stderr, "# the runtime lacks %s@libcudart.so.13\n",
				runtime_names[i]);
			missing++;
		}
	}
	/* And the double, which stands in for it. */
	dl = dlopen(tests_cudart, RTLD_LAZY | RTLD_LOCAL);
	ASSERT_NE(NULL, dl);
	for (i = 0; i < N(runtime_names); i++)
		if (!strstr(runtime_names[i], "_ptsz") &&
		    !dlvsym(dl, runtime_names[i], "libcudart.so.13")) {
			fprintf(stderr, "# the double lacks %s\n", runtime_names[i]);
			missing++;
		}
	EXPECT_EQ(0, missing);
}

TEST(dlsym_under_both_glibc_versions)
{
#if defined(__x86_64__)
	const char *old = "GLIBC_2.2.5";
#elif defined(__aarch64__)
	const char *old = "GLIBC_2.17";
#else
	SKIP(return, "no dlsym entry on this architecture");
	const char *old = "";
#endif
	EXPECT_TRUE(ip_is_ours(dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34")));
	EXPECT_TRUE(ip_is_ours(dlvsym(RTLD_DEFAULT, "dlsym", old)));
}

static const struct ip_scenario scenarios[] = { { NULL, NULL } };
IP_TEST_MAIN(scenarios)
