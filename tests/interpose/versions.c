// SPDX-License-Identifier: MIT
/*
 * versions: the interposer defines every runtime entry point of its list
 * (userlib/interpose/entries.h) under each runtime's symbol version it
 * exists in (libcudart.so.11.0, .12, .13; .13's the default), and the
 * real runtime of the toolkit exports exactly those names under its
 * version, so that a program linked against it binds the interposer's;
 * every driver entry point of the list under the interposer's own
 * version.  dlsym and dlvsym are defined under both of glibc's versions
 * (and dlvsym, hooked, hands out ours).
 */
#include "ip_test.h"
#include "entries.h"

static const char *const runtime_versions[] = {
	IP_RT_VERSION_0, IP_RT_VERSION_1, IP_RT_VERSION_2,
};

/* name and whether each runtime version has it. */
static const struct { const char *name; int in[3]; } runtime_entries[] = {
#define ROW(name, kind, versions, params, args) { #name, { IP_UNPAREN versions } },
	IP_RUNTIME_ENTRIES(ROW)
#undef ROW
};

static const char *const driver_entries[] = {
#define ROW(name, kind, params, args) #name,
	IP_DRIVER_ENTRIES(ROW)
#undef ROW
};
#define N(a) (sizeof(a) / sizeof((a)[0]))

TEST(interposer_has_each_runtime_version)
{
	unsigned int i, v, missing = 0;

	for (i = 0; i < N(runtime_entries); i++)
		for (v = 0; v < N(runtime_versions); v++) {
			void *fn = dlvsym(RTLD_DEFAULT, runtime_entries[i].name,
					  runtime_versions[v]);

			if (runtime_entries[i].in[v] && !ip_is_ours(fn)) {
				fprintf(stderr, "# not ours: %s@%s\n",
					runtime_entries[i].name, runtime_versions[v]);
				missing++;
			}
		}
	EXPECT_EQ(0, missing);
	/* The default (unversioned lookups) is 13's. */
	EXPECT_EQ(dlvsym(RTLD_DEFAULT, "cudaHostAlloc", "libcudart.so.13"),
		  dlsym(RTLD_DEFAULT, "cudaHostAlloc"));
}

TEST(interposer_has_each_driver_entry)
{
	unsigned int i, missing = 0;

	for (i = 0; i < N(driver_entries); i++)
		if (!ip_is_ours(dlvsym(RTLD_DEFAULT, driver_entries[i],
				       "GPUPOOL_INTERPOSE_1")) ||
		    !ip_is_ours(dlsym(RTLD_DEFAULT, driver_entries[i]))) {
			fprintf(stderr, "# not ours: %s\n", driver_entries[i]);
			missing++;
		}
	EXPECT_EQ(0, missing);
}

TEST(the_real_runtime_exports_the_same)
{
	void *dl = dlopen(tests_real_cudart, RTLD_LAZY | RTLD_LOCAL);
	unsigned int i, missing = 0;

	if (!dl)
		SKIP(return, "no CUDA toolkit runtime at %s", tests_real_cudart);
	/* dlvsym() finds it, and hands out ours (dlsym.c): it would find
	 * nothing if the runtime lacked it.
	 */
	for (i = 0; i < N(runtime_entries); i++) {
		void *found = dlvsym(dl, runtime_entries[i].name, "libcudart.so.13");

		if (!found || !ip_is_ours(found)) {
			fprintf(stderr, "# the runtime lacks %s@libcudart.so.13\n",
				runtime_entries[i].name);
			missing++;
		}
	}
	/* And the double, which stands in for it. */
	dl = dlopen(tests_cudart, RTLD_LAZY | RTLD_LOCAL);
	ASSERT_NE(NULL, dl);
	for (i = 0; i < N(runtime_entries); i++)
		if (!strstr(runtime_entries[i].name, "_ptsz") &&
		    !dlvsym(dl, runtime_entries[i].name, "libcudart.so.13")) {
			fprintf(stderr, "# the double lacks %s\n",
				runtime_entries[i].name);
			missing++;
		}
	EXPECT_EQ(0, missing);
}

TEST(dlsym_and_dlvsym_under_both_glibc_versions)
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
	EXPECT_TRUE(ip_is_ours(dlvsym(RTLD_DEFAULT, "dlvsym", "GLIBC_2.34")));
	EXPECT_TRUE(ip_is_ours(dlvsym(RTLD_DEFAULT, "dlvsym", old)));
}

static const struct ip_scenario scenarios[] = { { NULL, NULL } };
IP_TEST_MAIN(scenarios)
