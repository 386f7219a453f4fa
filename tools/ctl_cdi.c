// SPDX-License-Identifier: MIT
/*
 * ctl_cdi.c - gpupoolctl cdi: the Container Device Interface spec for
 * /dev/gpupool, for podman, containerd 1.7+ and CRI-O.
 *
 *   gpupoolctl cdi [--output FILE] [--cdi-version VERSION]
 *
 * The device gpupool.io/pool=default: the node /dev/gpupool with the
 * owner, group and mode it has on this host (its stat), read-write in the
 * device cgroup, and GPUPOOL_BACKEND=kernel, so that libgpupool in the
 * container uses the module.  Where the interposer is installed (as `run`
 * finds it), two more: gpupool.io/pool=interpose and
 * interpose-fallback, the same and the interposer mounted read-only at its
 * own path, LD_PRELOAD naming it, GPUPOOL_INTERPOSE_MODE strict or
 * fallback (docs/interpose.md).  The node's major and minor are left out:
 * the runtime takes them from the host's node when it creates a container
 * (the CDI library does so for a node without them), so the spec stays
 * right when the module is reloaded and misc hands it another minor.
 *
 * Without /dev/gpupool (the module not loaded: a package's postinst), the
 * spec is the packaged setup's: group gpupool, mode 0660, owner root (the
 * udev rule's), said on stderr.
 *
 * cdiVersion 0.5.0 by default: the newest that Debian 12's podman 4.3 (its
 * CDI library, 0.5.2) accepts; it refuses a spec whose version it does not
 * know.  0.5.0 has no additionalGids (0.7.0 added them), so a container
 * process that is not root must be given the group itself (--group-add);
 * with --cdi-version 0.7.0 or later the spec adds the node's group to the
 * process's groups as well.
 *
 * --output FILE writes the spec to a temporary file in FILE's directory
 * (a name that ends in neither .json nor .yaml, which runtimes would read)
 * and renames it over FILE: a runtime reads the old spec or the new one,
 * never a part.  FILE's directory is made when missing (one level).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "ctl.h"

/* The device as containers see it, and what the packaged setup makes. */
#define CDI_KIND	"gpupool.io/pool"
#define CDI_DEVICE	"default"
#define CDI_NODE	"/dev/gpupool"
#define PKG_GROUP	"gpupool"
#define PKG_MODE	0660

struct node {
	uid_t uid;
	gid_t gid;
	unsigned int mode;	/* permission bits */
	bool found;		/* from the node's stat, not the defaults */
	unsigned int major, minor;
};

/* "X.Y.Z" into a comparable number; -1 when it is not one. */
static long version_code(const char *v)
{
	unsigned int a, b, c;
	int n = -1;

	if (sscanf(v, "%u.%u.%u%n", &a, &b, &c, &n) != 3 || n < 0 || v[n] ||
	    a > 99 || b > 99 || c > 99)
		return -1;
	return a * 10000L + b * 100L + c;
}

/* The versions the spec may claim: 0.5.0 (hostPath) up to 1.1.0. */
static const char *const known_versions[] = {
	"0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0",
};

static int node_info(struct node *nd)
{
	struct stat st;
	struct group *g;

	memset(nd, 0, sizeof(*nd));
	if (!stat(dev_path, &st)) {
		if (!S_ISCHR(st.st_mode)) {
			fprintf(stderr, "gpupoolctl: %s is not a character device\n",
				dev_path);
			return EX_FAIL;
		}
		nd->uid = st.st_uid;
		nd->gid = st.st_gid;
		nd->mode = st.st_mode & 0777;
		nd->major = major(st.st_rdev);
		nd->minor = minor(st.st_rdev);
		nd->found = true;
		return EX_OK;
	}
	if (errno != ENOENT) {
		fprintf(stderr, "gpupoolctl: %s: %s\n", dev_path, strerror(errno));
		return EX_FAIL;
	}
	g = getgrnam(PKG_GROUP);
	if (!g) {
		fprintf(stderr, "gpupoolctl: no %s and no group '%s': nothing to describe\n",
			dev_path, PKG_GROUP);
		return explain_open_error(dev_path, ENOENT);
	}
	nd->uid = 0;
	nd->gid = g->gr_gid;
	nd->mode = PKG_MODE;
	return EX_OK;
}

