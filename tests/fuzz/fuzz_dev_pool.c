// SPDX-License-Identifier: MIT
/*
 * fuzz_dev_pool.c - libFuzzer harness for libgpupool's device pool
 * (userlib/dev*.c) in both of its modes, through the CUDA runtime test
 * double (tests/cudart_double), which checks every runtime and driver call
 * as strictly as the CUDA documentation specifies it.
 *
 * The input chooses the mode (cudaMalloc segments, or the virtual mode with
 * a 2 MiB or 512 KiB granularity), the device's memory, a pool limit or
 * none, and then a program of operations on two streams: allocations of
 * any size (up to 2^64 - 1), now and then with cuMemCreate refused after a
 * few calls or cudaMalloc refused above a size; frees on the block's stream
 * or on the other one (stream-ordered: the block waits for an event), with
 * events held incomplete or completed; gp_dev_record_stream; frees of
 * pointers that are no block (must fail with -EINVAL and change nothing);
 * gp_dev_trim.
 *
 * What must hold after every operation: no crash, no sanitizer report; no
 * block larger than the device's memory, none overlapping a live block;
 * every live block's stamped bytes read back intact (a trim that unmapped a
 * granule under a live block, or a block handed out twice, shows); the
 * pool's requested bytes equal the model's, in use <= reserved <= limit; in
 * the virtual mode the double's live handles, physical and mapped bytes
 * equal the pool's mapped bytes and no cudaMalloc block lives, in the
 * segments mode no handle lives.  At the end every block is freed,
 * the pool trimmed (nothing reserved or mapped) and closed, and the double
 * holds nothing (no block, handle, mapping, reservation or event) and saw
 * no misuse.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>

#include <gpupool.h>

#include "cudart_double.h"
#include "fuzz.h"
#include "paths.h"	/* tests/lib: the double's path, tests_cudart_double */

#define MAXLIVE	64
#define MAXOPS	256
#define KiB	(1ull << 10)
#define MiB	(1ull << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct {
	void (*reset)(void);
	void (*set_mem_total)(size_t);
	void (*set_vmm)(int, size_t);
	void (*fail_create_after)(long);
	void (*fail_malloc_above)(size_t);
	void (*hold_events)(int);
	void (*complete_events)(void);
	void (*get_counts)(struct cdd_counts *);
	const char *(*last_violation)(void);
	int (*stream_create)(void **);
	int (*stream_destroy)(void *);
} D;

struct blk {
	unsigned char *p;
	uint64_t n;
	uint8_t seed;
	int stream;
};

/* The first and last bytes of a block (up to 64 each), and its middle one. */
static void stamp(const struct blk *b)
{
	uint64_t k = b->n < 64 ? b->n : 64;

	memset(b->p, b->seed, k);
	memset(b->p + b->n - k, b->seed, k);
	if (b->n > 128)
		b->p[b->n / 2] = (uint8_t)(b->seed ^ 0x5a);
}

static bool intact(const struct blk *b)
{
	uint64_t k = b->n < 64 ? b->n : 64, i;

	for (i = 0; i < k; i++)
		if (b->p[i] != b->seed || b->p[b->n - k + i] != b->seed)
			return false;
	return b->n <= 128 || b->p[b->n / 2] == (uint8_t)(b->seed ^ 0x5a);
}

static const uint64_t sizes[] = {
	1, 255, 256, 257, 4 * KiB, 64 * KiB, 512 * KiB - 1, 512 * KiB,
	MiB, MiB + 1, 2 * MiB - 256, 2 * MiB, 2 * MiB + 1, 3 * MiB,
	6 * MiB + 100, 16 * MiB, 31 * MiB, 48 * MiB, 100 * MiB,
	(1ull << 40), UINT64_MAX,
};

static void check_pool(struct gp_ctx *ctx, bool vmm, uint64_t want_req,
		       uint64_t limit)
{
	struct gp_dev_stats st;
	struct cdd_counts c;

	FZ_ASSERT(gp_dev_stats(ctx, 0, &st) == 0, "gp_dev_stats");
	FZ_ASSERT(st.requested == want_req, "requested %llu, model %llu",
		  (unsigned long long)st.requested, (unsigned long long)want_req);
	FZ_ASSERT(st.requested <= st.in_use && st.in_use <= st.reserved,
		  "requested %llu, in use %llu, reserved %llu",
		  (unsigned long long)st.requested, (unsigned long long)st.in_use,
		  (unsigned long long)st.reserved);
	FZ_ASSERT(!limit || st.reserved <= limit, "reserved %llu above the limit %llu",
		  (unsigned long long)st.reserved, (unsigned long long)limit);
	D.get_counts(&c);
	FZ_ASSERT(c.violations == 0, "the double saw misuse: %s", D.last_violation());
	if (vmm) {
		FZ_ASSERT(st.mode == GP_DEV_VIRTUAL, "mode %llu", (unsigned long long)st.mode);
		FZ_ASSERT(st.mapped == c.mapped_bytes && st.mapped == c.phys_bytes &&
			  st.mapped == st.reserved &&
			  st.mapped / st.granularity == c.handles,
			  "pool mapped %llu reserved %llu; double mapped %llu phys %llu handles %llu",
			  (unsigned long long)st.mapped, (unsigned long long)st.reserved,
			  (unsigned long long)c.mapped_bytes,
			  (unsigned long long)c.phys_bytes, (unsigned long long)c.handles);
		FZ_ASSERT(c.dev_live == 0, "cudaMalloc blocks in the virtual mode");
	} else {
		FZ_ASSERT(st.mode == GP_DEV_SEGMENTS, "mode %llu", (unsigned long long)st.mode);
		FZ_ASSERT(st.reserved == c.dev_live_bytes, "reserved %llu, double %llu",
			  (unsigned long long)st.reserved,
			  (unsigned long long)c.dev_live_bytes);
		FZ_ASSERT(c.handles == 0 && c.mapped == 0, "handles in the segments mode");
	}
}

