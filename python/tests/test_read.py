"""Pool.read_into / read_many: the file's bytes into Buffers and numpy arrays
on pool memory, from paths and fds; EOF, bad input, per-path stats (into a
tensor: test_torch.py)."""
import errno
import os
import tempfile
import unittest

import gpupool

try:
    import numpy as np
except ImportError:
    np = None


class ReadTest(unittest.TestCase):
    def setUp(self):
        self.pool = gpupool.Pool()
        self.data = bytes((i * 31 + 7) & 0xff for i in range(300001))
        fd, self.path = tempfile.mkstemp(prefix="gp_read_py_")
        os.write(fd, self.data)
        os.close(fd)

    def tearDown(self):
        os.unlink(self.path)
        self.pool.close()

    def test_buffer_from_path(self):
        buf = self.pool.buffer(1 << 20)
        n = self.pool.read_into(buf, self.path)
        self.assertEqual(len(self.data), n)          # short: end of file
        self.assertEqual(self.data, bytes(buf.view()[:n]))
        n = self.pool.read_into(buf, self.path, offset=513, length=70000)
        self.assertEqual(70000, n)
        self.assertEqual(self.data[513:70513], bytes(buf.view()[:n]))
        self.assertEqual(0, self.pool.read_into(buf, self.path,
                                                offset=len(self.data)))

    def test_fd_and_flags(self):
        buf = self.pool.buffer(8192)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            before = self.pool.read_stats()
            self.assertEqual(8192, self.pool.read_into(buf, fd, 4096,
                                                       buffered=True))
            after = self.pool.read_stats()
            self.assertEqual(8192, after["buffered_bytes"] -
                             before["buffered_bytes"])
            self.assertEqual(self.data[4096:12288], bytes(buf.view()))
            self.assertEqual(0, os.lseek(fd, 0, os.SEEK_CUR))  # untouched
        finally:
            os.close(fd)
        self.assertIn(after["fixed_buffers"],
                      ("unknown", "ok", "refused", "no io_uring",
                       "no buffer table"))

    @unittest.skipIf(np is None, "no numpy")
    def test_numpy(self):
        a = self.pool.empty((100, 1000), "uint8")
        self.assertEqual(100000, self.pool.read_into(a, self.path, 1000))
        self.assertEqual(self.data[1000:101000], a.tobytes())

    def test_bad_input(self):
        buf = self.pool.buffer(4096)
        with self.assertRaises(gpupool.GpupoolError) as cm:
            self.pool.read_into(buf, self.path, length=0)
        self.assertEqual(errno.EINVAL, cm.exception.errno)
        with self.assertRaises(ValueError):
            self.pool.read_into(buf, self.path, length=8192)
        with self.assertRaises(FileNotFoundError):
            self.pool.read_into(buf, self.path + ".missing")
        with self.assertRaises(TypeError):
            self.pool.read_into(bytearray(10), self.path)
        if np is not None:
            # Ordinary memory is no pool buffer: refused, not written.
            a = np.zeros(4096, np.uint8)
            with self.assertRaises(gpupool.GpupoolError) as cm:
                self.pool.read_into(a, self.path)
            self.assertEqual(errno.EINVAL, cm.exception.errno)
            self.assertEqual(0, int(a.sum()))
        dfd = os.open("/", os.O_RDONLY)
        try:
            with self.assertRaises(gpupool.GpupoolError) as cm:
                self.pool.read_into(buf, dfd)
            self.assertEqual(errno.EISDIR, cm.exception.errno)
        finally:
            os.close(dfd)

    def test_read_many(self):
        rec = 10000
        bufs = [self.pool.buffer(rec) for _ in range(40)]
        reqs = [(b, self.path, i * 7001) for i, b in enumerate(bufs)]
        counts = self.pool.read_many(reqs, depth=16)
        self.assertEqual([rec] * 40, counts)
        for i, b in enumerate(bufs):
            self.assertEqual(self.data[i * 7001:i * 7001 + rec],
                             bytes(b.view()))
        # The last record runs past the end: a short count.
        counts = self.pool.read_many([(bufs[0], self.path,
                                       len(self.data) - 10, rec)])
        self.assertEqual([10], counts)
        bad = [(bufs[0], self.path, 0, 0)]
        with self.assertRaises(gpupool.GpupoolError):
            self.pool.read_many(bad)


if __name__ == "__main__":
    unittest.main()
