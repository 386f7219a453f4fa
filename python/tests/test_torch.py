"""gpupool.torch with PyTorch's own DataLoader: batches on pool memory.

Every test checks, in this (the training) process, that the batch's tensors
are pool memory twice: with is_pool_tensor, and independently from
/proc/self/maps (the mapping holding the storage is the pool's memfd or a
gpupool.ko chunk, never torch's /dev/shm segment); and at its end that the
pool has nothing in use any more (this process's stats and, on the kernel
backend, the module's ChunksInUse).

In the VM (GPUPOOL_VM=1, the kernel backend under TCG, where every torch
import costs tens of seconds) only the tests of what that backend changes
run: chunks exported by fork()ed workers, a killed worker, a full pool, the
per-process limit, early break, a tensor on pool memory and a file read
into one.
"""
import collections
import gc
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from vmenv import IN_VM
if IN_VM and os.environ.get("GPUPOOL_PY_TESTS") != "test_torch.py":
    # Importing torch under TCG takes long: the VM runs this file in a
    # run of its own (scripts/check.sh), not with the other Python tests.
    raise unittest.SkipTest("in the VM, test_torch.py runs on its own")

_t0 = time.monotonic()
try:
    import torch
    from torch.utils.data import DataLoader, Dataset, default_collate
except ImportError:
    raise unittest.SkipTest("torch not importable (apt install python3-torch)")
if IN_VM:
    print("# test_torch: torch imported in %.1f s" % (time.monotonic() - _t0),
          flush=True)

import gpupool
import gpupool.torch as gt

SETTLE_S = 20          # bound for the pool to be back to nothing in use

Pair = collections.namedtuple("Pair", "mask name")


def vm_skip(why):
    return unittest.skipIf(IN_VM, "host only (%s)" % why)


class Mixed(Dataset):
    """Samples with every shape of structure and the dtypes asked for."""

    def __init__(self, n=24):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {
            "img": torch.full((3, 5, 7), i % 251, dtype=torch.uint8),
            "half": torch.arange(4, dtype=torch.float16) + i,
            "f32": torch.full((2, 3), i / 7.0, dtype=torch.float32),
            "i64": torch.arange(3, dtype=torch.int64) * i,
            "empty": torch.zeros((0, 4), dtype=torch.float32),
            "nested": (torch.tensor(i), [torch.ones(2) * i, "s%d" % i]),
            "pair": Pair(torch.tensor([i % 2 == 0, True]), "n%d" % i),
            "label": i,
            "weight": i * 0.5,
        }


class Bytes(Dataset):
    """n samples of `size` uint8; sample `kill_at` SIGKILLs its worker."""

    def __init__(self, n, size, kill_at=-1):
        self.n, self.size, self.kill_at = n, size, kill_at

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.full((self.size,), i % 256, dtype=torch.uint8)


def custom_collate(batch):
    """A user collate_fn: its tensors are copied into the chunk."""
    x = torch.stack(batch).to(torch.float32)
    return {"x": x, "sum": x.sum(1), "n": len(batch)}


def tensors(tree):
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, dict):
        tree = list(tree.values())
    if isinstance(tree, (list, tuple)):
        return [t for v in tree for t in tensors(v)]
    return []


def maps():
    """[(start, end, path)] of this process's mappings."""
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            a, b = (int(x, 16) for x in parts[0].split("-"))
            out.append((a, b, parts[5].strip() if len(parts) > 5 else ""))
    return out


def is_pool_path(path):
    # user backend: the library's memfd; kernel backend: /dev/gpupool (the
    # allocating process) or an exported chunk file.
    return path.startswith("/memfd:gpupool") or path == "/dev/gpupool" or \
        path == "anon_inode:[gpupool_chunk]"


def storage_addr(t):
    return (t.untyped_storage() if hasattr(t, "untyped_storage")
            else t.storage()).data_ptr()


def kernel_chunks():
    """ChunksInUse of /proc/gpupool (kernel backend), else None."""
    try:
        with open("/proc/gpupool") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"^ChunksInUse:\s+(\d+)", text, re.M)
    return int(m.group(1)) if m else None


def proc_field_kb(name):
    with open("/proc/gpupool") as f:
        m = re.search(r"^%s:\s+(\d+)" % name, f.read(), re.M)
    return int(m.group(1)) if m else 0


