/* SPDX-License-Identifier: MIT */
/*
 * dlsym_x86_64.S - the interposer's dlsym() and dlvsym() entries on x86_64
 * (dlsym.c says why they are assembly): RTLD_NEXT and RTLD_DEFAULT jump
 * to the real function with the caller's return address untouched; a
 * handle jumps to the C part, which reads it.  The real function is bound
 * on the first call (the resolve function), the one path with a frame of
 * its own, which the CFI describes: a debugger or a sanitizer unwinds
 * through every instruction here.
 *
 * endbr64 at each entry (its address is taken: the symbols are exported);
 * built with -fcf-protection, cet.h adds the IBT and SHSTK property note,
 * without which the library would lose CET for every object in it.
 */
#include <cet.h>

/*
 * entry NAME: ip_NAME_entry (and ip_NAME_entry_old, for glibc's older
 * version), jumping to the function in ip_real_NAME, bound by
 * ip_NAME_resolve, or to ip_NAME_handle for a handle.  Arguments: rdi the
 * handle, rsi the name, rdx the version (dlvsym), all kept across the
 * binder; three pushes leave rsp 16-aligned at its call.
 */
	.macro	entry name
	.p2align 4
	.globl	ip_\name\()_entry
	.globl	ip_\name\()_entry_old
	.type	ip_\name\()_entry, @function
	.type	ip_\name\()_entry_old, @function
ip_\name\()_entry:
ip_\name\()_entry_old:
	.cfi_startproc
	endbr64
	cmpq	$-1, %rdi		/* RTLD_NEXT */
	je	1f
	testq	%rdi, %rdi		/* RTLD_DEFAULT */
	je	1f
	jmp	ip_\name\()_handle
1:	movq	ip_real_\name(%rip), %rax
	testq	%rax, %rax
	jz	2f
	jmp	*%rax
2:	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	pushq	%rsi
	.cfi_adjust_cfa_offset 8
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
	call	ip_\name\()_resolve
	popq	%rdx
	.cfi_adjust_cfa_offset -8
	popq	%rsi
	.cfi_adjust_cfa_offset -8
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	jmp	*%rax
	.cfi_endproc
	.size	ip_\name\()_entry, .-ip_\name\()_entry
	.size	ip_\name\()_entry_old, .-ip_\name\()_entry_old
	.symver	ip_\name\()_entry, \name@@GLIBC_2.34
	.symver	ip_\name\()_entry_old, \name@GLIBC_2.2.5
	.endm

	.text
	entry	dlsym
	entry	dlvsym

	.section .note.GNU-stack, "", @progbits
