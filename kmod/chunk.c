// SPDX-License-Identifier: GPL-2.0
/*
 * chunk.c - chunk references, mappings (mmap, vm_ops) and exported chunk
 * file descriptors.
 *
 * A struct gp_chunk is referenced by its owner (the allocating file), by
 * every vma that maps it (vm_ops open/close: mremap, vma splits and fork
 * call open) and by every exported chunk fd.  The last put hands the chunk
 * to its node's zeroing worker.
 *
 * Mappings (what the tests check):
 *  - MAP_SHARED only (-EINVAL otherwise); never executable (VM_MAYEXEC is
 *    cleared: mmap with PROT_EXEC and mprotect(PROT_EXEC) fail);
 *  - the length must be the chunk's size (-EINVAL), the offset the handle
 *    (on /dev/gpupool) or 0 (on a chunk fd);
 *  - VM_DONTEXPAND | VM_DONTDUMP: pages are refcounted normal pages
 *    mapped by normal (not pte_special) PTEs, never VM_IO/VM_PFNMAP, so
 *    GUP can pin them; mremap may move or shrink a mapping but not grow it
 *    (-EFAULT); core dumps skip it;
 *  - filled at mmap with vm_insert_pages(), a block at a time; a fault
 *    (in a child after fork, after MADV_DONTNEED, or when population was
 *    cut short) hands the page to the core mm through vmf->page; a fault
 *    past the chunk gets SIGBUS;
 *  - fork: the child shares the pages but copies no PTE: it faults in
 *    what it touches (below, "Why not VM_MIXEDMAP"); the chunk lives until
 *    every mapping in every process is gone;
 *  - with huge_maps, a chunk's whole 2 MiB blocks are mapped with one
 *    2 MiB entry each: a PMD entry at their first touch with 4 KiB pages
 *    (below, "2 MiB (PMD) entries"), arm64's contiguous PTEs with 16 and
 *    64 KiB pages (below, "Large entries").
 *
 * Why not VM_MIXEDMAP.  vm_insert_pages() sets VM_MIXEDMAP on the vma, and
 * fork copies every PTE of a VM_PFNMAP|VM_MIXEDMAP vma: vma_needs_copy()
 * in mm/memory.c returns true for them (6.1: "if (src_vma->vm_flags &
 * (VM_PFNMAP | VM_MIXEDMAP)) return true"; 7.2: VM_COPY_ON_FORK holds
 * both), then false for a vma without anon_vma, "where a page fault will
 * fill them correctly".  A shared chunk vma never gets an anon_vma (no
 * COW), so once VM_MIXEDMAP is off, fork copies nothing for it: 1 GiB of
 * chunks cost 167-215 ms per fork+exit under TCG, now about nothing.
 * VM_MIXEDMAP only matters for pte_special entries (vm_normal_page()
 * returns NULL for them in a MIXEDMAP vma with no struct page): we never
 * make one; vm_insert_pages() makes normal refcounted PTEs with a file
 * rmap ("folio_get(); inc_mm_counter(mm_counter_file()); folio_add_file_
 * rmap_pte()" in 7.2's insert_page_into_pte_locked(), page_add_file_rmap()
 * in 6.1), which zap, GUP, mremap, mprotect and smaps treat the same with
 * or without the flag.  So the flag is cleared once the prefill is done.
 * VM_DONTEXPAND stays, which keeps the vma VM_SPECIAL: never merged,
 * never mlocked, never grown.
 *
 * The fault handler may not call vm_insert_page() any more: without
 * VM_MIXEDMAP it would set the flag, and it BUG()s unless mmap_lock is
 * held for write (mmap_read_trylock() succeeds in a fault).  It returns
 * the page with a reference in vmf->page instead, as relay and ALSA do;
 * __do_fault() locks it and finish_fault() maps it (one PTE: the page is
 * order 0, and 7.2's finish_fault() maps one page past i_size anyway).
 * No ->page_mkwrite: that would make the vma want writenotify, write
 * faults on clean PTEs, and FOLL_LONGTERM write pins refused
 * (vma_needs_dirty_tracking()).  No ->map_pages: fault-around there is the
 * page cache's (filemap_map_pages()); a driver would have to set PTEs
 * itself with helpers (set_pte_range(), do_set_pte()) not exported to
 * modules.
 *
 * Large entries.  A block is 2 MiB on every page size (gpupool.h); what
 * maps it whole, with huge_maps, depends on the page size:
 *  - 4 KiB (x86_64, arm64): a PMD entry, as below (GP_PMD_MAPS);
 *  - 16 and 64 KiB (arm64): a PMD maps 32 or 512 MiB, more than a block,
 *    so no PMD entry ever maps a chunk.  arm64's contiguous-PTE hint
 *    does (GP_CONT_MAPS, CONFIG_ARM64_CONTPTE): 128 x 16 KiB or
 *    32 x 64 KiB PTEs, one TLB entry of 2 MiB.  The module sets no
 *    contiguous bit itself: set_ptes() folds a CONT_PTE_SIZE range
 *    (contpte_try_fold(), 7.2 arch/arm64/include/asm/pgtable.h) when its
 *    last PTE is set, if virtual and physical addresses are both at the
 *    range's last page, every PTE of the range is valid with consecutive
 *    pfns and the same protections, and one folio covers the range
 *    (__contpte_try_fold(), arch/arm64/mm/contpte.c: "ensure the contpte
 *    range is fully covered by a single folio").  vm_insert_pages() and
 *    finish_fault() set PTEs one at a time through set_ptes(), so the
 *    prefill and the faults below both fold, given two things: the
 *    block stays one folio (huge_maps, as for PMDs; split order-0 pages
 *    are folios of their own and never fold), and the mapping's address
 *    is congruent to the chunk's pool offset modulo CONT_PTE_SIZE
 *    (gp_chunk_get_unmapped_area(); a block is physically aligned to its
 *    order).  Without huge_maps, or on kernels without CONTPTE (before
 *    6.9; 6.9 has no mm_get_unmapped_area() to place mappings with),
 *    those page sizes get one PTE per page.  Unfolding, on a partial
 *    munmap or mprotect, is the kernel's too.
 *
 * 2 MiB (PMD) entries, with huge_maps and 4 KiB pages (gp_pmd_maps():
 * 6.15+ with THP).
 * The pool keeps its order-9 blocks whole (reserve.c); mmap places the
 * mapping so that the chunk's whole blocks fall on 2 MiB boundaries
 * (gp_chunk_get_unmapped_area(), thp_get_unmapped_area() with the chunk's
 * page offset in the pool), the prefill leaves those blocks out, and the
 * first touch of one calls ->huge_fault, which maps its folio with
 * vmf_insert_folio_pmd(): a normal refcounted entry (7.2 mm/huge_memory.c
 * insert_pmd(): "folio_get(); folio_add_file_rmap_pmd()", no pmd_special),
 * which GUP (follow_huge_pmd(), gup_fast_pmd_leaf()), zap, mremap, mprotect
 * and the PMD split of a partial munmap or mprotect (a file folio's entry
 * is just cleared and faulted again by PTEs) treat as the page cache's.
 * The core mm calls ->huge_fault for a file vma only where the THP sysfs
 * setting allows (__thp_vma_allowable_orders(): "always", or "madvise"
 * with VM_HUGEPAGE, which mmap sets) and not after MADV_NOHUGEPAGE; then
 * ->fault maps those blocks a page at a time.  The cost is in the
 * quarantine: the block's pages share one refcount (zeroing.c,
 * gp_folio_held_elsewhere()).  What the older kernels offer, rejected:
 *  - vmf_insert_pfn_pmd() (6.1, 6.12) wants VM_PFNMAP or VM_MIXEDMAP
 *    (6.1 mm/huge_memory.c: "BUG_ON(!(vma->vm_flags & (VM_PFNMAP|
 *    VM_MIXEDMAP)))"), and without a ZONE_DEVICE page (devmap) GUP's slow
 *    path takes the PMD for a THP: follow_trans_huge_pmd() has
 *    "VM_BUG_ON_PAGE(!PageHead(page) && !is_zone_device_page(page))".
 *    Its entries are special: no GUP, so no O_DIRECT, io_uring or
 *    cudaHostRegister.  Rejected.
 *  - finish_fault() maps a PMD-order compound page that ->fault returns
 *    with do_set_pmd() (6.1, 6.12), mapping compound_head() at the 2 MiB
 *    boundary whatever page the fault asked for, where the vma's pgoff is
 *    aligned with it.  It is the page cache's path, not a driver's: 7.2's
 *    finish_fault() no longer takes it for a file whose i_size ends before
 *    the folio ("needs_fallback = !shmem_mapping(mapping) && file_end <
 *    folio_next_index(folio)"; ours is 0), so a module built on it would
 *    lose its PMDs, silently, on a newer kernel.  Rejected: 6.1 and 6.12
 *    map page by page, and fork is cheap there anyway (above).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/gpupool.h>

#include "compat.h"
#include "gpupool.h"

static void gp_chunk_release(struct kref *kref)
{
	struct gp_chunk *c = container_of(kref, struct gp_chunk, kref);
	struct gp_idle *asked = gp_rc_gone(c);

	/* A chunk counts against its allocator and its cgroups until its
	 * last ref is gone.
	 */
	gp_holder_uncharge(c->holder, c->size);
	gp_cg_uncharge(&c->charge, c->size);
	gp_pool_release_chunk(c);
	/* In the pool's hands now (c may be gone): its asker may wake. */
	gp_rc_given(asked);
}

