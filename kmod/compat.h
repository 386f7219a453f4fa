/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.h - the only place that knows kernel versions differ.  Supported:
 * 6.1 and later (tested: Debian 6.1 and 6.12, and 7.2 built from Debian's
 * sources).  GP_HAVE_* come from probes of the kernel's headers in Kbuild.
 */
#ifndef GPUPOOL_COMPAT_H
#define GPUPOOL_COMPAT_H

#include <linux/mm.h>

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

#endif /* GPUPOOL_COMPAT_H */
