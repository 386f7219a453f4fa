"""Reading files straight into pool memory (gp_read and the batched reader).

    n = pool.read_into(buf, "shard-000.bin", offset=4096)
    counts = pool.read_many([(batch[i], "shard.bin", i * rec, rec) ...])

buf is a Buffer (or a memoryview of one), a numpy array or a torch tensor on
pool memory (C-contiguous);
file a path (opened read-only for the call) or a file descriptor.  The library
picks the path: io_uring fixed buffers with O_DIRECT, O_DIRECT, else the page
cache; no_cache=True forbids the page cache, buffered=True forces it.
"""
import ctypes
import os

from ._lib import check, lib

GP_READ_NO_CACHE = 1 << 0
GP_READ_BUFFERED = 1 << 1

_STATS_FIELDS = [
    "requests", "bytes", "errors", "short_reads", "fixed", "fixed_bytes",
    "direct", "direct_bytes", "bounce", "bounce_bytes", "buffered",
    "buffered_bytes", "fixed_registered", "fixed_refusals", "readers",
]
_FIXED_STATES = {0: "unknown", 1: "ok", 2: "refused", 3: "no io_uring",
                 4: "no buffer table"}


class _ReadStats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in _STATS_FIELDS] + [
        ("fixed_state", ctypes.c_uint32), ("pad", ctypes.c_uint32)]


class _Req(ctypes.Structure):
    _fields_ = [
        ("fd", ctypes.c_int), ("flags", ctypes.c_uint),
        ("offset", ctypes.c_uint64), ("dst", ctypes.c_void_p),
        ("len", ctypes.c_size_t), ("user_data", ctypes.c_uint64),
        ("result", ctypes.c_int64), ("internal", ctypes.c_uint64 * 8),
    ]


_vp = ctypes.c_void_p
_P = ctypes.POINTER
lib.gp_read.argtypes = [_vp, ctypes.c_int, ctypes.c_uint64, _vp,
                        ctypes.c_size_t, ctypes.c_uint, _P(ctypes.c_size_t)]
lib.gp_reader_open.argtypes = [_vp, ctypes.c_uint, _P(_vp)]
lib.gp_reader_close.argtypes = [_vp]
lib.gp_reader_close.restype = None
lib.gp_reader_submit.argtypes = [_vp, _P(_Req), ctypes.c_uint]
lib.gp_reader_wait.argtypes = [_vp, ctypes.c_uint, _P(_P(_Req)),
                               ctypes.c_uint, _P(ctypes.c_uint)]
lib.gp_read_stats.argtypes = [_vp, _P(_ReadStats)]
for _f in ("gp_read", "gp_reader_open", "gp_reader_submit", "gp_reader_wait",
           "gp_read_stats"):
    getattr(lib, _f).restype = ctypes.c_int


def _memory(buf):
    """(address, bytes) of a Buffer, numpy array or torch tensor."""
    if hasattr(buf, "ptr") and hasattr(buf, "_live"):
        buf._live()
        return buf.ptr, buf.size
    if isinstance(buf, memoryview):              # e.g. Buffer.view()
        if buf.readonly or not buf.c_contiguous:
            raise ValueError("gpupool: read_into needs a writable, "
                             "contiguous memoryview")
        if not buf.nbytes:
            return 0, 0
        return ctypes.addressof(ctypes.c_char.from_buffer(buf)), buf.nbytes
    if hasattr(buf, "data_ptr"):                 # torch.Tensor
        if not buf.is_contiguous():
            raise ValueError("gpupool: read_into needs a contiguous tensor")
        return buf.data_ptr(), buf.numel() * buf.element_size()
    if hasattr(buf, "__array_interface__"):      # numpy
        if not buf.flags["C_CONTIGUOUS"] or not buf.flags["WRITEABLE"]:
            raise ValueError("gpupool: read_into needs a C-contiguous, "
                             "writable array")
        return buf.__array_interface__["data"][0], buf.nbytes
    raise TypeError("gpupool: read_into wants a Buffer, numpy array or "
                    "torch tensor, not %s" % type(buf).__name__)


class _Files:
    """Paths opened once for a call, closed after it; fds passed through."""

    def __init__(self):
        self.opened = {}

    def fd(self, f):
        if isinstance(f, int):
            return f
        key = os.fspath(f)
        if key not in self.opened:
            self.opened[key] = os.open(key, os.O_RDONLY | os.O_CLOEXEC)
        return self.opened[key]

    def close(self):
        for fd in self.opened.values():
            os.close(fd)
        self.opened = {}


def _flags(no_cache, buffered):
    return (GP_READ_NO_CACHE if no_cache else 0) | \
           (GP_READ_BUFFERED if buffered else 0)


def read_into(ctx, buf, file, offset=0, length=None, no_cache=False,
              buffered=False):
    addr, size = _memory(buf)
    length = size if length is None else int(length)
    if length > size:
        raise ValueError("gpupool: length %d is larger than the buffer (%d)"
                         % (length, size))
    files = _Files()
    try:
        done = ctypes.c_size_t()
        check(lib.gp_read(ctx.handle, files.fd(file), int(offset), addr,
                          length, _flags(no_cache, buffered),
                          ctypes.byref(done)),
              ctx.handle, "gp_read")
        return done.value
    finally:
        files.close()


def read_many(ctx, requests, depth=64, no_cache=False, buffered=False):
    """requests: (buf, file, offset[, length]) tuples; all in flight at once
    (depth at a time); returns the bytes read for each, in order."""
    reqs = list(requests)
    results = [0] * len(reqs)
    if not reqs:
        return results
    depth = max(1, min(int(depth), 4096, len(reqs)))
    files = _Files()
    reader = ctypes.c_void_p()
    check(lib.gp_reader_open(ctx.handle, depth, ctypes.byref(reader)),
          ctx.handle, "gp_reader_open")
    try:
        flags = _flags(no_cache, buffered)
        for start in range(0, len(reqs), depth):
            part = reqs[start:start + depth]
            arr = (_Req * len(part))()
            for i, r in enumerate(part):
                buf, file, offset = r[0], r[1], r[2]
                addr, size = _memory(buf)
                length = size if len(r) < 4 or r[3] is None else int(r[3])
                if length > size:
                    raise ValueError("gpupool: request %d: length %d is larger "
                                     "than its buffer (%d)"
                                     % (start + i, length, size))
                arr[i].fd = files.fd(file)
                arr[i].flags = flags
                arr[i].offset = int(offset)
                arr[i].dst = addr
                arr[i].len = length
                arr[i].user_data = start + i
            check(lib.gp_reader_submit(reader, arr, len(part)), ctx.handle,
                  "gp_reader_submit")
            done = (_P(_Req) * len(part))()
            n = ctypes.c_uint()
            got = 0
            while got < len(part):
                check(lib.gp_reader_wait(reader, len(part) - got, done,
                                         len(part), ctypes.byref(n)),
                      ctx.handle, "gp_reader_wait")
                for k in range(n.value):
                    results[done[k].contents.user_data] = \
                        done[k].contents.result
                got += n.value
        for i, res in enumerate(results):
            if res < 0:
                check(int(res), ctx.handle, "gp_read (request %d)" % i)
        return results
    finally:
        lib.gp_reader_close(reader)
        files.close()


def read_stats(ctx):
    st = _ReadStats()
    check(lib.gp_read_stats(ctx.handle, ctypes.byref(st)), ctx.handle,
          "gp_read_stats")
    d = {n: getattr(st, n) for n in _STATS_FIELDS}
    d["fixed_buffers"] = _FIXED_STATES.get(st.fixed_state, str(st.fixed_state))
    return d
