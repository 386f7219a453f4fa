// SPDX-License-Identifier: MIT
/*
 * hello_pool - the smallest honest use of libgpupool: open a context (the
 * kernel backend when gpupool.ko is loaded, else the user backend), say
 * which one it got, take a few pinned buffers of exact sizes, fill each with
 * a pattern, read it back with a checksum, free them, print the pool's
 * figures.
 *
 * Usage: hello_pool [SIZE...]   (sizes in bytes, K/M/G suffixes allowed)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpupool.h>

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'G': case 'g': v <<= 10; /* fall through */
	case 'M': case 'm': v <<= 10; /* fall through */
	case 'K': case 'k': v <<= 10; end++; break;
	}
	if (*end || end == s) {
		fprintf(stderr, "hello_pool: '%s' is not a size\n", s);
		exit(2);
	}
	return (size_t)v;
}

/* FNV-1a over the buffer: proves every byte written arrived. */
static uint64_t checksum(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = { "4096", "1000000", "16M", "129M" };
	const char *const *sizes = argc > 1 ? (const char *const *)argv + 1 : defaults;
	int n = argc > 1 ? argc - 1 : 4;
	struct gp_ctx *ctx;
	struct gp_info info;
	struct gp_host_stats st;
	int ret, failed = 0;

	ret = gp_open(NULL, &ctx);
	if (ret) {
		fprintf(stderr, "hello_pool: gp_open: %s\n", gp_last_error(NULL));
		return 1;
	}
	gp_info(ctx, &info);
	printf("backend: %s (%s)\n", info.backend_name, info.why);
	if (info.backend == GP_BACKEND_KERNEL)
		printf("module ABI %u.%u, library ABI %u.%u\n", info.kmod_abi_major,
		       info.kmod_abi_minor, info.abi_major, info.abi_minor);
	printf("CUDA: %s\n", info.cuda_state == GP_CUDA_REGISTERED ?
	       "buffers registered with cudaHostRegister" :
	       "off, buffers are pinned but not registered");

	for (int i = 0; i < n; i++) {
		size_t size = parse_size(sizes[i]);
		unsigned char *buf;
		uint64_t want, got;

		ret = gp_host_alloc(ctx, size, 0, (void **)&buf);
		if (ret) {
			printf("alloc %zu bytes: %s\n", size, gp_last_error(ctx));
			failed = 1;
			continue;
		}
		/* Pool memory arrives zeroed; check the first and last byte. */
		if (buf[0] || buf[size - 1])
			printf("  buffer of %zu bytes was not zero!\n", size), failed = 1;
		for (size_t j = 0; j < size; j++)
			buf[j] = (unsigned char)(j * 131 + i);
		want = 1469598103934665603ull;
		for (size_t j = 0; j < size; j++)
			want = (want ^ (unsigned char)(j * 131 + i)) * 1099511628211ull;
		got = checksum(buf, size);
		gp_host_stats(ctx, &st);
		printf("alloc %10zu bytes -> %p, checksum %s, pool holds %llu bytes\n",
		       size, (void *)buf, got == want ? "ok" : "WRONG",
		       (unsigned long long)st.reserved);
		failed |= got != want;
		gp_host_free(ctx, buf);
	}
	gp_host_stats(ctx, &st);
	printf("allocs %llu, frees %llu, segments mapped %llu, peak %llu bytes\n",
	       (unsigned long long)st.allocs, (unsigned long long)st.frees,
	       (unsigned long long)st.map_calls,
	       (unsigned long long)st.peak_reserved);
	gp_close(ctx);
	return failed;
}
