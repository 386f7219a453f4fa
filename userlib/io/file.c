// SPDX-License-Identifier: MIT
/*
 * file.c - the file side of a read request (see request.c): the file's
 * size and O_DIRECT alignment (statx, or the block device's), the O_DIRECT
 * descriptor opened again through /proc/self/fd, and reads made at once,
 * without the ring: O_DIRECT straight into the destination where aligned,
 * through a bounce block where not, buffered only where O_DIRECT cannot be
 * had (and allowed).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "reader.h"

/* <linux/stat.h> (for statx's O_DIRECT alignment, which glibc 2.36's struct
 * lacks) defines the mode bits but not the tests.
 */
#ifndef S_ISREG
#define S_ISREG(m)	(((m) & S_IFMT) == S_IFREG)
#define S_ISBLK(m)	(((m) & S_IFMT) == S_IFBLK)
#endif

/* Synchronous reads ---------------------------------------------------------- */

static ssize_t gp_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	do
		n = pread(fd, buf, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* O_DIRECT straight into d at o, both aligned: whole blocks, at most
 * 1 GiB.
 */
static ssize_t gp_sync_direct(struct gp_reader_pool *io, const struct gp_file *f,
			      uint64_t o, char *d, size_t want)
{
	ssize_t n;

	want -= want % f->align;
	if (want > (1u << 30))
		want = 1u << 30;
	n = gp_pread_full(f->dfd, d, want, o);
	if (n > 0) {
		GP_IO_STAT_ADD(io, direct, 1);
		GP_IO_STAT_ADD(io, direct_bytes, n);
	}
	return n;
}

/* O_DIRECT into the bounce block (*bounce, allocated on first use), and
 * what it holds of [o, o + want) copied to d.
 */
static ssize_t gp_sync_bounce(struct gp_reader_pool *io, const struct gp_file *f,
			      uint64_t o, char *d, size_t want, void **bounce)
{
	uint64_t bo = o - o % f->align;
	size_t blen = gp_round_up(o - bo + want, f->align);
	size_t skip = o - bo;
	ssize_t n;

	if (blen > GP_IO_BOUNCE)
		blen = GP_IO_BOUNCE;
	if (!*bounce && posix_memalign(bounce, f->align > f->memalign ?
				       f->align : f->memalign, GP_IO_BOUNCE)) {
		*bounce = NULL;
		return -ENOMEM;
	}
	n = gp_pread_full(f->dfd, *bounce, blen, bo);
	if (n > 0) {
		n = (size_t)n > skip ? n - (ssize_t)skip : 0;
		if ((size_t)n > want)
			n = (ssize_t)want;
		memcpy(d, (char *)*bounce + skip, (size_t)n);
		GP_IO_STAT_ADD(io, bounce, 1);
		GP_IO_STAT_ADD(io, bounce_bytes, n);
	}
	return n;
}

/* One read of gp_io_sync() at o, by the best path the file allows there:
 * bytes read (0: the end of the file) or -errno.
 */
static ssize_t gp_sync_piece(struct gp_ctx *ctx, struct gp_reader_pool *io,
			     const struct gp_file *f, uint64_t o, char *d,
			     size_t want, void **bounce)
{
	ssize_t n;

	if (f->dfd >= 0 && !(o % f->align) && !((uintptr_t)d % f->memalign) &&
	    want >= f->align)
		return gp_sync_direct(io, f, o, d, want);
	if (f->dfd >= 0)
		return gp_sync_bounce(io, f, o, d, want, bounce);
	if (!f->buffered_ok)
		return gp_err(ctx, -EINVAL, "gp_read: the file cannot be read "
			      "with O_DIRECT and GP_READ_NO_CACHE forbids the page cache");
	n = gp_pread_full(f->fd, d, want, o);
	if (n > 0) {
		GP_IO_STAT_ADD(io, buffered, 1);
		GP_IO_STAT_ADD(io, buffered_bytes, n);
	}
	return n;
}

ssize_t gp_io_sync(struct gp_ctx *ctx, struct gp_reader_pool *io,
		   struct gp_file *f, uint64_t off, char *dst, size_t len)
{
	void *bounce = NULL;
	size_t got = 0;
	ssize_t n = 0;

	while (got < len) {
		n = gp_sync_piece(ctx, io, f, off + got, dst + got, len - got,
				  &bounce);
		if (n == -EINVAL && f->dfd >= 0) {
			/* Stricter alignment than the file system said: no
			 * O_DIRECT for the rest of this request.
			 */
			f->dfd = -1;
			continue;
		}
		if (n <= 0)
			break;		/* an error, or the end of the file */
		got += (size_t)n;
	}
	free(bounce);
	return n < 0 ? n : (ssize_t)got;
}

/* The file ------------------------------------------------------------------- */

/*
 * The logical block size of block device major:minor, or of the disk a
 * partition of it is on (sysfs), the alignment O_DIRECT asks there; 0 where
 * sysfs has none (no block device: tmpfs, overlay, network file systems).
 */
static uint32_t gp_dev_block_size(unsigned int major, unsigned int minor)
{
	static const char *const where[] = { "queue", "../queue" };
	char path[96], text[32];
	unsigned int i;
	unsigned long v;
	ssize_t n;
	int fd;

	for (i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		snprintf(path, sizeof(path),
			 "/sys/dev/block/%u:%u/%s/logical_block_size", major,
			 minor, where[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
		if (n <= 0)
			continue;
		text[n] = 0;
		v = strtoul(text, NULL, 10);
		if (v >= 512 && v <= (1ul << 20) && !(v & (v - 1)))
			return (uint32_t)v;
	}
	return 0;
}

uint32_t gp_dio_align_default(void)
{
	long page = sysconf(_SC_PAGESIZE);

	return page > 0 ? (uint32_t)page : 4096;
}

int gp_file_stat(int fd, struct gp_statx *s)
{
	struct statx stx;
	uint64_t bsize;
	int lbs;

	memset(&stx, 0, sizeof(stx));
	memset(s, 0, sizeof(*s));
	if (syscall(__NR_statx, fd, "", AT_EMPTY_PATH,
		    STATX_TYPE | STATX_SIZE | STATX_DIOALIGN, &stx) < 0)
		return -errno;
	s->mode = stx.stx_mode;
	s->size = stx.stx_size;
	if (S_ISBLK(stx.stx_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &bsize) == 0)
			s->size = bsize;
		if (ioctl(fd, BLKSSZGET, &lbs) == 0 && lbs > 0) {
			s->align = s->memalign = (uint32_t)lbs;
			s->direct_known = true;
		}
	} else if (S_ISREG(stx.stx_mode) && (stx.stx_mask & STATX_DIOALIGN)) {
		s->align = stx.stx_dio_offset_align;
		s->memalign = stx.stx_dio_mem_align;
		s->direct_known = true;
	}
	if (!s->direct_known && S_ISREG(stx.stx_mode))
		/* No STATX_DIOALIGN (before 6.1, or a file system that does
		 * not say): the block device's logical block size.
		 */
		s->align = s->memalign = gp_dev_block_size(stx.stx_dev_major,
							   stx.stx_dev_minor);
	if (!s->direct_known && !s->align)
		/* Nothing says: the page (4 KiB, 16 or 64 KiB on arm64),
		 * which every logical block size up to it divides.
		 */
		s->align = s->memalign = gp_dio_align_default();
	return 0;
}

/* An O_DIRECT descriptor of fd's file in r's table (index), or -1. */
int gp_open_direct(struct gp_reader *r, int fd, int accmode)
{
	char path[64];
	unsigned int i;
	int dfd;

	if (accmode & O_DIRECT) {
		dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	} else {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		dfd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOATIME);
		if (dfd < 0 && errno == EPERM)
			dfd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	}
	if (dfd < 0)
		return -1;
	for (i = 0; i < r->depth; i++)
		if (r->dfds[i].fd < 0) {
			r->dfds[i].fd = dfd;
			r->dfds[i].refs = 1;	/* the submission's, until it ends */
			return (int)i;
		}
	close(dfd);
	return -1;
}

void gp_dfd_put(struct gp_reader *r, int idx)
{
	if (idx < 0)
		return;
	if (--r->dfds[idx].refs == 0) {
		close(r->dfds[idx].fd);
		r->dfds[idx].fd = -1;
	}
}