class TorchLoaderTest(unittest.TestCase):
    def setUp(self):
        self.t0 = time.monotonic()
        self.pool = gpupool.Pool()
        self.backend = self.pool.info()["backend"]
        self.base = self.pool.stats()["in_use"]
        self.kbase = kernel_chunks() if self.backend == "kernel" else None
        self.maps_base = sum(1 for m in maps() if is_pool_path(m[2]))

    def tearDown(self):
        self.assert_settled()
        self.pool.close()
        if IN_VM:
            print("# %s: %.1f s" % (self.id(), time.monotonic() - self.t0),
                  flush=True)

    def assert_settled(self):
        """Nothing in use: this process's stats, its pool mappings, and on
        the kernel backend the module's chunks, within SETTLE_S."""
        deadline = time.monotonic() + SETTLE_S
        while True:
            gc.collect()
            self.pool.trim()        # cached segments unmapped too
            in_use = self.pool.stats()["in_use"] - self.base
            kc = kernel_chunks() if self.kbase is not None else None
            mapped = sum(1 for m in maps() if is_pool_path(m[2]))
            if in_use == 0 and mapped <= self.maps_base and \
                    (kc is None or kc <= self.kbase):
                return
            if time.monotonic() > deadline:
                self.fail("pool not back to nothing in use after %d s: "
                          "in_use %d, mappings %d (was %d), kernel chunks "
                          "%s (was %s)" % (SETTLE_S, in_use, mapped,
                                           self.maps_base, kc, self.kbase))
            time.sleep(0.1)

    def assert_pool(self, batch):
        """Every tensor of the batch is pool memory, seen two ways."""
        ts = tensors(batch)
        self.assertTrue(ts)
        spans = maps()
        for t in ts:
            self.assertTrue(gt.is_pool_tensor(t), (t.dtype, t.shape))
            addr = storage_addr(t)
            where = [p for a, b, p in spans if a <= addr < b]
            self.assertEqual(1, len(where), hex(addr))
            self.assertTrue(is_pool_path(where[0]), where[0])
            self.assertNotIn("/dev/shm", where[0])
        # One chunk per batch.
        self.assertEqual(1, len({storage_addr(t) for t in ts}))

    def assert_same(self, want, got):
        """got has default_collate's structure and values."""
        self.assertIs(type(want), type(got))
        if isinstance(want, torch.Tensor):
            self.assertEqual(want.dtype, got.dtype)
            self.assertEqual(want.shape, got.shape)
            self.assertTrue(torch.equal(want, got))
        elif isinstance(want, dict):
            self.assertEqual(list(want), list(got))
            for k in want:
                self.assert_same(want[k], got[k])
        elif isinstance(want, (list, tuple)):
            self.assertEqual(len(want), len(got))
            for a, b in zip(want, got):
                self.assert_same(a, b)
        else:
            self.assertEqual(want, got)

    def run_mixed(self, workers, method=None, **kw):
        ds = Mixed()
        dl = DataLoader(ds, batch_size=4, num_workers=workers,
                        collate_fn=gt.PinnedCollate(self.pool),
                        multiprocessing_context=method, **kw)
        n = 0
        for i, batch in enumerate(dl):
            want = default_collate([ds[j] for j in range(4 * i, 4 * i + 4)])
            self.assert_same(want, batch)
            self.assert_pool(batch)
            n += 1
        self.assertEqual(6, n)
        del batch

    # structures, dtypes, zero-size tensors; 0, 1 and 4 workers ------------
    @vm_skip("the user backend covers it")
    def test_workers_0_builds_in_this_process(self):
        self.run_mixed(0)

    @vm_skip("the user backend covers it")
    def test_workers_1(self):
        self.run_mixed(1)

    @vm_skip("the user backend covers it")
    def test_workers_4(self):
        self.run_mixed(4, "fork")

    def test_workers_2_fork(self):
        self.run_mixed(2, "fork")

    # start methods ------------------------------------------------------------
    @vm_skip("each worker imports torch")
    def test_spawn(self):
        self.run_mixed(2, "spawn")

    @vm_skip("each worker imports torch")
    def test_forkserver(self):
        self.run_mixed(2, "forkserver")

    @vm_skip("the user backend covers it")
    def test_custom_collate_fn(self):
        dl = DataLoader(Bytes(8, 100), batch_size=4, num_workers=2,
                        collate_fn=gt.PinnedCollate(self.pool, custom_collate))
        for batch in dl:
            self.assertEqual(4, batch["n"])
            self.assertEqual((4, 100), tuple(batch["x"].shape))
            self.assertEqual(torch.float32, batch["x"].dtype)
            self.assertTrue(torch.equal(batch["x"].sum(1), batch["sum"]))
            self.assert_pool(batch)
        del batch

    @vm_skip("the user backend covers it")
    def test_pin_memory_does_not_copy(self):
        # Without CUDA the DataLoader ignores pin_memory=True; with CUDA
        # the chunk is registered, is_pinned() is true and pin_memory()
        # returns the tensor itself.
        dl = DataLoader(Bytes(8, 4096), batch_size=4, num_workers=2,
                        pin_memory=True,
                        collate_fn=gt.PinnedCollate(self.pool))
        for batch in dl:
            self.assert_pool(batch)
            if torch.cuda.is_available():
                self.assertTrue(batch.is_pinned())
        del batch

    # lifetime -------------------------------------------------------------------
    def test_early_break(self):
        dl = DataLoader(Bytes(64, 256 << 10), batch_size=2, num_workers=2,
                        prefetch_factor=4,
                        collate_fn=gt.PinnedCollate(self.pool),
                        multiprocessing_context="fork")
        for i, batch in enumerate(dl):
            self.assert_pool(batch)
            if i == 2:
                break
        del batch, dl

    @vm_skip("the user backend covers it")
    def test_persistent_workers(self):
        dl = DataLoader(Bytes(32, 1 << 16), batch_size=2, num_workers=2,
                        prefetch_factor=3, persistent_workers=True,
                        collate_fn=gt.PinnedCollate(self.pool))
        for epoch in range(3):
            for i, batch in enumerate(dl):
                self.assert_pool(batch)
                self.assertEqual((2, 1 << 16), tuple(batch.shape))
                if epoch == 1 and i == 1:
                    break       # the next epoch drains what was in flight
            del batch
        del dl

    def test_killed_worker(self):
        dl = DataLoader(Bytes(40, 64 << 10, kill_at=9), batch_size=2,
                        num_workers=2, collate_fn=gt.PinnedCollate(self.pool),
                        multiprocessing_context="fork")
        got = 0
        with self.assertRaises(RuntimeError) as cm:
            for batch in dl:
                self.assert_pool(batch)
                got += 1
        self.assertIn("worker", str(cm.exception))
        self.assertLess(got, 20)
        del cm, dl
        # assert_settled (tearDown): back to nothing in use within a bound.

    # limits ---------------------------------------------------------------------
    def assert_error_names_gpupool(self, exc, size_text):
        text = str(exc)
        self.assertIn("gpupool", text)
        self.assertIn(size_text, text)

    def test_pool_exhausted(self):
        """Batches kept in the training process until the pool is full: a
        clear error there (never a hang: the DataLoader's timeout bounds
        it)."""
        mib = 8
        if self.backend == "kernel":
            # The module's pool itself (no growth), 32 MiB batches.
            total_kb = proc_field_kb("PoolTotal")
            if proc_field_kb("PoolLimit") or not total_kb:
                self.skipTest("the module's pool may grow (max_size)")
            mib = 32
            n = total_kb // 1024 // mib + 2
            pool = self.pool
        else:
            n = 6
            pool = gpupool.Pool(host_limit=32 << 20)
        if n > 40:
            self.skipTest("pool too large to fill here")
        dl = DataLoader(Bytes(n, mib << 20), batch_size=1, num_workers=4,
                        timeout=120, collate_fn=gt.PinnedCollate(pool),
                        multiprocessing_context="fork")
        kept = []
        with self.assertRaises(OSError) as cm:
            for batch in dl:
                self.assert_pool(batch)
                kept.append(batch)
        self.assertIsInstance(cm.exception, gpupool.GpupoolError)
        if os.environ.get("GPUPOOL_TEST_VERBOSE"):
            print(cm.exception, file=sys.stderr)
        self.assert_error_names_gpupool(cm.exception, "%d.0 MiB" % mib)
        self.assertGreater(len(kept), 0)
        del kept, cm, dl, pool

    def test_batch_larger_than_per_process_limit(self):
        if self.backend == "kernel":
            limit = proc_field_kb("PerProcessLimit") * 1024
            if not limit:
                self.skipTest("gpupool.ko loaded without per_process_limit")
            pool = self.pool
        else:
            # The user backend's per-process bound: host_limit (the
            # workers' pools inherit it from the PinnedCollate's pool).
            limit = 16 << 20
            pool = gpupool.Pool(host_limit=limit)
        size = limit + (4 << 20)
        dl = DataLoader(Bytes(2, size), batch_size=1, num_workers=1,
                        timeout=120, collate_fn=gt.PinnedCollate(pool),
                        multiprocessing_context="fork")
        with self.assertRaises(OSError) as cm:
            for batch in dl:
                pass
        self.assert_error_names_gpupool(cm.exception,
                                        "%.1f MiB" % (size / 2.0 ** 20))
        self.assertIn("worker", str(cm.exception))
        if os.environ.get("GPUPOOL_TEST_VERBOSE"):
            print(cm.exception, file=sys.stderr)
        del cm, dl, pool


