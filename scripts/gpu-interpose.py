#!/usr/bin/env python3
"""PyTorch under the interposer, on a GPU (scripts/gpu-check.sh runs it).

    gpu-interpose.py check          under `gpupoolctl run`: pinned tensors
                                    served by the pool, is_pinned(), copies
                                    right, a CUDA graph capturing a
                                    non_blocking copy (and a pin_memory()
                                    inside the capture); exit 0 when all held
    gpu-interpose.py bandwidth      GB/s of host-to-device copies from a
                                    pinned 1 GiB tensor (with or without the
                                    interposer: gpu-check.sh runs both)
    gpu-interpose.py first-pin GIB  seconds per GiB of the first
                                    pin_memory() of GIB GiB

Each prints one line per figure, "name: value".  Served by the pool is
read from the interposer's own figures (gp_interpose_stats, through
ctypes) and, on the kernel backend, from /proc/gpupool's line for this
process.
"""
import ctypes
import os
import sys
import time

import torch


class Stats(ctypes.Structure):
    """struct gp_interpose_stats (include/gpupool_interpose.h)."""
    _fields_ = [("served", ctypes.c_uint64), ("served_bytes", ctypes.c_uint64),
                ("served_driver", ctypes.c_uint64), ("freed", ctypes.c_uint64),
                ("live_bytes", ctypes.c_uint64),
                ("fell_back", ctypes.c_uint64 * 6),
                ("fell_back_bytes", ctypes.c_uint64 * 6),
                ("refused", ctypes.c_uint64 * 6),
                ("real_frees", ctypes.c_uint64), ("bad_frees", ctypes.c_uint64),
                ("inherited", ctypes.c_uint64), ("mode", ctypes.c_int32),
                ("pool", ctypes.c_int32), ("backend", ctypes.c_char * 16),
                ("why", ctypes.c_char * 256)]


def stats():
    try:
        get = ctypes.CDLL(None).gp_interpose_stats
    except AttributeError:
        return None
    st = Stats()
    if get(ctypes.byref(st), ctypes.c_size_t(ctypes.sizeof(st))):
        return None
    return st


def proc_holder_kb():
    """This process's bytes in /proc/gpupool (kernel backend), or None."""
    try:
        with open("/proc/gpupool") as f:
            for line in f:
                parts = line.split()
                if line.startswith("Holder:") and parts[1] == str(os.getpid()):
                    return int(parts[2])
    except OSError:
        return None
    return 0


def served_since(before, what):
    after = stats()
    ok = after is not None and after.served > before.served
    kb = proc_holder_kb()
    print(f"{what}: served by the pool {ok} (served {after.served if after else '-'}"
          f", /proc/gpupool holder {kb if kb is not None else '-'} kB)")
    return ok


def check():
    ok = True
    if stats() is None:
        print("not under the interposer (gpupoolctl run)")
        return 1
    n = 64 << 20
    before = stats()
    a = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    ok &= served_since(before, "torch.empty(pin_memory=True)")
    print(f"is_pinned: {a.is_pinned()}")
    ok &= a.is_pinned()
    before = stats()
    b = torch.arange(n // 4, dtype=torch.int32).pin_memory()
    ok &= served_since(before, "tensor.pin_memory()") and b.is_pinned()
    right = torch.equal(b.cuda(non_blocking=True).cpu(), b)
    print(f"copy to the GPU and back: {right}")
    ok &= right
    ok &= loader()
    ok &= graph()
    return 0 if ok else 1


def loader():
    data = torch.utils.data.TensorDataset(torch.arange(1 << 16).float())
    before = stats()
    batches = list(torch.utils.data.DataLoader(data, batch_size=4096,
                                               pin_memory=True))
    pinned = all(b[0].is_pinned() for b in batches)
    right = torch.equal(torch.cat([b[0] for b in batches]), data.tensors[0])
    print(f"DataLoader(pin_memory=True): batches pinned {pinned}, right {right}")
    return served_since(before, "DataLoader(pin_memory=True)") and pinned and right


def graph():
    n = 16 << 20
    src = torch.full((n,), 7, dtype=torch.uint8).pin_memory()
    dst = torch.empty(n, dtype=torch.uint8, device="cuda")
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        dst.copy_(src, non_blocking=True)       # warm up outside the capture
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    inside = "-"
    with torch.cuda.graph(g):
        dst.copy_(src, non_blocking=True)
        try:
            inside = str(torch.empty(4096, dtype=torch.uint8).pin_memory().is_pinned())
        except RuntimeError as e:
            inside = f"failed: {e}"
    src.fill_(9)
    g.replay()
    torch.cuda.synchronize()
    right = bool((dst == 9).all())
    print(f"CUDA graph of a non_blocking copy from an interposed tensor: "
          f"replayed right {right}; pin_memory() inside the capture: {inside}")
    return right


def bandwidth():
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8).pin_memory()
    dst = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    reps = 10
    t = time.perf_counter()
    for _ in range(reps):
        dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    t = time.perf_counter() - t
    print(f"h2d GB/s: {reps * n / t / 1e9:.2f}")
    return 0


def first_pin(gib):
    torch.cuda.init()
    x = torch.empty(gib << 30, dtype=torch.uint8)
    x.fill_(1)                                   # pageable pages there first
    t = time.perf_counter()
    y = x.pin_memory()
    t = time.perf_counter() - t
    print(f"first pin_memory of {gib} GiB: {t:.3f} s, {t / gib:.3f} s/GiB "
          f"(pinned {y.is_pinned()})")
    return 0


def main():
    if not torch.cuda.is_available():
        print("no CUDA device for torch")
        return 2
    what = sys.argv[1] if len(sys.argv) > 1 else "check"
    if what == "check":
        return check()
    if what == "bandwidth":
        return bandwidth()
    if what == "first-pin":
        return first_pin(int(sys.argv[2]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
