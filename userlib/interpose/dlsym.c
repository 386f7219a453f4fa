// SPDX-License-Identifier: MIT
/*
 * dlsym.c - dlsym() and dlvsym(), for the programs that reach CUDA through
 * a handle: XLA (TensorFlow, JAX) takes cuMemHostAlloc with dlsym() on
 * libcuda.so.1, the runtime takes cuGetProcAddress_v2 so, Python's ctypes
 * takes cudaHostAlloc so, and dlvsym() asks the same by version.  A
 * pointer found is swapped for ours when it is the real address of an
 * entry point we wrap (driver.c, runtime.c).
 *
 * Both must stay what they are for everyone else, and they answer by who
 * calls them: RTLD_NEXT means "after the caller's object", and glibc reads
 * the caller from the return address.  So their entries are a few
 * instructions of assembly (dlsym_x86_64.S, dlsym_aarch64.S) that jump
 * (never call) to the real function for RTLD_NEXT and RTLD_DEFAULT (those
 * find our own definitions first anyway), and to ip_dlsym_handle /
 * ip_dlvsym_handle for a handle, which read the caller here: lookups by
 * this library itself (libgpupool's, inside it) are never swapped.
 *
 * glibc has two versions of each: GLIBC_2.34 (libc.so.6) and the older
 * one of libdl (GLIBC_2.2.5 on x86_64, GLIBC_2.17 on aarch64); a program
 * binds the one it was linked against, so the entries have both.  Other
 * architectures have no entry: the dlsym() way in is then not covered.
 *
 * The real functions are the next definitions after this library, found
 * with dlvsym(RTLD_NEXT); but our own references to dlvsym bind to our
 * own entry, so the first dlvsym is libc's, read from libc's dynamic
 * symbol table (ip_libc_dlvsym).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <string.h>

#include "interpose.h"

typedef void *(*ip_dlsym_fn)(void *, const char *);
typedef void *(*ip_dlvsym_fn)(void *, const char *, const char *);

#if defined(__aarch64__)
#define IP_GLIBC_OLD	"GLIBC_2.17"
#else
#define IP_GLIBC_OLD	"GLIBC_2.2.5"
#endif

/* The real functions (read by the entries' assembly). */
__attribute__((visibility("hidden"))) ip_dlsym_fn ip_real_dlsym;
__attribute__((visibility("hidden"))) ip_dlvsym_fn ip_real_dlvsym;

/*
 * Not instrumented, nor anything they call: a sanitizer's runtime looks
 * up the functions it intercepts with dlsym(RTLD_NEXT) before its shadow
 * memory exists.
 */
#define IP_BARE __attribute__((no_sanitize("address", "thread", "undefined")))