/* One device's entry: name, its mode for the interposer (NULL: none). */
static void device_write(FILE *f, const struct node *nd, bool gids,
			 const char *name, const char *lib, const char *mode)
{
	fprintf(f, "    {\n"
		"      \"name\": \"%s\",\n"
		"      \"containerEdits\": {\n"
		"        \"env\": [\n"
		"          \"GPUPOOL_BACKEND=kernel\"", name);
	if (mode) {
		char preload[PATH_MAX + 16];

		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", lib);
		fprintf(f, ",\n          ");
		json_str_to(f, preload);
		fprintf(f, ",\n          \"GPUPOOL_INTERPOSE_MODE=%s\"", mode);
	}
	fprintf(f, "\n        ],\n"
		"        \"deviceNodes\": [\n"
		"          {\n"
		"            \"path\": \"" CDI_NODE "\",\n");
	if (strcmp(dev_path, CDI_NODE)) {
		fprintf(f, "            \"hostPath\": ");
		json_str_to(f, dev_path);
		fprintf(f, ",\n");
	}
	fprintf(f, "            \"type\": \"c\",\n"
		"            \"permissions\": \"rw\",\n"
		"            \"fileMode\": %u,\n"
		"            \"uid\": %u,\n"
		"            \"gid\": %u\n"
		"          }\n"
		"        ]",
		nd->mode, (unsigned int)nd->uid, (unsigned int)nd->gid);
	if (mode) {
		fprintf(f, ",\n        \"mounts\": [\n          {\n            \"hostPath\": ");
		json_str_to(f, lib);
		fprintf(f, ",\n            \"containerPath\": ");
		json_str_to(f, lib);
		fprintf(f, ",\n            \"options\": [\"ro\", \"nosuid\", \"nodev\", \"bind\"]\n"
			"          }\n        ]");
	}
	if (gids && nd->gid)
		fprintf(f, ",\n        \"additionalGids\": [\n"
			"          %u\n"
			"        ]", (unsigned int)nd->gid);
	fprintf(f, "\n      }\n    }");
}

/* lib: the interposer, or NULL (then only the default device). */
static void spec_write(FILE *f, const struct node *nd, const char *version,
		       const char *lib)
{
	bool gids = version_code(version) >= version_code("0.7.0");

	fprintf(f, "{\n"
		"  \"cdiVersion\": \"%s\",\n"
		"  \"kind\": \"" CDI_KIND "\",\n"
		"  \"devices\": [\n", version);
	device_write(f, nd, gids, CDI_DEVICE, NULL, NULL);
	if (lib) {
		fprintf(f, ",\n");
		device_write(f, nd, gids, "interpose", lib, "strict");
		fprintf(f, ",\n");
		device_write(f, nd, gids, "interpose-fallback", lib, "fallback");
	}
	fprintf(f, "\n  ]\n}\n");
}

/* --output FILE: written whole (ctl_atomic_open), its directory made. */
static int spec_file(const char *path, const struct node *nd,
		     const char *version, const char *lib)
{
	struct ctl_atomic w;
	int ret = ctl_atomic_open(&w, path, "--output", true);

	if (ret)
		return ret;
	spec_write(w.f, nd, version, lib);
	return ctl_atomic_commit(&w);
}

int cmd_cdi(const struct opts *o)
{
	const char *version = o->cdi_version ? o->cdi_version : "0.5.0";
	char lib[PATH_MAX];
	const char *ip;
	struct group *g;
	struct node nd;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(known_versions) / sizeof(known_versions[0]); i++)
		if (!strcmp(version, known_versions[i]))
			break;
	if (i == sizeof(known_versions) / sizeof(known_versions[0])) {
		fprintf(stderr, "gpupoolctl: --cdi-version: '%s' is not one of 0.5.0, 0.6.0, 0.7.0, 0.8.0, 1.0.0, 1.1.0\n",
			version);
		return EX_USAGE;
	}
	ret = node_info(&nd);
	if (ret)
		return ret;
	ip = ctl_interposer(NULL, lib, true) ? NULL : lib;
	g = getgrgid(nd.gid);
	if (!nd.found)
		fprintf(stderr, "gpupoolctl: no %s (module not loaded): the spec of the packaged setup, group %s (gid %u), mode %04o\n",
			dev_path, PKG_GROUP, (unsigned int)nd.gid, nd.mode);
	if (!o->output) {
		spec_write(stdout, &nd, version, ip);
		return EX_OK;
	}
	ret = spec_file(o->output, &nd, version, ip);
	if (!ret && nd.found)
		fprintf(stderr, "gpupoolctl: wrote %s: " CDI_KIND "=" CDI_DEVICE
			", %s (%u:%u) group %s (gid %u), mode %04o\n",
			o->output, dev_path, nd.major, nd.minor,
			g ? g->gr_name : "?", (unsigned int)nd.gid, nd.mode);
	return ret;
}
