// SPDX-License-Identifier: MIT
/*
 * objects.c - the loaded objects the interposer looks in for the real
 * functions: the runtime a Python extension loaded with RTLD_LOCAL is in
 * no scope that dlsym(RTLD_NEXT) searches, and a pointer's own object
 * tells which runtime or driver it came from.  Never this library itself:
 * its own definitions of the same names are the wrappers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "interpose.h"

#define IP_MAX_OBJECTS	256

/* This library's link map. */
static struct link_map *ip_self(void)
{
	struct link_map *self = NULL;
	Dl_info info;

	dladdr1((void *)ip_self, &info, (void **)&self, RTLD_DL_LINKMAP);
	return self;
}

int ip_is_self(const void *addr)
{
	struct link_map *lm = NULL;
	Dl_info info;

	return dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm &&
	       lm == ip_self();
}

void *ip_object_of(const void *addr)
{
	struct link_map *lm = NULL;
	Dl_info info;

	if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm ||
	    !lm->l_name[0] || lm == ip_self())
		return NULL;
	return dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
}

struct ip_objects {
	const char *self;
	int n;
	char names[IP_MAX_OBJECTS][256];
};

static int ip_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ip_objects *o = arg;

	(void)size;
	if (info->dlpi_name[0] && strcmp(info->dlpi_name, o->self) &&
	    o->n < IP_MAX_OBJECTS)
		strncpy(o->names[o->n++], info->dlpi_name, 255);
	return 0;
}

void *ip_find_in_objects(const char *name, const char *version)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct ip_objects o;	/* 64 KiB: not on a stack */
	struct link_map *self = ip_self();
	void *fn = NULL, *dl;
	int i;

	pthread_mutex_lock(&lock);
	o.self = self ? self->l_name : "";
	o.n = 0;
	/* Opened after the walk: it holds a loader lock. */
	dl_iterate_phdr(ip_object, &o);
	for (i = 0; i < o.n && !fn; i++) {
		dl = dlopen(o.names[i], RTLD_LAZY | RTLD_NOLOAD);
		if (!dl)
			continue;
		fn = version ? dlvsym(dl, name, version) : dlsym(dl, name);
		dlclose(dl);
	}
	pthread_mutex_unlock(&lock);
	return fn;
}

/* Not instrumented: dlsym.c binds the real dlsym with it, which a
 * sanitizer's runtime asks for before its shadow memory exists.
 */
__attribute__((no_sanitize("address", "thread", "undefined")))
void *ip_bind(void **slot, void *(*find)(const void *arg), const void *arg)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (p)
		return p;
	p = find(arg);
	if (p)
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	return p;
}
