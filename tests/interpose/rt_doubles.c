// SPDX-License-Identifier: MIT
/*
 * rt_doubles: the runtime double is built like CUDA's runtime.  Every
 * runtime call of it whose work is the driver's (tests/cudart_double/
 * driver_twins.h) reaches the driver double, through an entry point it
 * took once from cuGetProcAddress_v2, and answers what the driver
 * answered; every name it asks for is one the toolkit's libcudart.so.13
 * asks the driver for (one of its strings: driver_twins.h says how the
 * list was made).  The calls run with the interposer off, so that they
 * reach the runtime double itself.
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"
#include "driver_twins.h"

#include <sys/mman.h>

int cudaThreadExchangeStreamCaptureMode(int *mode);
int cudaStreamIsCapturing(rt_stream s, int *status);

static const char *const twins[] = {
#define TWIN(member, name, params, calls) #name,
	CDD_DRIVER_TWINS(TWIN)
#undef TWIN
};
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Is s one of the strings of the file at path (a NUL on each side)? */
static int has_string(const char *path, const char *s)
{
	size_t n = strlen(s), len;
	struct stat st;
	const char *map, *at;
	int fd = open(path, O_RDONLY), found = 0;

	if (fd < 0 || fstat(fd, &st))
		return -1;
	len = (size_t)st.st_size;
	map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	for (at = map; !found && (at = memmem(at, len - (size_t)(at - map), s, n));
	     at += n)
		found = at > map && !at[-1] && at + n < map + len && !at[n];
	munmap((void *)map, len);
	return found;
}

TEST(the_toolkit_runtime_asks_for_each)
{
	unsigned int i, missing = 0;

	if (access(tests_real_cudart, R_OK))
		SKIP(return, "no CUDA toolkit runtime at %s", tests_real_cudart);
	for (i = 0; i < N(twins); i++)
		if (has_string(tests_real_cudart, twins[i]) != 1) {
			fprintf(stderr, "# %s is not among the runtime's strings\n",
				twins[i]);
			missing++;
		}
	EXPECT_EQ(0, missing);
}

/* calls's driver count moved by one call, its answer the driver's. */
#define REACHES(fn, call, want) __extension__({				\
	uint64_t before_ = drv_counts().calls[fn];			\
	int r_ = (call);						\
									\
	r_ == (want) && drv_counts().calls[fn] > before_ ? 0 :		\
	(fprintf(stderr, "# %s: %d, driver calls %llu -> %llu\n", #call, r_, \
		 (unsigned long long)before_,				\
		 (unsigned long long)drv_counts().calls[fn]), 1);	\
})

/* Every runtime call of the list, with the interposer off. */
static int reach_the_driver(void)
{
	unsigned int (*asked)(const char *) =
		(unsigned int (*)(const char *))drv_sym("cdrv_asked");
	char *reg = malloc(1 << 16);
	int bad = 0, mode = 2, status;
	unsigned int f, i;
	void *p, *d, *g;
	rt_stream s;

	bad += REACHES(CDRV_HOST_ALLOC, cudaHostAlloc(&p, 4096, HOST_MAPPED), 0);
	bad += REACHES(CDRV_HOST_GET_FLAGS, cudaHostGetFlags(&f, p), 0);
	bad += REACHES(CDRV_HOST_GET_DEVPTR, cudaHostGetDevicePointer(&d, p, 0), 0);
	bad += (uintptr_t)d != (uintptr_t)p + CDRV_DEVPTR_DELTA;
	bad += REACHES(CDRV_FREE_HOST, cudaFreeHost(p), 0);
	bad += REACHES(CDRV_FREE_HOST, cudaFreeHost(p), RT_INVALID_VALUE);
	bad += REACHES(CDRV_HOST_ALLOC, cudaMallocHost(&p, 100), 0);
	bad += REACHES(CDRV_FREE_HOST, cudaFreeHost(p), 0);
	bad += REACHES(CDRV_HOST_REGISTER, cudaHostRegister(reg, 1 << 16, 0), 0);
	bad += REACHES(CDRV_HOST_GET_DEVPTR, cudaHostGetDevicePointer(&d, reg + 9, 0), 0);
	bad += REACHES(CDRV_HOST_UNREGISTER, cudaHostUnregister(reg), 0);
	bad += REACHES(CDRV_HOST_UNREGISTER, cudaHostUnregister(reg), 713);
	bad += REACHES(CDRV_CAPTURE_MODE, cudaThreadExchangeStreamCaptureMode(&mode), 0);
	bad += cudaStreamCreate(&s) != 0;
	bad += REACHES(CDRV_CAPTURE_BEGIN, cudaStreamBeginCapture(s, 0), 0);
	bad += REACHES(CDRV_CAPTURE_INFO, cudaStreamIsCapturing(s, &status), 0);
	bad += status != 1;
	bad += REACHES(CDRV_CAPTURE_END, cudaStreamEndCapture(s, &g), 0);
	cudaStreamDestroy(s);
	cudaGetLastError();
	free(reg);
	for (i = 0; i < N(twins); i++)
		if (asked(twins[i]) != 1) {
			fprintf(stderr, "# %s asked %u times\n", twins[i],
				asked(twins[i]));
			bad++;
		}
	return bad;
}

TEST(every_call_reaches_the_driver)
{
	static const char *const env[] = { "GPUPOOL_INTERPOSE_MODE=off", NULL };

	EXPECT_EQ(0, ip_spawn("reach_the_driver", env, NULL));
}

static const struct ip_scenario scenarios[] = {
	{ "reach_the_driver", reach_the_driver },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
