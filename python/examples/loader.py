#!/usr/bin/python3
"""loader.py - N worker processes produce batches straight into pinned pool
chunks; the consumer takes each one without a copy.

    loader.py --workers N --batches N --batch-size BYTES
              [--data-dir DIR | --file FILE] [--quiet]

A batch is a synthetic image batch (uint8 HWC images, labels in front)
made deterministically from its index, or, with --data-dir, the files of
that directory packed in order, or, with --file, the bytes of one file of
records from index * batch-size on (wrapping), read with Pool.read_into
(gp_read) straight into the pinned slot: O_DIRECT, no page cache.  Each worker returns the batch's CRC-32;
the consumer recomputes it on the pool memory it received (no GPU here: the
checksum proves the bytes arrived; with torch and CUDA the batch would go
to the GPU with .to('cuda', non_blocking=True) from the same memory).
Sizes take K/M/G suffixes.  At the end: throughput, and `gpupoolctl stat`
on the kernel backend.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import gpupool  # noqa: E402

BASE_LEN = 1 << 20
_base = None            # per worker process: 1 MiB of pseudo-random pixels


def _pixels():
    global _base
    if _base is None:
        import random
        _base = random.Random(12345).randbytes(BASE_LEN)
    return _base


def synthetic(index, view):
    """Labels (4 KiB of uint32) then images: the pixel block rotated by a
    per-batch offset, repeated.  Deterministic in index."""
    n = len(view)
    labels = bytes((index * 7 + i) % 1000 % 256 for i in range(min(4096, n)))
    view[:len(labels)] = labels
    base = _pixels()
    rot = (index * 7919) % BASE_LEN
    block = base[rot:] + base[:rot]
    off = len(labels)
    while off < n:
        k = min(BASE_LEN, n - off)
        view[off:off + k] = block[:k]
        off += k
    return zlib.crc32(view)


class FromFiles:
    """Batch i: the directory's files, in name order, from where batch i-1
    would have stopped, packed until the batch is full (wrapping around)."""

    def __init__(self, directory):
        self.paths = sorted(os.path.join(directory, f)
                            for f in os.listdir(directory)
                            if os.path.isfile(os.path.join(directory, f)))
        if not self.paths:
            raise SystemExit("loader.py: no files in %s" % directory)
        self.sizes = [os.path.getsize(p) for p in self.paths]
        self.total = sum(self.sizes)
        if not self.total:
            raise SystemExit("loader.py: the files in %s are empty" % directory)

    def __call__(self, index, view):
        n, off = len(view), 0
        pos = (index * n) % self.total     # byte position in the file stream
        i = 0
        while pos >= self.sizes[i]:
            pos -= self.sizes[i]
            i += 1
        while off < n:
            with open(self.paths[i], "rb") as f:
                f.seek(pos)
                got = f.readinto(view[off:off + self.sizes[i] - pos])
            off += got
            pos = 0
            i = (i + 1) % len(self.paths)
        return zlib.crc32(view)


class FromFile:
    """Batch i: FILE from i * batch-size on, wrapping, read with gp_read
    into the slot (the worker's pool: gpupool.loader.worker_pool())."""

    def __init__(self, path):
        self.path = path
        self.size = os.path.getsize(path)
        if not self.size:
            raise SystemExit("loader.py: %s is empty" % path)
        self.fd = None

    def __call__(self, index, view):
        from gpupool.loader import worker_pool
        pool = worker_pool()
        if self.fd is None:                      # per worker process
            self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        n, off = len(view), 0
        pos = (index * n) % self.size
        while off < n:
            want = min(n - off, self.size - pos)
            got = pool.read_into(view[off:off + want], self.fd, pos)
            if not got:
                raise RuntimeError("loader.py: %s ended early" % self.path)
            off += got
            pos = (pos + got) % self.size
        if index == 0:
            st = pool.read_stats()
            print("loader.py: batch 0 read with gp_read: io_uring fixed "
                  "buffers %.1f MiB, O_DIRECT %.1f MiB, bounce %.1f MiB, "
                  "page cache %.1f MiB" % (
                      st["fixed_bytes"] / 2**20, st["direct_bytes"] / 2**20,
                      st["bounce_bytes"] / 2**20,
                      st["buffered_bytes"] / 2**20),
                  file=sys.stderr, flush=True)
        return zlib.crc32(view)


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    try:
        if t and t[-1] in mult:
            return int(float(t[:-1]) * mult[t[-1]])
        return int(t)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a size" % text)


def ctl_path():
    env = os.environ.get("GPUPOOL_CTL")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.join(here, "..", "..", "build", "tools", "gpupoolctl")
    return built if os.path.exists(built) else shutil.which("gpupoolctl")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batches", type=int, default=64)
    ap.add_argument("--batch-size", type=parse_size, default=16 << 20)
    ap.add_argument("--data-dir")
    ap.add_argument("--file")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    if a.workers < 1 or a.batches < 1 or a.batch_size < 1:
        ap.error("--workers, --batches and --batch-size must be positive")
    if a.data_dir and a.file:
        ap.error("--data-dir or --file, not both")
    produce = (FromFiles(a.data_dir) if a.data_dir else
               FromFile(a.file) if a.file else synthetic)
    progress = sys.stdout.isatty() and not a.quiet

    with gpupool.Pool() as pool:
        info = pool.info()
        print("loader.py: %s backend, CUDA %s, %d workers, %d batches of %d bytes"
              % (info["backend"], "registered" if info["cuda_registered"]
                 else "off (checksums instead of copies to a GPU)",
                 a.workers, a.batches, a.batch_size), flush=True)
        bad = 0
        t0 = time.monotonic()
        with gpupool.Loader(pool, produce, a.batch_size,
                            num_workers=a.workers) as loader:
            for k, batch in enumerate(loader.batches(a.batches), 1):
                with batch:
                    if zlib.crc32(batch.view) != batch.meta:
                        bad += 1
                        print("loader.py: batch %d: checksum mismatch"
                              % batch.index, file=sys.stderr)
                if progress:
                    el = time.monotonic() - t0
                    print("\r  %d/%d batches, %.1f batches/s, %.2f GB/s "
                          % (k, a.batches, k / el, k * a.batch_size / el / 1e9),
                          end="", flush=True)
        el = time.monotonic() - t0
        if progress:
            print()
        print("batches: %d" % a.batches)
        print("throughput: %.1f batches/s, %.2f GB/s"
              % (a.batches / el, a.batches * a.batch_size / el / 1e9))
        print("checksum: %s" % ("ok" if not bad else "%d BAD" % bad))
    # After the pool is closed, so that the pool shows what the loader gave
    # back (everything), not this process still holding the device open.
    if info["backend"] == "kernel" and ctl_path():
        sys.stdout.flush()
        subprocess.run([ctl_path(), "stat"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
