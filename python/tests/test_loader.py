"""The zero-copy loader: every batch arrives once, intact, on fork and
spawn; worker errors surface; the slots go back to the pool."""
import gc
import time
import unittest
import zlib

import gpupool


def produce(index, view):
    """Deterministic bytes per batch; the crc proves they arrived."""
    pattern = bytes((index * 31 + i) % 251 for i in range(251))
    n = len(view)
    for off in range(0, n, 251):
        view[off:off + 251] = pattern[:min(251, n - off)]
    return zlib.crc32(view)


def produce_fails(index, view):
    if index == 3:
        raise KeyError("batch three is cursed")
    return 0


class LoaderTest(unittest.TestCase):
    def run_loader(self, method):
        with gpupool.Pool() as pool:
            gc.collect()
            before = pool.stats()["in_use"]
            seen = []
            with gpupool.Loader(pool, produce, batch_bytes=300000,
                                num_workers=2, start_method=method) as loader:
                for batch in loader.batches(24):
                    with batch:
                        self.assertEqual(batch.meta, zlib.crc32(batch.view))
                        self.assertEqual(300000, len(batch.view))
                        seen.append(batch.index)
            self.assertEqual(list(range(24)), sorted(seen))
            gc.collect()
            self.assertEqual(before, pool.stats()["in_use"])

    def test_fork(self):
        self.run_loader("fork")

    def test_spawn(self):
        self.run_loader("spawn")

    def check_worker_error_surfaces(self, delay):
        with gpupool.Pool() as pool:
            with gpupool.Loader(pool, produce_fails, batch_bytes=4096,
                                num_workers=1) as loader:
                with self.assertRaises(RuntimeError) as cm:
                    for batch in loader.batches(10):
                        time.sleep(delay)
                        batch.release()
                self.assertIn("batch three is cursed", str(cm.exception))

    def test_worker_error_surfaces(self):
        self.check_worker_error_surfaces(0)

    def test_worker_error_surfaces_after_it_exits(self):
        # The consumer is slow: the worker has reported its error and gone
        # before the next release() sends it work (that send then meets a
        # closed pipe); the error must still be what surfaces.
        self.check_worker_error_surfaces(0.2)

    def test_unreleased_batches_are_reported(self):
        with gpupool.Pool() as pool:
            with gpupool.Loader(pool, produce, batch_bytes=4096,
                                num_workers=1, slots=2) as loader:
                held = []
                with self.assertRaises(RuntimeError) as cm:
                    for batch in loader.batches(5):
                        held.append(batch)          # never released
                self.assertIn("release()", str(cm.exception))
                for b in held:
                    b.release()


if __name__ == "__main__":
    unittest.main()