static void run(struct fz *f)
{
	static const uint64_t mems[] = { 64 * MiB, 256 * MiB, 1024 * MiB };
	static const uint64_t limits[] = { 0, 0, 24 * MiB, 96 * MiB };
	static struct blk live[MAXLIVE];
	uint32_t mode = fz_pick(f, 3), ops, op;
	uint64_t mem = FZ_PICK(f, mems), limit = FZ_PICK(f, limits);
	bool vmm = mode != 0;
	uint64_t want_req = 0;
	void *streams[2] = { NULL, NULL };
	struct gp_options o;
	struct gp_ctx *ctx;
	struct cdd_counts c;
	struct gp_info info;
	int nlive = 0, i, ret;

	D.reset();
	D.set_mem_total(mem);
	D.set_vmm(1, mode == 2 ? 512 * KiB : 2 * MiB);
	FZ_ASSERT(D.stream_create(&streams[0]) == 0 &&
		  D.stream_create(&streams[1]) == 0, "cudaStreamCreate");
	gp_options_init(&o);
	o.backend = GP_BACKEND_USER;
	o.flags = vmm ? 0 : GP_OPEN_DEV_SEGMENTS;
	o.dev_limit = limit;
	FZ_ASSERT(gp_open(&o, &ctx) == 0, "gp_open: %s", gp_last_error(NULL));
	FZ_ASSERT(gp_info(ctx, &info) == 0, "gp_info");
	FZ_ASSERT(info.dev_mode == (vmm ? GP_DEV_VIRTUAL : GP_DEV_SEGMENTS),
		  "gp_info: mode %d", (int)info.dev_mode);

	ops = fz_pick(f, MAXOPS);
	for (op = 0; op < ops && fz_more(f); op++) {
		uint32_t what = fz_pick(f, 16);
		struct blk *b;

		switch (what) {
		case 0: case 1: case 2: case 3: case 4: case 5: {
			struct blk nb = { NULL, 0, (uint8_t)(op + 1), (int)fz_pick(f, 2) };
			uint32_t refuse = fz_pick(f, 8);

			nb.n = fz_pick(f, 4) ? FZ_PICK_OR_ANY(f, sizes) :
			       1 + fz_bits(f, 3);
			if (nlive == MAXLIVE)
				break;
			if (refuse == 0) {
				if (vmm)
					D.fail_create_after((long)fz_pick(f, 4));
				else
					D.fail_malloc_above(nb.n + fz_pick(f, 2) * 8 * MiB);
			}
			ret = gp_dev_alloc(ctx, 0, (size_t)nb.n, streams[nb.stream],
					   (void **)&nb.p);
			D.fail_create_after(-1);
			D.fail_malloc_above(0);
			if (ret == -ENOMEM || (ret == -EINVAL && nb.n == 0))
				break;
			FZ_ASSERT(ret == 0, "gp_dev_alloc(%llu): %d %s",
				  (unsigned long long)nb.n, ret, gp_last_error(ctx));
			FZ_ASSERT(nb.n <= mem, "a block of %llu on a device of %llu",
				  (unsigned long long)nb.n, (unsigned long long)mem);
			for (i = 0; i < nlive; i++)
				FZ_ASSERT(nb.p + nb.n <= live[i].p ||
					  live[i].p + live[i].n <= nb.p,
					  "%p+%llu overlaps %p+%llu", (void *)nb.p,
					  (unsigned long long)nb.n, (void *)live[i].p,
					  (unsigned long long)live[i].n);
			stamp(&nb);
			live[nlive++] = nb;
			want_req += nb.n;
			break;
		}
		case 6: case 7: case 8: case 9: case 10: {
			/* Free: on its stream, or (case 10) the other one. */
			int s;

			if (!nlive)
				break;
			i = (int)(fz_u8(f) % (uint32_t)nlive);
			b = &live[i];
			FZ_ASSERT(intact(b), "block %p+%llu changed", (void *)b->p,
				  (unsigned long long)b->n);
			s = what == 10 ? !b->stream : b->stream;
			ret = gp_dev_free(ctx, b->p, streams[s]);
			FZ_ASSERT(ret == 0, "gp_dev_free: %d %s", ret, gp_last_error(ctx));
			want_req -= b->n;
			*b = live[--nlive];
			break;
		}
		case 11:
			if (nlive) {
				b = &live[fz_u8(f) % (uint32_t)nlive];
				FZ_ASSERT(gp_dev_record_stream(ctx, b->p,
							       streams[!b->stream]) == 0,
					  "gp_dev_record_stream: %s", gp_last_error(ctx));
			}
			break;
		case 12:
			D.hold_events((int)fz_pick(f, 2));
			D.complete_events();
			break;
		case 13: {
			/* Not a block: inside one, past one, or anywhere. */
			unsigned char *p = nlive ? live[0].p + 1 + fz_pick(f, 8) :
					   (unsigned char *)(uintptr_t)fz_u64(f);

			for (i = 0; i < nlive && live[i].p != p; i++)
				;
			if (!p || i < nlive)
				break;	/* a block after all */
			FZ_ASSERT(gp_dev_free(ctx, p, streams[0]) == -EINVAL,
				  "freeing %p, no block, did not fail", (void *)p);
			break;
		}
		default: {
			uint64_t n = 0;

			FZ_ASSERT(gp_dev_trim(ctx, fz_pick(f, 2) ? 0 : -1, &n) == 0,
				  "gp_dev_trim: %s", gp_last_error(ctx));
			break;
		}
		}
		for (i = 0; i < nlive; i++)
			FZ_ASSERT(intact(&live[i]), "op %u: block %p+%llu changed", op,
				  (void *)live[i].p, (unsigned long long)live[i].n);
		check_pool(ctx, vmm, want_req, limit);
	}

	while (nlive) {
		struct blk *b = &live[--nlive];

		FZ_ASSERT(intact(b), "block %p changed", (void *)b->p);
		FZ_ASSERT(gp_dev_free(ctx, b->p, streams[b->stream]) == 0,
			  "gp_dev_free: %s", gp_last_error(ctx));
	}
	D.hold_events(0);
	D.complete_events();
	FZ_ASSERT(gp_dev_trim(ctx, -1, NULL) == 0, "gp_dev_trim");
	{
		struct gp_dev_stats st;

		FZ_ASSERT(gp_dev_stats(ctx, 0, &st) == 0, "gp_dev_stats");
		FZ_ASSERT(st.reserved == 0 && st.mapped == 0 && st.in_use == 0,
			  "after freeing everything and a trim: %llu reserved, %llu mapped",
			  (unsigned long long)st.reserved, (unsigned long long)st.mapped);
	}
	gp_close(ctx);
	D.get_counts(&c);
	FZ_ASSERT(c.dev_live == 0 && c.handles == 0 && c.mapped == 0 &&
		  c.reservations == 0 && c.events_live == 0,
		  "left in the double: %llu blocks, %llu handles, %llu mappings, %llu reservations, %llu events",
		  (unsigned long long)c.dev_live, (unsigned long long)c.handles,
		  (unsigned long long)c.mapped, (unsigned long long)c.reservations,
		  (unsigned long long)c.events_live);
	FZ_ASSERT(c.violations == 0, "the double saw misuse: %s", D.last_violation());
	D.stream_destroy(streams[0]);
	D.stream_destroy(streams[1]);
}

