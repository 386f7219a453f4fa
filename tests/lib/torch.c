// SPDX-License-Identifier: MIT
/*
 * torch: the two entry points PyTorch's CUDAPluggableAllocator loads, as it
 * calls them: alloc(size, device, stream) / free(ptr, size, device, stream),
 * through the default context opened on first use.  Also found by dlsym in
 * the installed shared library under the names docs/library.md gives.
 */
#include "helpers.h"

TEST(alloc_free)
{
	void *p, *q;
	struct rt rt;

	RT_SETUP(&rt);
	if (backend_forced_kernel() && access("/dev/gpupool", F_OK))
		SKIP(return, "GPUPOOL_BACKEND=kernel without /dev/gpupool");
	p = gp_torch_alloc(1 << 20, 0, NULL);
	ASSERT_NE(NULL, p);
	gp_torch_free(p, 1 << 20, 0, NULL);
	q = gp_torch_alloc(1 << 20, 0, NULL);
	ASSERT_EQ(p, q);		/* cached */
	gp_torch_free(q, 1 << 20, 0, NULL);
	ASSERT_EQ(NULL, gp_torch_alloc(0, 0, NULL));
	ASSERT_EQ(NULL, gp_torch_alloc(100, 42, NULL));	/* no such device */
}

TEST(shared_library_symbols)
{
	void *dl = dlopen(tests_libgpupool_so, RTLD_NOW | RTLD_LOCAL);

	if (!dl)
		SKIP(return, "%s not built: %s", tests_libgpupool_so, dlerror());
	ASSERT_NE(NULL, dlsym(dl, "gp_torch_alloc"));
	ASSERT_NE(NULL, dlsym(dl, "gp_torch_free"));
	ASSERT_NE(NULL, dlsym(dl, "gp_open"));
	/* Nothing but the API: the core and internals stay local. */
	ASSERT_EQ(NULL, dlsym(dl, "bfc_alloc"));
	ASSERT_EQ(NULL, dlsym(dl, "gp_seg_create"));
	ASSERT_EQ(NULL, dlsym(dl, "gp_map_put"));
	dlclose(dl);
}

TEST_HARNESS_MAIN
