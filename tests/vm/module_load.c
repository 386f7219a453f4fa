// SPDX-License-Identifier: GPL-2.0
/*
 * module_load: gpupool.ko loads and unloads cleanly; the nodes it creates
 * (/dev/gpupool, /proc/gpupool, /sys/module/gpupool) look as documented;
 * GPUPOOL_IOC_VERSION answers ABI 1.x and validates its input; unknown
 * ioctls give ENOTTY; the module cannot be unloaded while a file is open.
 * Its parameters' values, good and bad: module_params.c.
 */
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>

#include <linux/gpupool.h>

#include "kselftest_harness.h"
#include "lib.h"

#define MISC_MAJOR	10

FIXTURE(loaded) {
	int unused;
};

FIXTURE_SETUP(loaded)
{
	GP_REQUIRE();
	ASSERT_EQ(0, gp_load(GP_TEST_PARAMS));
}

FIXTURE_TEARDOWN(loaded)
{
	EXPECT_EQ(0, gp_unload_wait(5000));
	EXPECT_EQ(0, gp_loaded());
}

static int gp_open(void)
{
	return open(GP_DEV, O_RDWR | O_CLOEXEC);
}

/* /dev/gpupool: a misc character device, mode 0660 (dev_mode default). */
TEST_F(loaded, dev_node)
{
	unsigned int maj, min;
	char buf[64];
	struct stat st;

	ASSERT_EQ(0, stat(GP_DEV, &st)) TH_LOG("stat %s: %s", GP_DEV, strerror(errno));
	ASSERT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0660, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
	EXPECT_EQ(MISC_MAJOR, major(st.st_rdev));

	/* The sysfs view of the device agrees with the node. */
	ASSERT_LT(0, gp_read_file("/sys/class/misc/gpupool/dev", buf, sizeof(buf)));
	ASSERT_EQ(2, sscanf(buf, "%u:%u", &maj, &min));
	EXPECT_EQ(major(st.st_rdev), maj);
	EXPECT_EQ(minor(st.st_rdev), min);
}

/* /proc/gpupool: world-readable, `Key: value` lines, the documented keys. */
TEST_F(loaded, proc_file)
{
	static const char *const keys[] = {
		"AbiVersion", "PoolTotal", "PoolFree", "InUse", "PeakInUse",
		"LargestFree", "Fragmentation", "ChunksInUse", "ChunksFree",
		"Allocs", "Frees", "FailedAllocs", "PoolLimit",
		"PerProcessLimit", "ReserveTime", "Nodes", "CgroupLimits",
		"CgroupDenials", "Idle", "ChunksIdle", "ReclaimAsks",
		"ReclaimHoldersAsked", "ReclaimAsked", "ReclaimGiven",
		"ReclaimBusy", "ReclaimTimeouts", "ReclaimServed",
		"ReclaimThrottled", "ReclaimWaitTime", "ReclaimWait",
		"ReclaimRate",
	};
	char text[16384], val[128], want[32];
	const char *line;
	struct stat st;
	unsigned int i;
	ssize_t n;

	ASSERT_EQ(0, stat(GP_PROC, &st));
	EXPECT_TRUE(S_ISREG(st.st_mode));
	EXPECT_EQ(0444, st.st_mode & 07777);

	n = gp_read_file(GP_PROC, text, sizeof(text));
	ASSERT_LT(0, n) TH_LOG("read %s: %s", GP_PROC, strerror(-n));

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		EXPECT_NE(NULL, gp_proc_value(text, keys[i], val, sizeof(val)))
			TH_LOG("%s: no %s line", GP_PROC, keys[i]);

	snprintf(want, sizeof(want), "%u.%u", GPUPOOL_ABI_MAJOR,
		 GPUPOOL_ABI_MINOR);
	ASSERT_NE(NULL, gp_proc_value(text, "AbiVersion", val, sizeof(val)));
	EXPECT_STREQ(want, val);
	/* pool_size=16M, all of it reserved in a VM with room to spare. */
	ASSERT_NE(NULL, gp_proc_value(text, "PoolTotal", val, sizeof(val)));
	EXPECT_STREQ("16384 kB", val);

	/* Every line is `Key: value`, the key one word. */
	for (line = text; *line; ) {
		const char *end = strchr(line, '\n');
		const char *colon = strchr(line, ':');
		const char *k;

		ASSERT_NE(NULL, end) TH_LOG("unterminated last line");
		if (end != line) {
			ASSERT_TRUE(colon && colon < end)
				TH_LOG("no colon: %.*s", (int)(end - line), line);
			for (k = line; k < colon; k++)
				ASSERT_TRUE(*k != ' ' && *k != '\t')
					TH_LOG("blank in key: %.*s",
					       (int)(end - line), line);
		}
		line = end + 1;
	}
}

