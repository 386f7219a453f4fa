// SPDX-License-Identifier: MIT
/*
 * rt_capture: pin_memory() inside a captured CUDA graph.  While a stream
 * captures in the global mode, CUDA refuses "potentially unsafe" calls
 * (registering host memory, allocating it) and the refusal invalidates
 * the capture (vllm#46933).  Under the interposer a request that fits a
 * registered segment makes no CUDA call at all, and one that needs a new
 * segment registers it with the thread's capture mode relaxed: either
 * way the capture survives.  The runtime double enforces CUDA's rule (the
 * control case shows it).
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"

#define MODE_GLOBAL	0
#define STREAM_CAPTURE_UNSUPPORTED	900
#define STREAM_CAPTURE_INVALIDATED	901

FIXTURE(capture) {
	rt_stream s;
};

FIXTURE_SETUP(capture)
{
	void *p;

	ASSERT_EQ(RT_SUCCESS, cudaStreamCreate(&self->s));
	/* A registered segment exists before the capture. */
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 4096, 0));
	ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
}

FIXTURE_TEARDOWN(capture)
{
	cudaStreamDestroy(self->s);
}

TEST_F(capture, cached_request_makes_no_cuda_call)
{
	struct cdd_counts before, after;
	void *p, *g = NULL;

	ASSERT_EQ(RT_SUCCESS, cudaStreamBeginCapture(self->s, MODE_GLOBAL));
	before = rt_counts();
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 4096, HOST_PORTABLE));
	memset(p, 1, 4096);
	ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
	after = rt_counts();
	EXPECT_EQ(before.calls_in_capture, after.calls_in_capture);
	EXPECT_EQ(RT_SUCCESS, cudaStreamEndCapture(self->s, &g));
	EXPECT_NE(NULL, g);
	EXPECT_EQ(0, rt_counts().capture_refusals);
}

TEST_F(capture, new_segment_keeps_the_capture)
{
	struct cdd_counts before, after;
	void *p, *g = NULL;

	before = rt_counts();
	ASSERT_EQ(RT_SUCCESS, cudaStreamBeginCapture(self->s, MODE_GLOBAL));
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 64 << 20, HOST_PORTABLE));
	ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
	after = rt_counts();
	EXPECT_EQ(before.calls[CDD_HOST_REGISTER] + 1, after.calls[CDD_HOST_REGISTER]);
	EXPECT_EQ(RT_SUCCESS, cudaStreamEndCapture(self->s, &g));
	EXPECT_EQ(0, rt_counts().capture_refusals);
	EXPECT_EQ(1, ip_stats().served >= 2);
}

/* The control: registering without the relaxed mode breaks a capture. */
TEST_F(capture, the_double_enforces_the_rule)
{
	void *g = NULL;
	char *buf = malloc(8192);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(RT_SUCCESS, cudaStreamBeginCapture(self->s, MODE_GLOBAL));
	EXPECT_EQ(STREAM_CAPTURE_UNSUPPORTED, cudaHostRegister(buf, 8192, 0));
	EXPECT_EQ(STREAM_CAPTURE_INVALIDATED, cudaStreamEndCapture(self->s, &g));
	cudaGetLastError();
	free(buf);
}

static const struct ip_scenario scenarios[] = { { NULL, NULL } };
IP_TEST_MAIN(scenarios)
