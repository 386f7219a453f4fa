"""The zero-copy loader: every batch arrives once, intact, on fork and
spawn; worker errors surface; the slots go back to the pool."""
import gc
import os
import subprocess
import sys
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

    def test_batches_again_after_a_break(self):
        # The first loop is abandoned with tasks still in production; the
        # second gets its own 0..9, each once and intact, none of the old.
        with gpupool.Pool() as pool:
            with gpupool.Loader(pool, produce, batch_bytes=8192,
                                num_workers=2) as loader:
                for batch in loader.batches(50):
                    batch.release()
                    if batch.index >= 1:
                        break
                seen = []
                for batch in loader.batches(10):
                    with batch:
                        self.assertEqual(batch.meta, zlib.crc32(batch.view))
                        seen.append(batch.index)
                self.assertEqual(list(range(10)), sorted(seen))

    def test_close_with_a_numpy_view_alive(self):
        with gpupool.Pool() as pool:
            gc.collect()
            before = pool.stats()["in_use"]
            with gpupool.Loader(pool, produce, batch_bytes=4096,
                                num_workers=1) as loader:
                for batch in loader.batches(1):
                    kept = batch.numpy()
                    batch.release()
            # close() did not raise; the slot goes back with its last view.
            self.assertEqual(4096, len(kept))
            del kept
            gc.collect()
            self.assertEqual(before, pool.stats()["in_use"])

    def test_unpicklable_metadata_surfaces(self):
        with gpupool.Pool() as pool:
            with gpupool.Loader(pool, produce_unpicklable, batch_bytes=4096,
                                num_workers=1) as loader:
                with self.assertRaises(RuntimeError) as cm:
                    for batch in loader.batches(2):
                        batch.release()
                self.assertIn("pickle", str(cm.exception).lower())

    def test_fork_workers_exit_when_the_consumer_dies(self):
        # A consumer killed with SIGKILL: its fork()ed workers see their
        # pipes close and exit, letting go of the pool memory they map.
        # (They once held the consumer's ends of their own pipes and
        # waited for ever.)
        code = (
            "import os, signal, gpupool\n"
            "pool = gpupool.Pool()\n"
            "loader = gpupool.Loader(pool, lambda i, v: 0, batch_bytes=4096,\n"
            "                        num_workers=2, start_method='fork')\n"
            "print(' '.join(str(p.pid) for p in loader._procs), flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(gpupool.__file__))
        # Not subprocess.run: the workers inherit stdout, and waiting for
        # its end would wait for them.
        c = subprocess.Popen([sys.executable, "-c", code], env=env,
                             stdout=subprocess.PIPE, text=True)
        line = c.stdout.readline()
        c.stdout.close()
        self.assertEqual(-9, c.wait(60))
        pids = [int(x) for x in line.split()]
        self.assertEqual(2, len(pids), line)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(map(running, pids)):
            time.sleep(0.1)
        alive = [p for p in pids if running(p)]
        for p in alive:
            os.kill(p, 9)
        self.assertEqual([], alive)


def produce_unpicklable(index, view):
    return lambda: index


def running(pid):
    """pid exists and is not a zombie (an exited child waiting to be
    reaped counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


if __name__ == "__main__":
    unittest.main()
