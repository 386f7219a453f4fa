"""Pool and Buffer: allocation, views, lifetime, errors, figures."""
import errno
import gc
import os
import subprocess
import sys
import unittest

import gpupool

try:
    import numpy as np
except ImportError:
    np = None

BACKEND = os.environ.get("GPUPOOL_BACKEND")


class PoolTest(unittest.TestCase):
    def setUp(self):
        self.pool = gpupool.Pool()
        self.base = self.pool.stats()["in_use"]

    def tearDown(self):
        self.pool.close()

    def in_use(self):
        gc.collect()
        return self.pool.stats()["in_use"] - self.base

    def test_backend_is_the_one_asked_for(self):
        info = self.pool.info()
        if BACKEND:
            self.assertEqual(BACKEND, info["backend"])
        self.assertIn(info["backend"], ("kernel", "user"))
        self.assertEqual("1.0", info["lib_version"])
        self.assertTrue(info["why"])

    def test_buffer_write_read(self):
        buf = self.pool.buffer(100000)
        v = buf.view()
        self.assertEqual(100000, len(v))
        v[:] = bytes(range(256)) * 390 + bytes(160)
        self.assertEqual(bytes(range(256)), bytes(buf.view()[:256]))
        self.assertGreaterEqual(self.in_use(), 100000)
        del v
        buf.free()
        self.assertTrue(buf.freed)
        self.assertEqual(0, self.in_use())

    @unittest.skipIf(np is None, "numpy not importable")
    def test_empty_numpy(self):
        a = self.pool.empty((3, 5, 7), "float32")
        self.assertEqual((3, 5, 7), a.shape)
        self.assertEqual(np.float32, a.dtype)
        a[:] = 1.5
        self.assertEqual(1.5 * 105, float(a.sum()))
        self.assertGreaterEqual(self.in_use(), 3 * 5 * 7 * 4)
        del a                       # the last view: the memory goes back
        self.assertEqual(0, self.in_use())

    @unittest.skipIf(np is None, "numpy not importable")
    def test_views_keep_memory_alive(self):
        buf = self.pool.buffer(4096)
        a = buf.numpy((1024,), "int32")
        del buf                     # the array still shows the memory
        a[:] = 42
        self.assertEqual(42 * 1024, int(a.sum()))
        self.assertGreater(self.in_use(), 0)
        del a
        self.assertEqual(0, self.in_use())

    def test_free_refuses_while_a_view_exists(self):
        buf = self.pool.buffer(8192)
        v = buf.view()[10:20]
        with self.assertRaises(BufferError):
            buf.free()
        v[0] = 1                    # still valid: nothing was freed
        del v
        buf.free()
        with self.assertRaises(ValueError):
            buf.view()
        buf.free()                  # a second free is harmless

    def test_closed_pool_keeps_live_buffers(self):
        pool = gpupool.Pool()
        buf = pool.buffer(65536)
        pool.close()
        buf.view()[:] = b"\x5a" * 65536     # still mapped
        self.assertEqual(b"\x5a" * 4, bytes(buf.view()[:4]))
        with self.assertRaises(ValueError):
            pool.buffer(10)
        buf.free()

    def test_placement(self):
        # Three fresh 4 KiB buffers in a new segment: tf and exact cut each
        # from the low end of the free range (each above the one before),
        # seg and half from the high end (each below), age the second beside
        # the segment's high edge (older than the first), the third beside
        # the first (older than the second); as the C test of the option.
        # Bit 0: the second above the first; bit 1: the third above the
        # second.  An explicit placement wins over $GPUPOOL_POLICY.
        def order(placement):
            with gpupool.Pool(placement=placement) as pool:
                a, b, c = (pool.buffer(4096) for _ in range(3))
                return int(b.ptr > a.ptr) | int(c.ptr > b.ptr) << 1

        env = dict(os.environ)
        try:
            os.environ["GPUPOOL_POLICY"] = "half"
            self.assertEqual(3, order("tf"))
            self.assertEqual(3, order("exact"))
            self.assertEqual(0, order("seg"))
            self.assertEqual(1, order("age"))
            self.assertEqual(0, order(None))        # the environment's
            del os.environ["GPUPOOL_POLICY"]
            self.assertEqual(3, order(None))        # the default: tf
        finally:
            os.environ.clear()
            os.environ.update(env)
        for bad in ("best", "TF", 1, ["age"]):
            with self.assertRaisesRegex(ValueError, "placement"):
                gpupool.Pool(placement=bad)

    def test_errors_are_exceptions_with_the_message(self):
        with self.assertRaises(ValueError):
            self.pool.buffer(0)
        with self.assertRaises(gpupool.GpupoolError) as cm:
            self.pool.buffer(1 << 62)
        self.assertEqual(errno.ENOMEM, cm.exception.errno)
        self.assertIn("gp_host_alloc", str(cm.exception))
        with self.assertRaises(ValueError):
            gpupool.Pool(backend="bogus")
        with self.assertRaises(gpupool.GpupoolError) as cm:
            self.pool.export(self.pool.buffer(4096))      # not shared
        self.assertEqual(errno.EINVAL, cm.exception.errno)

    @unittest.skipIf(os.path.exists("/dev/gpupool"), "the module is loaded")
    def test_kernel_backend_without_module(self):
        # In a child without GPUPOOL_BACKEND, which would override the
        # option (the environment forces a backend).
        env = {k: v for k, v in os.environ.items() if k != "GPUPOOL_BACKEND"}
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(gpupool.__file__))
        r = subprocess.run(
            [sys.executable, "-c",
             "import gpupool\n"
             "try:\n gpupool.Pool(backend='kernel')\n"
             "except gpupool.GpupoolError as e:\n print(e.errno, e)\n"],
            capture_output=True, text=True, env=env)
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertTrue(r.stdout.startswith("%d " % errno.ENODEV), r.stdout)
        self.assertIn("gp_open", r.stdout)

    def test_stats_and_trim(self):
        st = self.pool.stats()
        for key in ("in_use", "reserved", "cached", "allocs", "frees"):
            self.assertIn(key, st)
        buf = self.pool.buffer(3 << 20)
        buf.free()
        st = self.pool.stats()
        self.assertGreater(st["cached"], 0)
        self.assertGreater(self.pool.trim(), 0)


if __name__ == "__main__":
    unittest.main()