void gp_chunk_get(struct gp_chunk *c)
{
	kref_get(&c->kref);
}

void gp_chunk_put(struct gp_chunk *c)
{
	kref_put(&c->kref, gp_chunk_release);
}

/* Mappings ---------------------------------------------------------------- */

static void gp_vm_open(struct vm_area_struct *vma)
{
	gp_chunk_get(vma->vm_private_data);
}

static void gp_vm_close(struct vm_area_struct *vma)
{
	gp_chunk_put(vma->vm_private_data);
}

/*
 * vm_pgoff is 0 at the chunk's first page (set at mmap, kept by splits).
 * The reference taken here becomes the PTE's (finish_fault() maps the
 * page; the core mm drops the reference when it does not).
 */
static vm_fault_t gp_vm_fault(struct vm_fault *vmf)
{
	struct gp_chunk *c = vmf->vma->vm_private_data;
	struct page *page;

	if (vmf->pgoff >= gp_chunk_pages(c))
		return VM_FAULT_SIGBUS;
	page = gp_chunk_page(c, vmf->pgoff);
	gp_map_begin(c->node);
	get_page(page);
	gp_map_end(c->node);
	vmf->page = page;
	return 0;
}

/*
 * The folio of the block that starts at address addr of vma, when the
 * whole block is one folio of c in vma: what a PMD entry there would map.
 */
