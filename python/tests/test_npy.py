"""gpupool.npy's header reader and gpupool.torch's NpyShards / ShardCollate:
records of .npy shards read by the library's file reader straight into the
batch's pool chunk, compared with numpy.load, with 0 and 2 (fork) workers.
Every batch's tensors are checked to be pool memory (is_pool_tensor and
/proc/self/maps), and the pool to have nothing in use at the end."""
import os
import shutil
import struct
import tempfile
import unittest

try:
    import numpy as np
except ImportError:
    raise unittest.SkipTest("no numpy")

from gpupool import npy

# In the VM (GPUPOOL_VM=1) importing torch under TCG takes minutes: only
# the header tests run there; the reading is the library's, tested there by
# test_read.py.
from vmenv import IN_VM
torch = None
if not IN_VM:
    try:
        import torch
        from torch.utils.data import DataLoader
        import gpupool.torch as gt
        import test_torch as tt    # a module: its tests are not run here
    except ImportError:
        torch = None


def write_raw(path, header, data=b"", magic=b"\x93NUMPY\x01\x00"):
    h = header.encode("latin1")
    with open(path, "wb") as f:
        f.write(magic + struct.pack("<H", len(h)) + h + data)


class HeaderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gp_npy_")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def p(self, name):
        return os.path.join(self.dir, name)

    def test_versions_and_dtypes(self):
        for ver in ((1, 0), (2, 0), (3, 0)):
            for dt in ("u1", "<f4", "<i8", "bool", "<f2", "<c8"):
                a = np.arange(24).reshape(2, 3, 4).astype(dt)
                path = self.p("v%d_%s.npy" % (ver[0], dt.strip("<")))
                with open(path, "wb") as f:
                    np.lib.format.write_array(f, a, version=ver)
                h = npy.read_header(path)
                self.assertEqual((2, 3, 4), h.shape)
                self.assertEqual(a.dtype.itemsize, h.itemsize)
                self.assertEqual(a.nbytes, h.nbytes)
                with open(path, "rb") as f:
                    f.seek(h.offset)
                    self.assertEqual(a.tobytes(), f.read())

    def bad(self, path, words):
        with self.assertRaises(npy.NpyError) as cm:
            npy.read_header(path)
        for w in words:
            self.assertIn(w, str(cm.exception))
        self.assertIn(path, str(cm.exception))

    def test_bad_headers(self):
        path = self.p("a.npy")
        np.save(path, np.zeros((4, 5), np.float32))
        with open(path, "rb") as f:
            whole = f.read()
        for n, why in ((5, "magic"), (20, "truncated header"),
                       (len(whole) - 1, "truncated")):
            with open(self.p("t.npy"), "wb") as f:
                f.write(whole[:n])
            self.bad(self.p("t.npy"), [why])
        np.save(self.p("f.npy"), np.asfortranarray(np.zeros((4, 5), "<f4")))
        self.bad(self.p("f.npy"), ["fortran_order"])
        np.save(self.p("o.npy"), np.array([{}, 1], dtype=object))
        self.bad(self.p("o.npy"), ["object dtype"])
        np.save(self.p("b.npy"), np.zeros((4, 2), ">i4"))
        self.bad(self.p("b.npy"), ["big-endian", ">i4"])
        np.save(self.p("s.npy"), np.zeros(3, [("a", "<i4"), ("b", "<f4")]))
        self.bad(self.p("s.npy"), ["structured"])
        np.save(self.p("u.npy"), np.array(["ab", "c"]))
        self.bad(self.p("u.npy"), ["not read"])
        write_raw(self.p("v.npy"), "{}", magic=b"\x93NUMPY\x04\x00")
        self.bad(self.p("v.npy"), ["version 4.0"])
        write_raw(self.p("d.npy"), "{'descr': '<f4', 'shape': (2,)}\n")
        self.bad(self.p("d.npy"), ["lacks"])
        write_raw(self.p("l.npy"), "{'descr': os.system('x')}\n")
        self.bad(self.p("l.npy"), ["literal"])
        # big-endian one-byte data is the same bytes: taken
        write_raw(self.p("ok.npy"), "{'descr': '>u1', 'fortran_order': "
                  "False, 'shape': (3,), }\n", b"abc")
        self.assertEqual(3, npy.read_header(self.p("ok.npy")).nbytes)


@unittest.skipIf(torch is None, "torch not importable" if not IN_VM else
                 "host only (importing torch under TCG takes minutes)")