/* The parameters are visible, read-only, in sysfs. */
TEST_F(loaded, sysfs_params)
{
	char buf[64];
	struct stat st;

	ASSERT_LT(0, gp_read_file(GP_SYSMOD "/parameters/pool_size", buf, sizeof(buf)));
	EXPECT_STREQ("16M\n", buf);
	ASSERT_EQ(0, stat(GP_SYSMOD "/parameters/pool_size", &st));
	EXPECT_EQ(0444, st.st_mode & 0777);
	ASSERT_LT(0, gp_read_file(GP_SYSMOD "/initstate", buf, sizeof(buf)));
	EXPECT_STREQ("live\n", buf);
}

TEST_F(loaded, version)
{
	struct gpupool_version v;
	int fd = gp_open();

	ASSERT_LE(0, fd) TH_LOG("open %s: %s", GP_DEV, strerror(errno));
	memset(&v, 0, sizeof(v));
	ASSERT_EQ(0, ioctl(fd, GPUPOOL_IOC_VERSION, &v)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(1, v.abi_major);
	EXPECT_LE(GPUPOOL_ABI_MINOR, v.abi_minor);
	EXPECT_LE(1, v.min_lib_major);
	EXPECT_GE(v.abi_major, v.min_lib_major);
	EXPECT_EQ(0, v.flags);
	EXPECT_EQ(16ULL << 20, v.pool_size);
	EXPECT_EQ((uint64_t)sysconf(_SC_PAGESIZE), v.granularity);
	EXPECT_LE(1, v.nr_nodes);
	EXPECT_EQ(v.nr_nodes, (uint32_t)__builtin_popcountll(v.node_mask));
	EXPECT_EQ(0, v.pad);
	/* ABI 1.1: chunks are charged to cgroups; dmem only where it exists.
	 * ABI 1.2: idle chunks are asked for.
	 */
	EXPECT_TRUE(v.features & GPUPOOL_FEATURE_CGROUP);
	EXPECT_TRUE(v.features & GPUPOOL_FEATURE_RECLAIM);
	EXPECT_EQ(0, v.features & ~(GPUPOOL_FEATURE_CGROUP | GPUPOOL_FEATURE_DMEM |
				    GPUPOOL_FEATURE_RECLAIM));
	EXPECT_EQ(0, v.reserved[0] | v.reserved[1] | v.reserved[2]);

	/* The same through a read-only open. */
	close(fd);
	fd = open(GP_DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	memset(&v, 0, sizeof(v));
	EXPECT_EQ(0, ioctl(fd, GPUPOOL_IOC_VERSION, &v));
	EXPECT_EQ(1, v.abi_major);
	close(fd);
}

/* Unknown flag bits and non-zero pad/reserved fields: EINVAL. */
TEST_F(loaded, version_rejects_bad_input)
{
	struct gpupool_version v;
	unsigned int i;
	int fd = gp_open();

	ASSERT_LE(0, fd);
	for (i = 0; i < 32; i++) {
		if (GPUPOOL_VERSION_VALID_FLAGS & (1u << i))
			continue;
		memset(&v, 0, sizeof(v));
		v.flags = 1u << i;
		EXPECT_EQ(-1, ioctl(fd, GPUPOOL_IOC_VERSION, &v)) TH_LOG("flag bit %u", i);
		EXPECT_EQ(EINVAL, errno);
	}
	memset(&v, 0, sizeof(v));
	v.pad = 1;
	EXPECT_EQ(-1, ioctl(fd, GPUPOOL_IOC_VERSION, &v));
	EXPECT_EQ(EINVAL, errno);
	for (i = 0; i < sizeof(v.reserved) / sizeof(v.reserved[0]); i++) {
		memset(&v, 0, sizeof(v));
		v.reserved[i] = 1ULL << 63;
		EXPECT_EQ(-1, ioctl(fd, GPUPOOL_IOC_VERSION, &v)) TH_LOG("reserved[%u]", i);
		EXPECT_EQ(EINVAL, errno);
	}
	/*
	 * features was reserved[0] before ABI 1.1: a caller's non-zero word
	 * there is still refused, as it was.
	 */
	memset(&v, 0, sizeof(v));
	v.features = 1;
	EXPECT_EQ(-1, ioctl(fd, GPUPOOL_IOC_VERSION, &v));
	EXPECT_EQ(EINVAL, errno);
	/* Output fields set by the caller are ignored, not rejected. */
	memset(&v, 0xff, sizeof(v));
	v.flags = 0;
	v.pad = 0;
	v.features = 0;
	memset(v.reserved, 0, sizeof(v.reserved));
	EXPECT_EQ(0, ioctl(fd, GPUPOOL_IOC_VERSION, &v));
	EXPECT_EQ(1, v.abi_major);

	EXPECT_EQ(-1, ioctl(fd, GPUPOOL_IOC_VERSION, NULL));
	EXPECT_EQ(EFAULT, errno);
	close(fd);
}

TEST_F(loaded, unknown_ioctl)
{
	int fd = gp_open();
	uint64_t x = 0;

	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, ioctl(fd, _IO(GPUPOOL_IOC_MAGIC, 0x7f)));
	EXPECT_EQ(ENOTTY, errno);
	/* VERSION's number with another size is another command. */
	EXPECT_EQ(-1, ioctl(fd, _IOWR(GPUPOOL_IOC_MAGIC, 0x00, uint64_t), &x));
	EXPECT_EQ(ENOTTY, errno);
	/* Another driver's magic. */
	EXPECT_EQ(-1, ioctl(fd, _IOWR('x', 0x00, struct gpupool_version), &x));
	EXPECT_EQ(ENOTTY, errno);
	close(fd);
}

/* A second load of the same module is refused; the first stays. */
TEST_F(loaded, load_twice)
{
	EXPECT_EQ(-EEXIST, gp_load(GP_TEST_PARAMS));
	EXPECT_EQ(1, gp_loaded());
	EXPECT_EQ(0, access(GP_DEV, F_OK));
}

/*
 * While a file is open the module is in use: delete_module(O_NONBLOCK)
 * fails with EAGAIN and the nodes stay; after close() it unloads and
 * removes them.
 */
TEST_F(loaded, unload_busy)
{
	struct gpupool_version v;
	int fd = gp_open();

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EAGAIN, gp_unload());
	EXPECT_EQ(1, gp_loaded());
	EXPECT_EQ(0, access(GP_DEV, F_OK));
	EXPECT_EQ(0, access(GP_PROC, F_OK));
	memset(&v, 0, sizeof(v));
	EXPECT_EQ(0, ioctl(fd, GPUPOOL_IOC_VERSION, &v));

	/* A second, dup()ed reference keeps it busy after the first goes. */
	int fd2 = dup(fd);

	ASSERT_LE(0, fd2);
	close(fd);
	EXPECT_EQ(-EAGAIN, gp_unload());
	close(fd2);

	EXPECT_EQ(0, gp_unload());
	EXPECT_EQ(0, gp_loaded());
	EXPECT_EQ(-1, access(GP_DEV, F_OK));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, access(GP_PROC, F_OK));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, access(GP_SYSMOD, F_OK));
}

/* Load, use, unload three times in a row: nothing lingers in between. */
TEST(load_unload_cycles)
{
	struct gpupool_version v;
	int i, fd;

	GP_REQUIRE();
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, gp_load(GP_TEST_PARAMS)) TH_LOG("load #%d", i + 1);
		fd = gp_open();
		ASSERT_LE(0, fd) TH_LOG("open #%d: %s", i + 1, strerror(errno));
		memset(&v, 0, sizeof(v));
		EXPECT_EQ(0, ioctl(fd, GPUPOOL_IOC_VERSION, &v));
		EXPECT_EQ(1, v.abi_major);
		close(fd);
		ASSERT_EQ(0, gp_unload()) TH_LOG("unload #%d", i + 1);
		EXPECT_EQ(-1, access(GP_DEV, F_OK));
		EXPECT_EQ(-1, access(GP_PROC, F_OK));
	}
}

/* dev_mode sets the node's permissions. */
TEST(dev_mode_param)
{
	struct stat st;

	GP_REQUIRE();
	ASSERT_EQ(0, gp_load(GP_TEST_PARAMS " dev_mode=0600"));
	EXPECT_EQ(0, stat(GP_DEV, &st));
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

TEST_HARNESS_MAIN
