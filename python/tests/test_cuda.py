"""On a machine with a GPU and PyTorch built for CUDA (skipped elsewhere):
pool memory as PyTorch uses it there.  The CPU tests cover the rest; these
are what a test double of the CUDA runtime cannot show: that PyTorch's own
runtime sees the chunks as pinned, that copies from them reach the GPU, that
fork()ed DataLoader workers of a process that already uses CUDA still get
chunks, and that the device pool serves PyTorch as its CUDA allocator."""
import os
import subprocess
import sys
import unittest

import gpupool
from vmenv import IN_VM

try:
    if IN_VM:   # no GPU there, and importing torch takes 25 s
        raise ImportError("no GPU in the test VM")
    import torch
    from torch.utils.data import DataLoader, Dataset
    CUDA = torch.cuda.is_available()
except ImportError:
    torch = None
    Dataset = object
    CUDA = False

HERE = os.path.dirname(os.path.abspath(__file__))


class Rows(Dataset):
    """Sample i: a float32 row of 1024 values, all i."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.full((1024,), float(i))


@unittest.skipUnless(CUDA, "needs PyTorch with a CUDA device")
class CudaTest(unittest.TestCase):
    def test_chunk_is_pinned_and_reaches_the_gpu(self):
        # PyTorch answers is_pinned() from its own runtime once it has
        # set CUDA up in the process (as any program that copies to a GPU
        # has), and False before.
        torch.cuda.init()
        with gpupool.Pool() as pool:
            info = pool.info()
            self.assertTrue(info["cuda_registered"], info["why"])
            t = pool.tensor((256, 1024), torch.float32)
            t.copy_(torch.arange(256 * 1024, dtype=torch.float32).view(256, 1024))
            self.assertTrue(t.is_pinned())
            # pin_memory() of pinned memory is the tensor itself: no copy.
            self.assertEqual(t.data_ptr(), t.pin_memory().data_ptr())
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                g = t.to("cuda", non_blocking=True)
            s.synchronize()
            self.assertTrue(torch.equal(g.cpu(), t))
            del g, t

    def test_fork_workers_of_a_cuda_process(self):
        # CUDA is in use here before the workers fork, as in any training
        # loop: CUDA cannot be used in them, yet each builds its batch in a
        # chunk of its own (pinned, unregistered there), and this process
        # maps it registered.
        torch.zeros(1, device="cuda")
        from gpupool import torch as gt
        with gpupool.Pool() as pool:
            dl = DataLoader(Rows(), batch_size=4, num_workers=2,
                            collate_fn=gt.PinnedCollate(pool),
                            multiprocessing_context="fork")
            n = 0
            for i, batch in enumerate(dl):
                self.assertTrue(gt.is_pool_tensor(batch))
                self.assertTrue(batch.is_pinned())
                want = torch.arange(4 * i, 4 * i + 4, dtype=torch.float32)
                got = batch.to("cuda", non_blocking=True)[:, 0].cpu()
                self.assertTrue(torch.equal(want, got), (i, got))
                n += 1
            self.assertEqual(4, n)
            del batch

    def test_device_pool_as_the_cuda_allocator(self):
        # In a process of its own: PyTorch takes an allocator only before
        # its first CUDA allocation.  GPUPOOL_DEBUG shows that the device
        # pool served it (its first allocation creates the pool).
        code = (
            "import torch, gpupool\n"
            "gpupool.use_as_cuda_allocator()\n"
            "x = torch.ones(1 << 20, device='cuda')\n"
            "y = (x * 3).sum().item()\n"
            "assert y == 3 * (1 << 20), y\n"
            "del x\n"
            "z = [torch.empty(n << 10, device='cuda') for n in range(1, 200)]\n"
            "torch.cuda.synchronize()\n"
            "print('ok', y)\n")
        env = dict(os.environ, GPUPOOL_DEBUG="1",
                   PYTHONPATH=os.path.dirname(HERE))
        r = subprocess.run([sys.executable, "-c", code], env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(0, r.returncode, r.stderr[-3000:])
        self.assertIn("ok", r.stdout)
        self.assertIn("device 0 pool", r.stderr)


if __name__ == "__main__":
    unittest.main()