static struct folio *gp_vma_block_folio(struct vm_area_struct *vma,
					unsigned long addr)
{
	struct gp_chunk *c = vma->vm_private_data;
	unsigned long pgoff, pg;

	if (!gp_pmd_maps() || !IS_ALIGNED(addr, PMD_SIZE) ||
	    addr < vma->vm_start || vma->vm_end - addr < PMD_SIZE)
		return NULL;
	pgoff = vma->vm_pgoff + ((addr - vma->vm_start) >> PAGE_SHIFT);
	pg = (c->offset >> PAGE_SHIFT) + pgoff;
	if (pgoff + GP_BLOCK_PAGES > gp_chunk_pages(c) ||
	    pg % GP_BLOCK_PAGES)
		return NULL;
	return gp_block_folio(&c->node->blocks[pg / GP_BLOCK_PAGES]);
}

#if GP_PMD_MAPS
/*
 * A 2 MiB entry for the whole folio under the fault, where there is one
 * (gp_chunk_get_unmapped_area() places mappings so); else the core mm
 * falls back to ->fault, a page at a time.
 */
static vm_fault_t gp_vm_huge_fault(struct vm_fault *vmf, unsigned int order)
{
	struct gp_chunk *c = vmf->vma->vm_private_data;
	struct folio *folio;
	vm_fault_t ret;

	BUILD_BUG_ON(GP_BLOCK_ORDER != PMD_ORDER);
	if (order != PMD_ORDER)
		return VM_FAULT_FALLBACK;
	folio = gp_vma_block_folio(vmf->vma, vmf->address & PMD_MASK);
	if (!folio)
		return VM_FAULT_FALLBACK;
	gp_map_begin(c->node);
	ret = vmf_insert_folio_pmd(vmf, folio, vmf->flags & FAULT_FLAG_WRITE);
	gp_map_end(c->node);
	return ret;
}
#endif

