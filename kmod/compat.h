/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.h - the only place that knows kernel versions differ.  Supported:
 * 5.10 and later (tested: Debian 6.1 and 6.12, Debian 11's 5.10, and 7.2
 * built from Debian's sources).  GP_HAVE_* come from probes of the kernel's
 * headers in Kbuild; Kbuild refuses older kernels by name.
 */
#ifndef GPUPOOL_COMPAT_H
#define GPUPOOL_COMPAT_H

#include <linux/file.h>
#include <linux/mm.h>
#include <linux/workqueue.h>

/*
 * vm_flags became read-only in 6.3 (per-VMA locking); vm_flags_set() and
 * vm_flags_clear() are how it is changed since.  Before, assign directly.
 */
#ifndef GP_HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/*
 * vma_set_file() (5.11) swaps the file a mapping holds.  Before it, an
 * ->mmap did the same by hand, as 5.10's dma_buf_mmap() does: the vma's
 * reference moves to the new file, and the one it held on the old file
 * is dropped (the mmap caller keeps its own).
 */
#ifndef GP_HAVE_VMA_SET_FILE
static inline void vma_set_file(struct vm_area_struct *vma, struct file *file)
{
	struct file *old = vma->vm_file;

	vma->vm_file = get_file(file);
	fput(old);
}
#endif

/*
 * system_dfl_wq (6.17, and in Debian's 6.12) is the unbound system
 * workqueue under its new name; 7.x warns, once, when work is queued on
 * the old system_wq or system_unbound_wq.  Before it, the old name.
 */
#ifndef GP_HAVE_SYSTEM_DFL_WQ
#define system_dfl_wq system_unbound_wq
#endif

/*
 * What the kernel offers for mapping a block whole (kmod/chunk.c, "Large
 * entries"); gpupool.h says what each page size gets of it.
 *
 * GP_KERNEL_PMD_MAPS: a PMD entry for a driver's folio, through
 * vmf_insert_folio_pmd() (6.15) from a ->huge_fault handler; it needs
 * transparent huge pages built in.  Why the older kernels' ways are not
 * used: kmod/chunk.c, "2 MiB (PMD) entries".
 *
 * GP_KERNEL_CONT_MAPS: arm64's contiguous PTEs for user memory
 * (CONFIG_ARM64_CONTPTE, 6.9): set_ptes() folds the PTEs of a
 * CONT_PTE_SIZE range into one TLB entry when they map one folio, at the
 * same offset in virtual and physical memory.  Placing mappings so needs
 * mm_get_unmapped_area() (exported since 6.10; gp_mm_get_unmapped_area()).
 */
#if defined(GP_HAVE_VMF_INSERT_FOLIO_PMD) && \
	IS_ENABLED(CONFIG_TRANSPARENT_HUGEPAGE)
#define GP_KERNEL_PMD_MAPS 1
#else
#define GP_KERNEL_PMD_MAPS 0
#endif

#if IS_ENABLED(CONFIG_ARM64_CONTPTE) && defined(GP_HAVE_MM_GET_UNMAPPED_AREA)
#define GP_KERNEL_CONT_MAPS 1
#include <linux/sched/mm.h>
/* 6.12 has it take the mm first (current's), 7.2 not. */
#ifdef GP_MM_GET_UNMAPPED_AREA_TAKES_MM
#define gp_mm_get_unmapped_area(file, addr, len, pgoff, flags) \
	mm_get_unmapped_area(current->mm, file, addr, len, pgoff, flags)
#else
#define gp_mm_get_unmapped_area mm_get_unmapped_area
#endif
#else
#define GP_KERNEL_CONT_MAPS 0
#endif

#endif /* GPUPOOL_COMPAT_H */
