/* SPDX-License-Identifier: MIT */
/*
 * dlsym_aarch64.S - the interposer's dlsym() and dlvsym() entries on
 * aarch64 (dlsym.c says why they are assembly): RTLD_NEXT and
 * RTLD_DEFAULT branch to the real function with the caller's return
 * address (x30) untouched; a handle branches to the C part, which reads
 * it.  The real function is bound on the first call (the resolve
 * function), the one path with a frame of its own, which the CFI
 * describes: a debugger or a sanitizer unwinds through every instruction
 * here.
 *
 * Branch protection: a BTI landing pad at each entry (bti c: its address
 * is taken, and it is reached by br x16/x17 from PLTs), the return
 * address signed while it is on the stack (paciasp / autiasp, hint
 * encodings: NOPs where the CPU has neither), and, built with
 * -mbranch-protection, the GNU property note saying so, without which the
 * library would lose BTI and PAC for every object in it.  The real
 * function is reached through x16, which its own landing pad accepts.
 */

/*
 * entry NAME: ip_NAME_entry (and ip_NAME_entry_old, for glibc's older
 * version), branching to the function in ip_real_NAME, bound by
 * ip_NAME_resolve, or to ip_NAME_handle for a handle.  Arguments: x0 the
 * handle, x1 the name, x2 the version (dlvsym), kept across the binder.
 */
	.macro	entry name
	.p2align 2
	.globl	ip_\name\()_entry
	.globl	ip_\name\()_entry_old
	.type	ip_\name\()_entry, %function
	.type	ip_\name\()_entry_old, %function
ip_\name\()_entry:
ip_\name\()_entry_old:
	.cfi_startproc
	hint	34			/* bti c */
	cmn	x0, #1			/* RTLD_NEXT */
	b.eq	1f
	cbz	x0, 1f			/* RTLD_DEFAULT */
	b	ip_\name\()_handle
1:	adrp	x16, ip_real_\name
	ldr	x16, [x16, :lo12:ip_real_\name]
	cbz	x16, 2f
	br	x16
2:	hint	25			/* paciasp */
	.cfi_negate_ra_state
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	str	x2, [sp, #-16]!
	.cfi_def_cfa_offset 48
	bl	ip_\name\()_resolve
	mov	x16, x0
	ldr	x2, [sp], #16
	.cfi_def_cfa_offset 32
	ldp	x0, x1, [sp, #16]
	ldp	x29, x30, [sp], #32
	.cfi_def_cfa_offset 0
	.cfi_restore 29
	.cfi_restore 30
	hint	29			/* autiasp */
	.cfi_negate_ra_state
	br	x16
	.cfi_endproc
	.size	ip_\name\()_entry, .-ip_\name\()_entry
	.size	ip_\name\()_entry_old, .-ip_\name\()_entry_old
	.symver	ip_\name\()_entry, \name@@GLIBC_2.34
	.symver	ip_\name\()_entry_old, \name@GLIBC_2.17
	.endm

	.text
	entry	dlsym
	entry	dlvsym

	.section .note.GNU-stack, "", %progbits

/* GNU_PROPERTY_AARCH64_FEATURE_1_AND: BTI (1) and PAC (2), as built. */
#if defined(__ARM_FEATURE_BTI_DEFAULT) || defined(__ARM_FEATURE_PAC_DEFAULT)
#ifdef __ARM_FEATURE_BTI_DEFAULT
#define IP_FEATURE_BTI	1
#else
#define IP_FEATURE_BTI	0
#endif
#ifdef __ARM_FEATURE_PAC_DEFAULT
#define IP_FEATURE_PAC	2
#else
#define IP_FEATURE_PAC	0
#endif
	.pushsection .note.gnu.property, "a"
	.p2align 3
	.word	4			/* name size */
	.word	16			/* descriptor size */
	.word	5			/* NT_GNU_PROPERTY_TYPE_0 */
	.asciz	"GNU"
	.word	0xc0000000		/* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
	.word	4
	.word	IP_FEATURE_BTI | IP_FEATURE_PAC
	.word	0
	.popsection
#endif
