// SPDX-License-Identifier: MIT
/*
 * share.c - buffers crossing processes: gp_host_export() turns a
 * GP_HOST_SHARED buffer (a segment of its own, never cached) into a file
 * descriptor; gp_host_import() maps such a descriptor, pins and registers it
 * in the importing process.  Only whole segments are shared, so an importer
 * never sees another buffer's bytes.
 */
#include <stdlib.h>

#include "backend/backend.h"
#include "host/pools.h"

/*
 * Who may map a descriptor from another process, whatever backend it came
 * from and whichever this context has, in the order asked: a gpupool.ko
 * chunk (exported on the kernel backend) first, then a memfd (the user
 * backend's).  The one place that decides; the backends only map what
 * they are given, through their ops.
 */
static const struct gp_backend_ops *const gp_importers[] = {
	&gp_backend_kernel, &gp_backend_user,
};
#define GP_NR_IMPORTERS	(sizeof(gp_importers) / sizeof(gp_importers[0]))

/* Map fd with the first backend that takes it, counted as a map. */
static int gp_import_map(struct gp_ctx *ctx, int fd, struct gp_seg *seg)
{
	unsigned int i;
	int ret = -ENOTTY;

	for (i = 0; ret == -ENOTTY && i < GP_NR_IMPORTERS; i++)
		ret = gp_importers[i]->import_fd(ctx, fd, seg);
	if (ret == -ENOTTY)
		return gp_err(ctx, -EINVAL,
			      "import: descriptor %d is not a gpupool buffer", fd);
	if (!ret)
		ctx->host->st.map_calls++;
	return ret;
}

GP_API int gp_host_export(struct gp_ctx *ctx, void *ptr, int *fd)
{
	struct gp_seg *seg;
	int ret;

	if (!ctx || !fd)
		return -EINVAL;
	pthread_mutex_lock(&ctx->host->lock);
	seg = gp_map_get(&ctx->host->own, (uint64_t)(uintptr_t)ptr);
	/* Only a buffer allocated with GP_HOST_SHARED (its own segment), on
	 * either backend: a user segment keeps its memfd, a kernel one its
	 * chunk handle (seg->fd is -1 there; EXPORT makes the descriptor).
	 * Imported buffers are not exported again: export the original.
	 */
	if (seg && seg->kind == GP_SEG_IMPORT) {
		ret = gp_err(ctx, -EINVAL,
			     "gp_host_export: %p was imported; pass on the descriptor "
			     "it was imported from (or export the original buffer)", ptr);
		goto out;
	}
	if (!seg || seg->kind != GP_SEG_OWN) {
		ret = gp_err(ctx, -EINVAL,
			     "gp_host_export: %p is not a GP_HOST_SHARED buffer of this "
			     "context (allocate it with GP_HOST_SHARED to share it)", ptr);
		goto out;
	}
	ret = ctx->ops->export_fd(ctx, seg, fd);
	if (!ret)
		ctx->host->st.exports++;
out:
	pthread_mutex_unlock(&ctx->host->lock);
	return ret;
}

GP_API int gp_host_import(struct gp_ctx *ctx, int fd, void **ptr, size_t *size)
{
	struct gp_seg *seg;
	int ret;

	if (!ctx || !ptr || fd < 0)
		return -EINVAL;
	seg = calloc(1, sizeof(*seg));
	if (!seg)
		return gp_err(ctx, -ENOMEM, "out of memory for segment metadata");
	seg->fd = -1;
	seg->kind = GP_SEG_IMPORT;
	pthread_mutex_lock(&ctx->host->lock);
	ret = gp_import_map(ctx, fd, seg);
	if (ret)
		goto out_free;
	/* An import is mapped like a segment: host_limit counts it. */
	ret = gp_host_make_room(ctx, seg->size);
	if (ret)
		goto out_unmap;
	ret = gp_seg_register(ctx, seg);
	if (ret)
		goto out_unmap;
	if (gp_map_put(&ctx->host->own, seg->addr, seg)) {
		ret = gp_err(ctx, -ENOMEM, "out of memory for buffer metadata");
		goto out_unregister;
	}
	gp_seg_link(ctx, seg);
	seg->nr_used = 1;
	seg->requested = seg->size;
	ctx->host->st.in_use += seg->size;
	ctx->host->st.requested += seg->size;
	ctx->host->st.imports++;
	*ptr = (void *)(uintptr_t)seg->addr;
	if (size)
		*size = seg->size;
	pthread_mutex_unlock(&ctx->host->lock);
	return 0;

out_unregister:
	gp_seg_unregister(ctx, seg);
out_unmap:
	gp_seg_unmap(ctx, seg);
out_free:
	pthread_mutex_unlock(&ctx->host->lock);
	free(seg);
	return ret;
}