#define SYM(field, name)						\
	do {								\
		*(void **)&D.field = dlsym(dl, name);			\
		if (!D.field) {						\
			fprintf(stderr, "%s: no %s\n", tests_cudart_double, name);	\
			exit(1);					\
		}							\
	} while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	void *dl;

	(void)argc;
	(void)argv;
	unsetenv("GPUPOOL_DEBUG");
	unsetenv("GPUPOOL_DEV_LIMIT");
	unsetenv("GPUPOOL_DEV_MODE");
	unsetenv("GPUPOOL_REQUIRE_CUDA");
	setenv("GPUPOOL_CUDART", tests_cudart_double, 1);
	dl = dlopen(tests_cudart_double, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		fprintf(stderr, "%s\n", dlerror());
		exit(1);
	}
	SYM(reset, "cdd_reset");
	SYM(set_mem_total, "cdd_set_mem_total");
	SYM(set_vmm, "cdd_set_vmm");
	SYM(fail_create_after, "cdd_fail_create_after");
	SYM(fail_malloc_above, "cdd_fail_malloc_above");
	SYM(hold_events, "cdd_hold_events");
	SYM(complete_events, "cdd_complete_events");
	SYM(get_counts, "cdd_get_counts");
	SYM(last_violation, "cdd_last_violation");
	SYM(stream_create, "cudaStreamCreate");
	SYM(stream_destroy, "cudaStreamDestroy");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };

	run(&f);
	return 0;
}