static const struct vm_operations_struct gp_vm_ops = {
	.open	= gp_vm_open,
	.close	= gp_vm_close,
	.fault	= gp_vm_fault,
#if GP_PMD_MAPS
	.huge_fault = gp_vm_huge_fault,
#endif
};

/*
 * Insert every page, a block (GP_BLOCK_PAGES) per vm_insert_pages() call, but
 * for whole folios that a PMD entry can map: those are left to the first
 * touch (gp_vm_huge_fault()), one fault per 2 MiB.  Best effort: whatever
 * is left out is faulted in later.
 */
static void gp_chunk_populate(struct gp_chunk *c, struct vm_area_struct *vma)
{
	unsigned long pg = c->offset >> PAGE_SHIFT;
	unsigned long left = gp_chunk_pages(c);
	unsigned long addr = vma->vm_start;
	struct page **batch;

	batch = kmalloc_array(GP_BLOCK_PAGES, sizeof(*batch), GFP_KERNEL);
	if (!batch)
		return;
	gp_map_begin(c->node);
	while (left) {
		const struct gp_block *b = &c->node->blocks[pg / GP_BLOCK_PAGES];
		unsigned long i = pg % GP_BLOCK_PAGES;
		unsigned long nr = min(left, GP_BLOCK_PAGES - i);
		unsigned long rest = nr, k;
		struct page **pages;

		if (gp_vma_block_folio(vma, addr))
			goto next;
		if (b->head) {
			for (k = 0; k < nr; k++)
				batch[k] = b->head + i + k;
			pages = batch;
		} else {
			pages = &b->pages[i];
		}
		if (vm_insert_pages(vma, addr, pages, &rest) || rest)
			break;
next:
		addr += nr << PAGE_SHIFT;
		pg += nr;
		left -= nr;
		if (fatal_signal_pending(current))
			break;
		cond_resched();
	}
	gp_map_end(c->node);
	kfree(batch);
}

/*
 * Map c into vma.  On success the vma owns the caller's reference to c; on
 * failure the caller still owns it.
 */
int gp_chunk_mmap(struct gp_chunk *c, struct vm_area_struct *vma)
{
	/* VM_MAYSHARE: MAP_SHARED (VM_SHARED is cleared for read-only files). */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	if (vma_pages(vma) != gp_chunk_pages(c))
		return -EINVAL;

	/* VM_HUGEPAGE: PMD entries also with THP "madvise" (not "never"). */
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP |
		     (gp_pmd_maps() ? VM_HUGEPAGE : 0));
	vm_flags_clear(vma, VM_MAYEXEC);
	/* The offset named the chunk; from here on it is the page index. */
	vma->vm_pgoff = 0;
	vma->vm_ops = &gp_vm_ops;
	vma->vm_private_data = c;
	gp_chunk_populate(c, vma);
	/* Set by vm_insert_pages(); off so that fork copies no PTE (above). */
	vm_flags_clear(vma, VM_MIXEDMAP);
	return 0;
}

#if GP_CONT_MAPS
/*
 * An address for len bytes whose offset modulo CONT_PTE_SIZE is pgoff's
 * (as thp_get_unmapped_area() does for PMD_SIZE, which is more than a
 * block here): ask for CONT_PTE_SIZE more, then move up into the slack.
 * 0 where that cannot be (the caller takes any address).
 */