class TorchPoolTest(unittest.TestCase):
    """Tensors on pool memory without a DataLoader."""

    def test_tensor_on_pool_memory(self):
        with gpupool.Pool() as pool:
            t = pool.tensor((4, 8), torch.float32)
            t.fill_(2.0)
            self.assertEqual(64.0, float(t.sum()))
            if torch.cuda.is_available():
                # PyTorch says pinned only once it has set CUDA up.
                torch.cuda.init()
                self.assertTrue(t.is_pinned())
            del t

    def test_read_into_a_tensor(self):
        data = bytes((i * 31 + 7) & 0xff for i in range(20000))
        with tempfile.NamedTemporaryFile(prefix="gp_read_torch_") as f:
            f.write(data)
            f.flush()
            with gpupool.Pool() as pool:
                t = pool.tensor((4096,), torch.uint8)
                self.assertEqual(4096, pool.read_into(t, f.name, 8192))
                self.assertEqual(data[8192:12288], bytes(t.numpy()))
                del t


class TorchModuleTest(unittest.TestCase):
    """The module's own contract: imports, versions, the old name."""

    def import_error(self, fake_torch):
        """The ImportError of `import gpupool.torch` in a python whose
        sys.modules['torch'] is fake_torch (an expression)."""
        code = ("import sys, types\n"
                "sys.modules['torch'] = %s\n"
                "import gpupool\n"
                "try:\n"
                "    import gpupool.torch\n"
                "except ImportError as e:\n"
                "    print('ImportError:', e)\n" % fake_torch)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(gpupool.__file__))
        r = subprocess.run([sys.executable, "-c", code], env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertIn("ImportError:", r.stdout)
        return r.stdout

    @vm_skip("no backend involved")
    def test_without_torch(self):
        self.assertIn("python3-torch", self.import_error("None"))

    @vm_skip("no backend involved")
    def test_old_torch(self):
        out = self.import_error("types.SimpleNamespace(__version__='1.12.1')")
        self.assertIn("torch >= 1.13", out)
        self.assertIn("1.12.1", out)

    @vm_skip("no backend involved")
    def test_cuda_allocator_needs_torch_2(self):
        if hasattr(torch.cuda.memory, "CUDAPluggableAllocator"):
            self.skipTest("torch %s has CUDAPluggableAllocator"
                          % torch.__version__)
        for install in (gt.use_as_cuda_allocator,
                        gpupool.use_as_cuda_allocator):
            with self.assertRaises(RuntimeError) as cm:
                install()
            self.assertIn("torch >= 2.0", str(cm.exception))
            self.assertIn(torch.__version__, str(cm.exception))

    @vm_skip("no backend involved")
    def test_is_pool_tensor(self):
        with gpupool.Pool() as pool:
            t = pool.tensor((10, 10), torch.float32)
            self.assertTrue(gt.is_pool_tensor(t))
            self.assertTrue(gt.is_pool_tensor(t[3:5]))
            self.assertFalse(gt.is_pool_tensor(torch.ones(10)))
            self.assertFalse(gt.is_pool_tensor(torch.empty(0)))
            self.assertFalse(gt.is_pool_tensor("not a tensor"))
            del t


if __name__ == "__main__":
    unittest.main()
