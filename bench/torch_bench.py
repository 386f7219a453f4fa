#!/usr/bin/python3
"""PyTorch's DataLoader: stock collate + pin copy vs gpupool.torch.PinnedCollate.

    make -C bench torch          (TORCH_BENCH_MIB: data per case, default 512)

A real torch.utils.data.DataLoader, 4 workers (fork), batches of 1, 16 and
64 MiB of uint8 (16 synthetic samples each: views of a tensor made before the workers
fork, so making a sample costs nothing and every byte written is a copy
the loader makes).

  (a) stock: default_collate (the worker stacks the batch into torch's
      shared memory), then in the training process the copy into pinned
      memory that PyTorch's pin-memory thread makes.  This torch is
      CPU-only, so that copy is made by hand, one thread (as that thread
      runs), into a preallocated pinned pool buffer.
  (b) gpupool.torch.PinnedCollate: the worker stacks the batch into a pool
      chunk, which the training process maps.

Printed per case: GB/s delivered (best of TORCH_BENCH_REPS runs, from the
first batch to the last), bytes copied per byte delivered, peak RSS of the
process tree (the sum over the training process and its workers, sampled
every 20 ms; shared pages count in every process that maps them), CPU
seconds per GB delivered (the process tree's user + system time over the
whole run, worker start included: less sensitive to a loaded machine than
GB/s).  Copies
are counted where they happen: the worker's stack (both), the hand copy
(a), plus one more if the batch reached the training process anywhere but
in the segment the worker wrote (read from /proc/self/maps).
"""
import gc
import os
import resource
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import torch                                       # noqa: E402
from torch.utils.data import DataLoader, Dataset   # noqa: E402

import gpupool                                     # noqa: E402
import gpupool.torch as gt                         # noqa: E402

WORKERS = 4
SAMPLES = 16
SIZES_MIB = (1, 16, 64)
TARGETS = {1: 1.0, 16: 1.5, 64: 1.5}


class Synthetic(Dataset):
    """Samples are views of one tensor made here, before the workers are
    forked (they share its pages): making a sample writes nothing."""

    def __init__(self, n, sample_bytes):
        self.n, self.sample_bytes = n, sample_bytes
        self.src = torch.full((4 * sample_bytes,), 7, dtype=torch.uint8)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        k = i % 4
        return self.src[k * self.sample_bytes:(k + 1) * self.sample_bytes]


def tree_rss_kb(root):
    """VmRSS of root and its children, in kB."""
    pids = [root]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == root:
                pids.append(int(d))
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


class RssSampler(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.peak = 0
        self.stop = threading.Event()

    def run(self):
        me = os.getpid()
        while not self.stop.wait(0.02):
            self.peak = max(self.peak, tree_rss_kb(me))


def cpu_seconds():
    """User + system CPU of this process and its reaped children."""
    t = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        t += r.ru_utime + r.ru_stime
    return t


def mapping_of(addr):
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            a, b = (int(x, 16) for x in parts[0].split("-"))
            if a <= addr < b:
                return parts[5].strip() if len(parts) > 5 else ""
    return ""


def worker_wrote_here(path):
    """Is this the segment a worker wrote (torch's shared memory, or a
    pool chunk), rather than a copy made on the way?"""
    return path.startswith("/dev/shm/torch_") or \
        path.startswith("/memfd:gpupool") or \
        path.startswith("/memfd:torch") or \
        path in ("/dev/gpupool", "anon_inode:[gpupool_chunk]")


def run(mode, pool, batch_mib, total_mib):
    batch_bytes = batch_mib << 20
    nbatches = max(8, total_mib // batch_mib)
    ds = Synthetic(nbatches * SAMPLES, batch_bytes // SAMPLES)
    collate = gt.PinnedCollate(pool) if mode == "b" else None
    dl = DataLoader(ds, batch_size=SAMPLES, num_workers=WORKERS,
                    collate_fn=collate, multiprocessing_context="fork")
    pinned = pool.tensor((SAMPLES, batch_bytes // SAMPLES)) \
        if mode == "a" else None
    copies = 0
    delivered = 0
    sampler = RssSampler()
    sampler.start()
    cpu0 = cpu_seconds()
    t0 = None
    for i, batch in enumerate(dl):
        if i == 0:
            t0 = time.perf_counter()    # workers started, pipeline full
            path = mapping_of(batch.data_ptr())
            hidden = 0 if worker_wrote_here(path) else 1
            continue
        nbytes = batch.numel()
        copies += nbytes * (1 + hidden)     # the worker's stack (+ hidden)
        if mode == "a":
            pinned.copy_(batch)             # the pin-memory copy
            copies += nbytes
        delivered += nbytes
        del batch
    dt = time.perf_counter() - t0
    sampler.stop.set()
    sampler.join()
    peak = sampler.peak
    del dl, pinned, sampler
    gc.collect()
    cpu = cpu_seconds() - cpu0      # the workers' too, once reaped
    return (delivered / dt / 1e9, copies / delivered, peak,
            cpu / (nbatches * batch_bytes / 1e9), path)


def main():
    total_mib = int(os.environ.get("TORCH_BENCH_MIB", "512"))
    reps = int(os.environ.get("TORCH_BENCH_REPS", "2"))
    torch.set_num_threads(1)     # as PyTorch's pin-memory thread
    pool = gpupool.Pool()
    backend = pool.info()["backend"]
    print("torch %s (CUDA %s), gpupool %s backend, %d workers (fork), "
          "%d samples per batch, %d MiB per case, best of %d"
          % (torch.__version__, "available" if torch.cuda.is_available()
             else "absent: (a)'s pin copy made by hand into a pool buffer",
             backend, WORKERS, SAMPLES, total_mib, reps))
    print("%-6s %-6s %8s %8s %12s %9s  %s"
          % ("batch", "case", "GB/s", "copies", "peak RSS", "CPU s/GB",
             "batch delivered in"))
    results = {}
    for mib in SIZES_MIB:
        best = {}
        for _ in range(reps):
            for mode in ("a", "b"):
                r = run(mode, pool, mib, total_mib)
                if mode not in best or r[0] > best[mode][0]:
                    best[mode] = r
        for mode in ("a", "b"):
            gbs, cp, rss, cpu, path = best[mode]
            print("%-6s %-6s %8.2f %8.2f %8.0f MiB %9.2f  %s"
                  % ("%d MiB" % mib, "(%s)" % mode, gbs, cp, rss / 1024.0,
                     cpu, path or "(anonymous)"))
        results[mib] = best
    print()
    passed = 0
    for mib in SIZES_MIB:
        ratio = results[mib]["b"][0] / results[mib]["a"][0]
        ok = ratio >= TARGETS[mib]
        passed += ok
        print("target: (b) >= %.1fx (a) at %2d MiB: %.2fx  %s"
              % (TARGETS[mib], mib, ratio, "PASS" if ok else "MISS"))
    cb = max(results[m]["b"][1] for m in SIZES_MIB)
    ca = min(results[m]["a"][1] for m in SIZES_MIB)
    ok = abs(cb - 1.0) < 1e-9 and ca > cb
    passed += ok
    print("target: (b) copies each byte once, (a) more: (b) %.2f, (a) %.2f  "
          "%s" % (cb, ca, "PASS" if ok else "MISS"))
    print("%d of %d targets met" % (passed, len(SIZES_MIB) + 1))


if __name__ == "__main__":
    main()