static unsigned long gp_cont_unmapped_area(struct file *file,
					   unsigned long addr,
					   unsigned long len,
					   unsigned long pgoff,
					   unsigned long flags)
{
	unsigned long off = pgoff << PAGE_SHIFT, ret;

	if (in_compat_syscall() || len < CONT_PTE_SIZE ||
	    len + CONT_PTE_SIZE < len)
		return 0;
	ret = gp_mm_get_unmapped_area(file, addr, len + CONT_PTE_SIZE, pgoff,
				      flags);
	if (IS_ERR_VALUE(ret))
		return 0;
	if (ret == addr)	/* the hint (or MAP_FIXED) was free: keep it */
		return addr;
	return ret + ((off - ret) & (CONT_PTE_SIZE - 1));
}
#endif

#if GP_FOLIO_BLOCKS
/*
 * Where a mapping of len bytes of c from its page pgoff goes (an mmap, or
 * mremap moving one): an address congruent to that page's offset in the
 * pool modulo the large entries' size, so that c's whole folios fall on
 * their boundaries: PMD_SIZE (thp_get_unmapped_area()), or CONT_PTE_SIZE.
 */
unsigned long gp_chunk_get_unmapped_area(struct gp_chunk *c,
					 struct file *file, unsigned long addr,
					 unsigned long len, unsigned long pgoff,
					 unsigned long flags)
{
	unsigned long pg = (c->offset >> PAGE_SHIFT) + pgoff;
#if GP_CONT_MAPS
	unsigned long ret = gp_cont_unmapped_area(file, addr, len, pg, flags);

	if (ret)
		return ret;
	return gp_mm_get_unmapped_area(file, addr, len, pg, flags);
#else
	return thp_get_unmapped_area(file, addr, len, pg, flags);
#endif
}
#endif

/* Exported chunk fds -------------------------------------------------------------- */

static int gp_chunk_fd_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct gp_chunk *c = file->private_data;
	int ret;

	if (vma->vm_pgoff)
		return -EINVAL;
	gp_chunk_get(c);
	ret = gp_chunk_mmap(c, vma);
	if (ret)
		gp_chunk_put(c);
	return ret;
}

#if GP_FOLIO_BLOCKS
static unsigned long gp_chunk_fd_get_unmapped_area(struct file *file,
						   unsigned long addr,
						   unsigned long len,
						   unsigned long pgoff,
						   unsigned long flags)
{
	return gp_chunk_get_unmapped_area(file->private_data, file, addr, len,
					  pgoff, flags);
}
#endif

static int gp_chunk_fd_release(struct inode *inode, struct file *file)
{
	gp_chunk_put(file->private_data);
	return 0;
}

static long gp_chunk_fd_info(struct gp_chunk *c, void __user *uarg)
{
	struct gpupool_chunk_info ci;

	if (copy_from_user(&ci, uarg, sizeof(ci)))
		return -EFAULT;
	if (ci.flags & ~GPUPOOL_CHUNK_INFO_VALID_FLAGS)
		return -EINVAL;
	if (memchr_inv(ci.reserved, 0, sizeof(ci.reserved)))
		return -EINVAL;
	memset(&ci, 0, sizeof(ci));
	ci.size = c->size;
	ci.node = c->node->nid;
	if (copy_to_user(uarg, &ci, sizeof(ci)))
		return -EFAULT;
	return 0;
}

static long gp_chunk_fd_ioctl(struct file *file, unsigned int cmd,
			      unsigned long arg)
{
	switch (cmd) {
	case GPUPOOL_IOC_CHUNK_INFO:
		return gp_chunk_fd_info(file->private_data,
					(void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations gp_chunk_fops = {
	.owner		= THIS_MODULE,
	.mmap		= gp_chunk_fd_mmap,
#if GP_FOLIO_BLOCKS
	.get_unmapped_area = gp_chunk_fd_get_unmapped_area,
#endif
	.release	= gp_chunk_fd_release,
	.unlocked_ioctl	= gp_chunk_fd_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

/*
 * A new file standing for c.  On success it owns the caller's reference
 * (dropped when the file is released); on failure the caller keeps it.
 */
struct file *gp_chunk_file(struct gp_chunk *c, int flags)
{
	return anon_inode_getfile("[gpupool_chunk]", &gp_chunk_fops, c, flags);
}
