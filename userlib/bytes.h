/* SPDX-License-Identifier: MIT */
/*
 * bytes.h - the one byte formatter, of the library, of gpupoolctl and of
 * the Slurm plugin (which include this file): binary units, one decimal
 * past the unit.  Two spellings, both kept: the library's and the
 * plugin's messages say "1.5 GiB" (prose, up to TiB), gpupoolctl's tables
 * say "1.5Gi" (a column, up to Pi, as ls -h and free -h do), and scripts
 * and the tests read gpupoolctl's output, so that neither can take the
 * other's.  (The module has no floating point: the size reader's own
 * messages, core/bfc_size.c, write their exact maximum themselves.)
 */
#ifndef GPUPOOL_USERLIB_BYTES_H
#define GPUPOOL_USERLIB_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum gp_bytes_style {
	GP_BYTES_PROSE,		/* "512 B", "1.5 GiB" */
	GP_BYTES_COLUMN,	/* "512B", "1.5Gi" */
};

static inline const char *gp_bytes_fmt(char *buf, size_t len, uint64_t bytes,
				       enum gp_bytes_style style)
{
	static const char *const prose[] = { " B", " KiB", " MiB", " GiB", " TiB" };
	static const char *const column[] = { "B", "Ki", "Mi", "Gi", "Ti", "Pi" };
	const char *const *unit = style == GP_BYTES_COLUMN ? column : prose;
	int top = style == GP_BYTES_COLUMN ? 5 : 4;
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < top) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu%s", (unsigned long long)bytes, unit[0]);
	else
		snprintf(buf, len, "%.1f%s", v, unit[u]);
	return buf;
}

#endif /* GPUPOOL_USERLIB_BYTES_H */
