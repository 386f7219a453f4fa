"""A cgroup limit of gpupool.ko: GpupoolError with errno ENOSPC, and the
library's message naming the cgroup, its limit and its use.

Runs on the kernel backend as root with a module of ABI 1.1 (the VM's
py-<kernel> run); skips elsewhere, saying why.  cgroup2 is mounted at
/sys/fs/cgroup when nothing is (and unmounted again); the limit is the
module's own (GPUPOOL_IOC_CGROUP), or dmem.max where the module's limits
are the dmem controller's.  The allocating process is a child moved into
the cgroup, so that the test runner never leaves its own.
"""
import ctypes
import errno
import fcntl
import json
import os
import struct
import subprocess
import sys
import time
import unittest

import gpupool

CGROOT = "/sys/fs/cgroup"
CGROUP2_SUPER_MAGIC = 0x63677270
MIB = 1 << 20

# include/uapi/linux/gpupool.h
_VERSION_FMT = "=IIIIQQIIQQ3Q"          # struct gpupool_version, 80 bytes
_CGROUP_FMT = "=IiQQQQQQII4Q"           # struct gpupool_cgroup, 96 bytes


def _iowr(nr, size):
    return 3 << 30 | size << 16 | ord("G") << 8 | nr


GPUPOOL_IOC_VERSION = _iowr(0x00, struct.calcsize(_VERSION_FMT))
GPUPOOL_IOC_CGROUP = _iowr(0x05, struct.calcsize(_CGROUP_FMT))
GPUPOOL_FEATURE_CGROUP = 1 << 0
GPUPOOL_FEATURE_DMEM = 1 << 1
GPUPOOL_CGROUP_SET_LIMIT = 1 << 0

# The child: moves itself into the cgroup, fills 24 MiB of the 32 MiB
# limit, then asks for 16 MiB more; prints what it got as JSON.
_CHILD = r"""
import json, os, sys
import gpupool
with open(os.path.join(sys.argv[1], "cgroup.procs"), "w") as f:
    f.write("%d\n" % os.getpid())
out = {}
with gpupool.Pool(no_cuda=True) as pool:
    held = pool.buffer(24 << 20)
    try:
        pool.buffer(16 << 20)
        out["errno"] = 0
    except gpupool.GpupoolError as e:
        out["errno"] = e.errno
        out["message"] = str(e)
    held.free()
print(json.dumps(out))
"""


def _features():
    """GPUPOOL_IOC_VERSION's features, or None (no module, ABI 1.0)."""
    try:
        fd = os.open("/dev/gpupool", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        buf = bytearray(struct.calcsize(_VERSION_FMT))
        fcntl.ioctl(fd, GPUPOOL_IOC_VERSION, buf)
    except OSError:
        return None
    finally:
        os.close(fd)
    v = struct.unpack(_VERSION_FMT, buf)
    major, minor, features = v[0], v[1], v[9]
    if (major, minor) < (1, 1) or not features & GPUPOOL_FEATURE_CGROUP:
        return None
    return features


def _set_module_limit(path, limit):
    dev = os.open("/dev/gpupool", os.O_RDWR | os.O_CLOEXEC)
    cg = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        buf = bytearray(struct.pack(_CGROUP_FMT, GPUPOOL_CGROUP_SET_LIMIT,
                                    cg, limit, 0, 0, 0, 0, 0, 0, 0,
                                    0, 0, 0, 0))
        fcntl.ioctl(dev, GPUPOOL_IOC_CGROUP, buf)
    finally:
        os.close(cg)
        os.close(dev)


def _is_cgroup2(path):
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(256)      # struct statfs, f_type first
    if libc.statfs(path.encode(), buf) != 0:
        return False
    return struct.unpack_from("=q", buf.raw)[0] == CGROUP2_SUPER_MAGIC


def _mount_cgroup2():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"none", CGROOT.encode(), b"cgroup2", 0, None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "mount cgroup2 at %s: %s" % (CGROOT, os.strerror(e)))


def _umount(path):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.umount2(path.encode(), 2)              # MNT_DETACH


class CgroupLimitTest(unittest.TestCase):
    def setUp(self):
        with gpupool.Pool(no_cuda=True) as pool:
            backend = pool.info()["backend"]
        if backend != "kernel":
            self.skipTest("a test of gpupool.ko's cgroup limits (the kernel "
                          "backend, in the VM); backend here: %s" % backend)
        if os.geteuid() != 0:
            self.skipTest("needs root (cgroups, GPUPOOL_IOC_CGROUP's limits)")
        self.features = _features()
        if self.features is None:
            self.skipTest("gpupool.ko older than ABI 1.1 (no cgroup support)")
        self.mounted = False
        self.dirs = []

    def tearDown(self):
        for d in reversed(self.dirs):
            for _ in range(50):                 # the child's exit settles
                try:
                    os.rmdir(d)
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY:
                        self.fail("rmdir %s: %s" % (d, e))
                    time.sleep(0.1)
            else:
                self.fail("rmdir %s: still busy" % d)
        if self.mounted:
            _umount(CGROOT)

    def _cgroups(self):
        if not _is_cgroup2(CGROOT):
            _mount_cgroup2()
            self.mounted = True
        name = "/gpupool-py-%d" % os.getpid()
        parent = CGROOT + name
        os.mkdir(parent)
        self.dirs.append(parent)
        child = parent + "/task"
        if self.features & GPUPOOL_FEATURE_DMEM:
            with open(CGROOT + "/cgroup.controllers") as f:
                if "dmem" not in f.read().split():
                    self.skipTest("no dmem in %s/cgroup.controllers" % CGROOT)
            try:
                with open(CGROOT + "/cgroup.subtree_control", "w") as f:
                    f.write("+dmem")
            except OSError:
                pass                            # may be on already
            with open(parent + "/dmem.max", "w") as f:
                f.write("gpupool %d\n" % (32 * MIB))
        else:
            _set_module_limit(parent, 32 * MIB)
        os.mkdir(child)
        self.dirs.append(child)
        return name, child

    def test_limit_refusal_is_enospc_naming_the_cgroup(self):
        name, child = self._cgroups()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(gpupool.__file__))
        r = subprocess.run([sys.executable, "-c", _CHILD, child],
                           capture_output=True, text=True, env=env,
                           timeout=300)
        self.assertEqual(0, r.returncode, r.stderr)
        out = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertEqual(errno.ENOSPC, out["errno"], out)
        msg = out["message"]
        print("# %s" % msg)
        self.assertIn("gp_host_alloc(16777216)", msg)
        self.assertIn("gpupool.ko refused 16.0 MiB", msg)
        self.assertIn("cgroup %s would exceed its limit of 32.0 MiB "
                      "(24.0 MiB in use" % name, msg)
        self.assertIn("(ENOSPC)", msg)


if __name__ == "__main__":
    unittest.main()