class ShardTest(unittest.TestCase):
    # test_torch's checks: setUp notes what is in use, tearDown waits for
    # the pool to be back to it; assert_pool checks a batch's tensors.
    if torch is not None:
        assert_settled = tt.TorchLoaderTest.assert_settled
        assert_pool = tt.TorchLoaderTest.assert_pool

    def setUp(self):
        tt.TorchLoaderTest.setUp(self)
        self.dir = tempfile.mkdtemp(prefix="gp_npy_")

    def tearDown(self):
        shutil.rmtree(self.dir)
        self.assert_settled()
        self.pool.close()

    def shards(self, dtype, rows=(7, 1, 12, 5), shape=(3, 8, 8)):
        rng = np.random.default_rng(len(rows) + np.dtype(dtype).itemsize)
        paths = []
        for k, n in enumerate(rows):
            a = rng.integers(0, 1 << 30, size=(n,) + shape)
            a = (a / 7.0 if np.dtype(dtype).kind == "f" else a).astype(dtype)
            paths.append(os.path.join(self.dir, "%s-%03d.npy"
                                      % (np.dtype(dtype).name, k)))
            np.save(paths[-1], a)
        return paths

    def check(self, dtype, workers, labels=False, shuffle=True, bs=4):
        paths = self.shards(dtype)
        whole = np.concatenate([np.load(p) for p in paths])
        lab = np.arange(len(whole), dtype=np.int64) * 3 + 1 if labels else None
        ds = gt.NpyShards(paths, labels=lab)
        self.assertEqual(len(whole), len(ds))
        g = torch.Generator().manual_seed(workers)
        order = torch.randperm(len(ds), generator=g).tolist() if shuffle \
            else list(range(len(ds)))
        dl = DataLoader(ds, batch_size=bs, sampler=order, num_workers=workers,
                        collate_fn=gt.ShardCollate(self.pool, ds),
                        multiprocessing_context="fork" if workers else None)
        before = self.pool.read_stats()["bytes"] if not workers else None
        sizes = []
        for i, batch in enumerate(dl):
            idx = order[bs * i:bs * i + bs]
            data = batch[0] if labels else batch
            self.assert_pool(batch)
            self.assertEqual(torch.from_numpy(whole).dtype, data.dtype)
            self.assertEqual((len(idx),) + whole.shape[1:], tuple(data.shape))
            self.assertTrue(np.array_equal(whole[idx], data.numpy()))
            if labels:
                self.assertTrue(np.array_equal(lab[idx], batch[1].numpy()))
            sizes.append(len(idx))
        self.assertEqual(len(whole), sum(sizes))
        self.assertNotEqual(bs, sizes[-1])            # a last short batch
        if before is not None:      # read by the library, in this process
            self.assertEqual(whole.nbytes,
                             self.pool.read_stats()["bytes"] - before)
        del batch, data

    def test_uint8_workers_0(self):
        self.check(np.uint8, 0)

    def test_float32_workers_0_in_order_labels(self):
        self.check(np.float32, 0, labels=True, shuffle=False)

    def test_int64_workers_0(self):
        self.check(np.int64, 0)

    def test_uint8_workers_2_fork(self):
        self.check(np.uint8, 2, labels=True)

    def test_float32_workers_2_fork(self):
        self.check(np.float32, 2)

    def test_int64_workers_2_fork_in_order(self):
        self.check(np.int64, 2, shuffle=False, bs=6)

    def test_page_records_workers_0(self):
        # 3x32x32 float32: 3 pages a record, the tensor placed so that
        # file and memory are aligned alike (O_DIRECT without a copy).
        paths = self.shards(np.float32, rows=(3, 4), shape=(3, 32, 32))
        whole = np.concatenate([np.load(p) for p in paths])
        ds = gt.NpyShards(paths)
        self.assertEqual(ds.headers[0].offset % 4096, ds.data_offset)
        col = gt.ShardCollate(self.pool, ds)
        for idx in ([6, 0, 1, 2, 3], [5, 4]):
            batch = col([ds[i] for i in idx])
            self.assert_pool(batch)
            self.assertTrue(np.array_equal(whole[idx], batch.numpy()))
        del batch

    def test_index(self):
        ds = gt.NpyShards(self.shards(np.uint8, rows=(2, 0, 3)))
        self.assertEqual([(0, 0), (0, 1), (2, 0), (2, 1), (2, 2)],
                         [tuple(ds[i]) for i in range(5)])
        self.assertEqual((2, 2), tuple(ds[-1]))
        with self.assertRaises(IndexError):
            ds[5]

    def test_shard_mismatch(self):
        a = self.shards(np.uint8, rows=(2,), shape=(3, 8, 8))
        b = self.shards(np.float32, rows=(2,), shape=(3, 8, 8))
        c = [os.path.join(self.dir, "c.npy")]
        np.save(c[0], np.zeros((2, 3, 8, 9), np.uint8))
        for other, why in ((b, "same dtype"), (c, "(3, 8, 9)")):
            with self.assertRaises(npy.NpyError) as cm:
                gt.NpyShards(a + other)
            self.assertIn(why, str(cm.exception))
            self.assertIn(other[0], str(cm.exception))
        u16 = os.path.join(self.dir, "u16.npy")
        np.save(u16, np.zeros((2, 3), "<u2"))
        with self.assertRaises(npy.NpyError) as cm:
            gt.NpyShards([u16])
        self.assertIn("no torch dtype", str(cm.exception))
        with self.assertRaises(ValueError):
            gt.NpyShards(a, labels=[1, 2, 3])
        with self.assertRaises(TypeError):
            gt.ShardCollate(self.pool, [1, 2])
        with self.assertRaises(TypeError):
            gt.ShardCollate(self.pool, gt.NpyShards(a))([0, 1])

    def test_file_shrunk(self):
        paths = self.shards(np.uint8, rows=(4,))
        ds = gt.NpyShards(paths)
        h = ds.headers[0]
        os.truncate(paths[0], h.offset + 2 * ds.record_bytes)
        with self.assertRaises(IOError) as cm:
            gt.ShardCollate(self.pool, ds)([ds[0], ds[3]])
        self.assertIn("file shrunk", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
