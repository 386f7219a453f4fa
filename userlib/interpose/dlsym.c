// SPDX-License-Identifier: MIT
/*
 * dlsym.c - dlsym(), for the programs that reach CUDA through a handle:
 * XLA (TensorFlow, JAX) takes cuMemHostAlloc with dlsym() on libcuda.so.1,
 * the runtime takes cuGetProcAddress_v2 so, Python's ctypes takes
 * cudaHostAlloc so.  A pointer dlsym() finds is swapped for ours when it
 * is the real address of an entry point we wrap (driver.c, runtime.c).
 *
 * dlsym() must stay what it is for everyone else, and it answers by who
 * calls it: RTLD_NEXT means "after the caller's object", and glibc reads
 * the caller from the return address.  So the entry is a few instructions
 * of assembly that jump (never call) to the real dlsym for RTLD_NEXT and
 * RTLD_DEFAULT (those find our own definitions first anyway), and to
 * ip_dlsym_handle for a handle, which reads the caller there: lookups by
 * this library itself (libgpupool's, inside it) are never swapped.
 *
 * glibc has two versions of dlsym: GLIBC_2.34 (libc.so.6) and the older
 * one of libdl (GLIBC_2.2.5 on x86_64, GLIBC_2.17 on aarch64); a program
 * binds the one it was linked against, so the entry has both.  Other
 * architectures have no entry: the dlsym() way in is then not covered.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "interpose.h"

typedef void *(*ip_dlsym_fn)(void *, const char *);

/* The real dlsym (read by the entry's assembly). */
__attribute__((visibility("hidden"))) ip_dlsym_fn ip_real_dlsym;

/* Not instrumented: a sanitizer's runtime looks up the functions it
 * intercepts with dlsym(RTLD_NEXT) before its shadow memory exists.
 */
__attribute__((visibility("hidden"))) ip_dlsym_fn ip_dlsym_resolve(void);
__attribute__((no_sanitize("address", "thread", "undefined")))
ip_dlsym_fn ip_dlsym_resolve(void)
{
	ip_dlsym_fn real = __atomic_load_n(&ip_real_dlsym, __ATOMIC_ACQUIRE);

	if (real)
		return real;
	*(void **)&real = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
#if defined(__x86_64__)
	if (!real)
		*(void **)&real = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
#elif defined(__aarch64__)
	if (!real)
		*(void **)&real = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17");
#endif
	__atomic_store_n(&ip_real_dlsym, real, __ATOMIC_RELEASE);
	return real;
}

__attribute__((visibility("hidden"))) void *ip_dlsym_handle(void *handle,
							    const char *name);
void *ip_dlsym_handle(void *handle, const char *name)
{
	/* Reached by a jump: this is the caller of dlsym(). */
	void *caller = __builtin_return_address(0);
	void *p = ip_dlsym_resolve()(handle, name), *q;

	if (!p || !name || !ip_wraps(name) || ip_is_self(caller))
		return p;
	q = strncmp(name, "cuda", 4) ? ip_driver_swap(p) :
	    ip_runtime_swap(p, name);
	dlerror();	/* the lookups above may have left a message: dlsym()
			 * found what it was asked for */
	return q;
}

#if defined(__x86_64__)
__asm__(".text\n"
	".globl ip_dlsym_entry\n"
	".globl ip_dlsym_entry_old\n"
	".type ip_dlsym_entry, @function\n"
	".type ip_dlsym_entry_old, @function\n"
	"ip_dlsym_entry:\n"
	"ip_dlsym_entry_old:\n"
	"	cmpq $-1, %rdi\n"		/* RTLD_NEXT */
	"	je 1f\n"
	"	testq %rdi, %rdi\n"		/* RTLD_DEFAULT */
	"	je 1f\n"
	"	jmp ip_dlsym_handle\n"
	"1:	movq ip_real_dlsym(%rip), %rax\n"
	"	testq %rax, %rax\n"
	"	jz 2f\n"
	"	jmp *%rax\n"
	"2:	pushq %rdi\n"			/* keeps the stack 16-aligned */
	"	pushq %rsi\n"			/* at the call, with the pad */
	"	subq $8, %rsp\n"
	"	call ip_dlsym_resolve\n"
	"	addq $8, %rsp\n"
	"	popq %rsi\n"
	"	popq %rdi\n"
	"	jmp *%rax\n"
	".size ip_dlsym_entry, .-ip_dlsym_entry\n"
	".size ip_dlsym_entry_old, .-ip_dlsym_entry_old\n"
	".symver ip_dlsym_entry, dlsym@@GLIBC_2.34\n"
	".symver ip_dlsym_entry_old, dlsym@GLIBC_2.2.5\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl ip_dlsym_entry\n"
	".globl ip_dlsym_entry_old\n"
	".type ip_dlsym_entry, %function\n"
	".type ip_dlsym_entry_old, %function\n"
	"ip_dlsym_entry:\n"
	"ip_dlsym_entry_old:\n"
	"	cmn x0, #1\n"			/* RTLD_NEXT */
	"	b.eq 1f\n"
	"	cbz x0, 1f\n"			/* RTLD_DEFAULT */
	"	b ip_dlsym_handle\n"
	"1:	adrp x16, ip_real_dlsym\n"
	"	ldr x16, [x16, :lo12:ip_real_dlsym]\n"
	"	cbz x16, 2f\n"
	"	br x16\n"
	"2:	stp x29, x30, [sp, #-32]!\n"	/* x30: the caller's return */
	"	stp x0, x1, [sp, #16]\n"
	"	bl ip_dlsym_resolve\n"
	"	mov x16, x0\n"
	"	ldp x0, x1, [sp, #16]\n"
	"	ldp x29, x30, [sp], #32\n"
	"	br x16\n"
	".size ip_dlsym_entry, .-ip_dlsym_entry\n"
	".size ip_dlsym_entry_old, .-ip_dlsym_entry_old\n"
	".symver ip_dlsym_entry, dlsym@@GLIBC_2.34\n"
	".symver ip_dlsym_entry_old, dlsym@GLIBC_2.17\n");
#endif
