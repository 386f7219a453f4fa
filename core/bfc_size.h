/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * bfc_size.h - the one reader of a size someone typed: a module parameter
 * (pool_size=, max_size=, per_process_limit=), a libgpupool environment
 * variable (GPUPOOL_HOST_LIMIT, GPUPOOL_DEV_LIMIT), gpupoolctl's
 * `limit set` and the Slurm plugin's options.  It is not the allocator's,
 * but it lives in core/ because core/ is what the module, the library and
 * the tools all compile unchanged: one reader, so that a size means the
 * same wherever it is typed, and one message, so that a bad one is said
 * the same way.
 *
 * A size is decimal digits and an optional unit, nothing else: K, M, G or
 * T, or KiB, MiB, GiB or TiB, each a power of 1024.  Refused, each with
 * its reason: an empty string, a sign ("-64M", "+64M"), anything before
 * the digits (" 64M"), a fraction ("1.5G"), a space or anything after the
 * number or the unit ("64 M", "64M "), a unit in the wrong case or a
 * decimal one ("64m", "64kib", "64MB": m could be milli, MB is 10^6
 * elsewhere),
 * hexadecimal ("0x40"), and anything over the caller's maximum (digits
 * past 2^64 included).  Leading zeros are decimal ("016M" is 16 MiB).
 */
#ifndef GPUPOOL_CORE_BFC_SIZE_H
#define GPUPOOL_CORE_BFC_SIZE_H

#include "bfc.h"

/* What a size may be, for messages and help texts. */
#define BFC_SIZE_ACCEPTED \
	"digits and an optional K, M, G or T, or KiB, MiB, GiB or TiB (powers of 1024), as 512M"

/* Enough for any message bfc_size_parse() writes. */
#define BFC_SIZE_MSG_LEN	320

/*
 * Read s, named name (a parameter or a variable), as a size of at most max
 * bytes: 0 with *out, or -BFC_EINVAL with msg (len bytes) saying
 * "name=s: why; a size is ..., at most max" (the value's bytes outside
 * printable ASCII written as '?').  *out is left alone on failure.
 */
int bfc_size_parse(const char *name, const char *s, uint64_t max,
		   uint64_t *out, char *msg, size_t len);

#endif /* GPUPOOL_CORE_BFC_SIZE_H */