IP_BARE static int ip_same(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

IP_BARE static uint32_t ip_gnu_hash(const char *s)
{
	uint32_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

/* The dynamic section's pointer: relocated by ld.so on most targets. */
IP_BARE static const void *ip_dyn_ptr(const struct link_map *lm, ElfW(Addr) p)
{
	return (const void *)(p < lm->l_addr ? p + lm->l_addr : p);
}

/* Does symbol i have version `version` (its verdef's name)? */
IP_BARE static int ip_has_version(const char *strtab, const ElfW(Versym) *versym,
				  const ElfW(Verdef) *vd, uint32_t i,
				  const char *version)
{
	unsigned int ndx = versym[i] & 0x7fff;

	for (; vd; vd = vd->vd_next ? (const void *)((const char *)vd + vd->vd_next) : NULL)
		if (vd->vd_ndx == ndx) {
			const ElfW(Verdaux) *a = (const void *)((const char *)vd + vd->vd_aux);

			return ip_same(strtab + a->vda_name, version);
		}
	return 0;
}

/* name@version in libc's dynamic symbol table (its GNU hash), or NULL. */
IP_BARE static void *ip_libc_sym(const char *name, const char *version)
{
	const ElfW(Sym) *symtab = NULL;
	const ElfW(Versym) *versym = NULL;
	const ElfW(Verdef) *verdef = NULL;
	const uint32_t *gh = NULL, *buckets, *chain;
	const char *strtab = NULL;
	struct link_map *lm = NULL;
	const ElfW(Dyn) *d;
	uint32_t h, i;
	Dl_info info;

	if (!dladdr1((void *)gnu_get_libc_version, &info, (void **)&lm,
		     RTLD_DL_LINKMAP) || !lm)
		return NULL;
	for (d = lm->l_ld; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_SYMTAB)
			symtab = ip_dyn_ptr(lm, d->d_un.d_ptr);
		else if (d->d_tag == DT_STRTAB)
			strtab = ip_dyn_ptr(lm, d->d_un.d_ptr);
		else if (d->d_tag == DT_GNU_HASH)
			gh = ip_dyn_ptr(lm, d->d_un.d_ptr);
		else if (d->d_tag == DT_VERSYM)
			versym = ip_dyn_ptr(lm, d->d_un.d_ptr);
		else if (d->d_tag == DT_VERDEF)
			verdef = ip_dyn_ptr(lm, d->d_un.d_ptr);
	}
	if (!symtab || !strtab || !gh || !versym || !verdef)
		return NULL;
	/* nbuckets, symoffset, bloom words, shift; bloom, buckets, chain. */
	buckets = (const uint32_t *)((const ElfW(Addr) *)(gh + 4) + gh[2]);
	chain = buckets + gh[0] - gh[1];
	h = ip_gnu_hash(name);
	for (i = buckets[h % gh[0]]; i >= gh[1]; i++) {
		const ElfW(Sym) *s = &symtab[i];

		if ((chain[i] | 1) == (h | 1) && s->st_shndx != SHN_UNDEF &&
		    ip_same(strtab + s->st_name, name) &&
		    ip_has_version(strtab, versym, verdef, i, version))
			return (void *)(lm->l_addr + s->st_value);
		if (chain[i] & 1)
			break;
	}
	return NULL;
}

IP_BARE static void *ip_libc_dlvsym(const void *unused)
{
	(void)unused;
	return ip_libc_sym("dlvsym", "GLIBC_2.34");
}

/* The next definition of name after this library, at glibc's version. */
IP_BARE static void *ip_next(const char *name)
{
	static void *boot;
	ip_dlvsym_fn dlvsym_libc = (ip_dlvsym_fn)ip_bind(&boot, ip_libc_dlvsym, NULL);
	void *p = NULL;

	if (dlvsym_libc) {
		p = dlvsym_libc(RTLD_NEXT, name, "GLIBC_2.34");
		if (!p)
			p = dlvsym_libc(RTLD_NEXT, name, IP_GLIBC_OLD);
	}
	return p;
}

IP_BARE static void *ip_next_dlsym(const void *unused)
{
	(void)unused;
	return ip_next("dlsym");
}

IP_BARE static void *ip_next_dlvsym(const void *unused)
{
	(void)unused;
	return ip_next("dlvsym");
}

/* The entries' binders (their slow path). */
IP_BARE __attribute__((visibility("hidden"))) ip_dlsym_fn ip_dlsym_resolve(void);
ip_dlsym_fn ip_dlsym_resolve(void)
{
	return (ip_dlsym_fn)ip_bind((void **)&ip_real_dlsym, ip_next_dlsym, NULL);
}

IP_BARE __attribute__((visibility("hidden"))) ip_dlvsym_fn ip_dlvsym_resolve(void);
ip_dlvsym_fn ip_dlvsym_resolve(void)
{
	return (ip_dlvsym_fn)ip_bind((void **)&ip_real_dlvsym, ip_next_dlvsym, NULL);
}

/* What a lookup by caller found, p, for name: ours when we wrap it. */
static void *ip_swap_found(void *p, const char *name, const void *caller)
{
	void *q;

	if (!p || !name || !ip_wraps(name) || ip_is_self(caller))
		return p;
	q = strncmp(name, "cuda", 4) ? ip_driver_swap(p) : ip_runtime_swap(p, name);
	dlerror();	/* the lookups above may have left a message: the
			 * lookup found what it was asked for */
	return q;
}

__attribute__((visibility("hidden"))) void *ip_dlsym_handle(void *handle,
							    const char *name);
void *ip_dlsym_handle(void *handle, const char *name)
{
	/* Reached by a jump: this is the caller of dlsym(). */
	void *caller = __builtin_return_address(0);

	return ip_swap_found(ip_dlsym_resolve()(handle, name), name, caller);
}

__attribute__((visibility("hidden"))) void *ip_dlvsym_handle(void *handle,
							     const char *name,
							     const char *version);
void *ip_dlvsym_handle(void *handle, const char *name, const char *version)
{
	void *caller = __builtin_return_address(0);

	return ip_swap_found(ip_dlvsym_resolve()(handle, name, version), name,
			     caller);
}
