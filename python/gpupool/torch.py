"""PyTorch's own DataLoader on pinned pool memory.

    pool = gpupool.Pool()
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=64, num_workers=4,
        collate_fn=gpupool.torch.PinnedCollate(pool))

PinnedCollate builds each batch as torch's default_collate would (or as the
collate_fn it wraps does), with every tensor of the batch packed into ONE
pool buffer.  In a DataLoader worker that buffer is a shared chunk (an
exported chunk of gpupool.ko on the kernel backend, the library's sealed
memfd on the user backend); the batch crosses the DataLoader's result queue
as the chunk's file descriptor, and the training process maps the same
pages: nothing is copied after the worker's write.  With num_workers=0 the
batch is built in the training process and nothing crosses.

The batch's tensors keep its chunk: when the last of them is gone, the chunk
goes back to the pool (in the worker, once the batch has been pickled).

NpyShards(paths) is a Dataset of the rows of .npy files, as references;
ShardCollate(pool, dataset) reads a batch of them with the library's file
reader straight into the batch tensor in the chunk.

Only this module imports torch; `import gpupool` works without it.
"""
import os
import threading
import uuid
import weakref
from collections import abc
from multiprocessing import reduction

try:
    import torch
except ImportError as e:
    raise ImportError(
        "gpupool.torch needs PyTorch: install python3-torch (Debian, "
        "apt install python3-torch) or torch (pip install torch); `import "
        "gpupool` works without it") from e

import gpupool
from ._lib import GpupoolError

__all__ = ["PinnedCollate", "ShardCollate", "NpyShards", "NpyRecord",
           "is_pool_tensor", "use_as_cuda_allocator"]

MIN_TORCH = (1, 13)


def _version(text):
    """(major, minor) of a torch version string such as '1.13.0a0+git'."""
    parts = []
    for p in text.split("+")[0].split(".")[:2]:
        digits = ""
        for ch in p:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
    return tuple(parts + [0] * (2 - len(parts)))


if _version(torch.__version__) < MIN_TORCH:
    raise ImportError("gpupool.torch needs torch >= %d.%d; this is torch %s"
                      % (MIN_TORCH + (torch.__version__,)))

ALIGN = 256          # bytes: every tensor of a batch starts on this boundary


def _fmt(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return ("%d %s" % (n, unit)) if unit == "B" else \
                "%.1f %s" % (n, unit)
        n /= 1024.0
    return "%d" % n


def is_pool_tensor(t):
    """Whether a tensor's storage lies in pool memory of this process (a
    Buffer, an imported chunk or a PinnedCollate batch still alive)."""
    if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
        return False
    # The storage's address: a zero-size tensor's data_ptr() is 0.
    if hasattr(t, "untyped_storage"):            # torch >= 2.0
        start = t.untyped_storage().data_ptr()
    else:                                        # torch 1.13
        start = t.storage().data_ptr()
    return start != 0 and gpupool._owns(start)


def use_as_cuda_allocator(library=None):
    """Install libgpupool's device pool as PyTorch's CUDA allocator
    (torch.cuda.memory.CUDAPluggableAllocator over gp_torch_alloc /
    gp_torch_free).  Must run before PyTorch's first CUDA allocation (a
    PyTorch rule).  Returns the allocator object.  Needs torch >= 2.0."""
    mem = getattr(torch.cuda, "memory", None)
    if mem is None or not hasattr(mem, "CUDAPluggableAllocator"):
        raise RuntimeError(
            "gpupool.torch.use_as_cuda_allocator needs torch >= 2.0 "
            "(torch.cuda.memory.CUDAPluggableAllocator); this is torch %s"
            % torch.__version__)
    from ._lib import lib
    path = library or lib._name
    allocator = mem.CUDAPluggableAllocator(path, "gp_torch_alloc",
                                           "gp_torch_free")
    mem.change_current_allocator(allocator)
    return allocator


# -- building a batch ------------------------------------------------------
class _Stack:
    """A tensor default_collate would make with torch.stack(samples)."""
    __slots__ = ("samples", "shape", "dtype")

    def __init__(self, samples):
        elem = samples[0]
        self.samples = samples
        self.shape = (len(samples),) + tuple(elem.shape)
        self.dtype = elem.dtype


class _Slot:
    """Where one tensor of a batch lies in its chunk (what crosses)."""
    __slots__ = ("offset", "nbytes", "dtype", "shape")

    def __init__(self, offset, nbytes, dtype, shape):
        self.offset, self.nbytes = offset, nbytes
        self.dtype, self.shape = dtype, shape

    def __getstate__(self):
        return (self.offset, self.nbytes, self.dtype, self.shape)

    def __setstate__(self, s):
        self.offset, self.nbytes, self.dtype, self.shape = s

    def tensor(self, base):
        """This slot as a tensor over base (the chunk, uint8)."""
        t = base.narrow(0, self.offset, self.nbytes)
        return t.view(self.dtype).view(self.shape)


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _plan(batch):
    """default_collate(batch) (torch 1.13 and 2.x), except that every
    tensor it would stack is left as a _Stack to be written into the
    chunk.  Numbers become (small) tensors here and are copied in."""
    elem = batch[0]
    if isinstance(elem, torch.Tensor):
        if elem.device.type != "cpu":
            return torch.stack(batch, 0)
        return _Stack(list(batch))
    mod = type(elem).__module__
    if mod == "numpy":
        import numpy as np
        if isinstance(elem, np.ndarray):
            if elem.dtype.kind in "SaUO":
                raise TypeError("gpupool.torch.PinnedCollate: batch must "
                                "contain tensors, numpy arrays, numbers, dicts "
                                "or lists; found %s" % elem.dtype)
            return _plan([torch.as_tensor(b) for b in batch])
        if isinstance(elem, (np.bool_, np.number, np.object_)):
            return torch.as_tensor(batch)
    if isinstance(elem, float):
        return torch.tensor(batch, dtype=torch.float64)
    if isinstance(elem, int):
        return torch.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, abc.Mapping):
        try:
            return type(elem)({k: _plan([d[k] for d in batch]) for k in elem})
        except TypeError:
            return {k: _plan([d[k] for d in batch]) for k in elem}
    if _is_namedtuple(elem):
        return type(elem)(*(_plan(s) for s in zip(*batch)))
    if isinstance(elem, abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of "
                               "equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [_plan(s) for s in transposed]
        try:
            return type(elem)([_plan(s) for s in transposed])
        except TypeError:
            return [_plan(s) for s in transposed]
    raise TypeError("gpupool.torch.PinnedCollate: batch must contain tensors, "
                    "numpy arrays, numbers, dicts or lists; found %s"
                    % type(elem))


def _walk(obj, leaf, fn):
    """obj with every leaf (leaf(x) true) replaced by fn(x), through
    dicts, lists, tuples and namedtuples (their types kept)."""
    if leaf(obj):
        return fn(obj)
    if isinstance(obj, abc.Mapping):
        try:
            return type(obj)({k: _walk(v, leaf, fn) for k, v in obj.items()})
        except TypeError:
            return {k: _walk(v, leaf, fn) for k, v in obj.items()}
    if _is_namedtuple(obj):
        return type(obj)(*(_walk(v, leaf, fn) for v in obj))
    if isinstance(obj, (tuple, list)):
        items = [_walk(v, leaf, fn) for v in obj]
        try:
            return type(obj)(items)
        except TypeError:
            return items if isinstance(obj, list) else tuple(items)
    return obj


def _is_packable(x):
    return isinstance(x, _Stack) or (isinstance(x, torch.Tensor) and
                                     x.device.type == "cpu")


def _is_slot(x):
    return isinstance(x, _Slot)


# -- crossing to the training process ---------------------------------------
_POOLS = weakref.WeakValueDictionary()   # token -> the training process's Pool
_fallback = {}                            # (pid, backend) -> Pool
_fallback_lock = threading.Lock()


def _trainer_pool(token, backend):
    pool = _POOLS.get(token)
    if pool is not None and pool._ctx is not None:
        return pool
    # Unpickled where the PinnedCollate was not made (or its pool closed).
    key = (os.getpid(), backend)
    with _fallback_lock:
        pool = _fallback.get(key)
        if pool is None:
            pool = _fallback[key] = gpupool.Pool(backend=backend)
    return pool


def _rebuild(token, backend, dupfd, nbytes, skeleton):
    """Runs where the batch is unpickled: map the chunk, make the tensors.
    A failure comes back as torch's ExceptionWrapper, which the DataLoader
    raises in the training process (also from its pin-memory thread, which
    would otherwise die silently)."""
    try:
        fd = dupfd.detach()
        try:
            try:
                buf = _trainer_pool(token, backend).import_fd(fd)
            except GpupoolError as e:
                raise GpupoolError(
                    e.errno, "gpupool.torch: cannot map a batch of %s from a "
                    "DataLoader worker into this process: %s"
                    % (_fmt(nbytes), e.strerror or e)) from None
        finally:
            os.close(fd)
        base = buf.torch()
        del buf                  # base's storage holds the memory now
        return _walk(skeleton, _is_slot, lambda s: s.tensor(base))
    except Exception:
        from torch._utils import ExceptionWrapper
        return ExceptionWrapper(where="in gpupool.torch, mapping a batch from "
                                "a DataLoader worker")


class _PinnedBatch:
    """What a worker's collate returns: a descriptor of the chunk (which
    keeps its memory) and where each tensor lies in it.  Pickled (by the
    DataLoader's result queue) as a duplicate of that descriptor;
    unpickled as the batch itself.  The descriptor is closed when this
    object goes, once pickled."""

    def __init__(self, fd, nbytes, skeleton, token, backend):
        self.fd, self.nbytes, self.skeleton = fd, nbytes, skeleton
        self.token, self.backend = token, backend
        weakref.finalize(self, os.close, fd)

    def __reduce__(self):
        return (_rebuild, (self.token, self.backend,
                           reduction.DupFd(self.fd), self.nbytes,
                           self.skeleton))


class PinnedCollate:
    """A DataLoader collate_fn putting each batch into one pool chunk.

    collate_fn: None for torch's default_collate (tensors are stacked
    straight into the chunk: one write per byte), or a function whose
    result (tensors in dicts, lists, tuples, namedtuples; other leaves as
    they are) is copied into the chunk.  Picklable (for the spawn and
    forkserver start methods) when collate_fn is."""

    def __init__(self, pool, collate_fn=None):
        self.pool = pool
        self.collate_fn = collate_fn
        self._backend = pool.info()["backend"]
        self._host_limit = pool.stats()["limit"]
        self._token = uuid.uuid4().hex
        self._pid = os.getpid()
        self._local = None             # (pid, Pool) opened in a worker
        _POOLS[self._token] = pool

    def __getstate__(self):
        state = dict(self.__dict__)
        state["pool"] = None
        state["_local"] = None
        return state

    def _pool_here(self):
        pid = os.getpid()
        if pid == self._pid and self.pool is not None:
            return self.pool
        if self._local is None or self._local[0] != pid:
            # A worker: a context of its own (a fork()ed child must not use
            # its parent's), no CUDA (the training process registers).
            self._local = (pid, gpupool.Pool(backend=self._backend,
                                             host_limit=self._host_limit,
                                             no_cuda=True))
        return self._local[1]

    def __call__(self, batch):
        tree = _plan(batch) if self.collate_fn is None else \
            self.collate_fn(batch)
        skeleton, leaves, total = _layout(tree)
        buf, in_worker = self._buffer(total, len(leaves))
        base = buf.torch()
        outs = {}
        for x, slot in leaves:
            out = outs[id(slot)] = slot.tensor(base)
            if isinstance(x, _Stack):
                torch.stack(x.samples, 0, out=out)
            else:
                out.copy_(x)
        del base
        return self._finish(buf, in_worker, skeleton, total, outs)

    def _buffer(self, total, ntensors, what="batch"):
        """The batch's pool buffer: a shared chunk in a worker.  Returns
        (buf, in_worker)."""
        from torch.utils.data import get_worker_info
        in_worker = get_worker_info() is not None
        pool = self._pool_here()
        try:
            buf = pool.buffer(max(total, 1), shared=in_worker)
        except GpupoolError as e:
            raise GpupoolError(
                e.errno, "gpupool.torch.%s: no pool memory for a %s of %s "
                "(%d tensors): %s" % (type(self).__name__, what, _fmt(total),
                                      ntensors, e.strerror or e)) from None
        return buf, in_worker

    def _finish(self, buf, in_worker, skeleton, total, outs):
        """The batch as the collate_fn returns it: its tensors (outs: id of
        a slot -> its tensor over buf) in this process, a _PinnedBatch in
        a worker."""
        if not in_worker:
            del buf              # the tensors hold the memory
            return _walk(skeleton, _is_slot, lambda s: outs[id(s)])
        # The descriptor is made here, not when the result queue's thread
        # pickles the batch, so that a failure reaches the DataLoader as
        # this worker's error (a failing pickle would lose the batch).
        # It keeps the memory: the worker's mapping goes now.
        outs.clear()
        pool = self._pool_here()
        try:
            fd = pool.export(buf)
        except GpupoolError as e:
            raise GpupoolError(
                e.errno, "gpupool.torch.%s: cannot share a batch of %s: %s"
                % (type(self).__name__, _fmt(total), e.strerror or e)) \
                from None
        del buf
        return _PinnedBatch(fd, total, skeleton, self._token, self._backend)


def _nbytes(shape, dtype):
    n = 1
    for s in shape:
        n *= int(s)
    return n * torch.empty((), dtype=dtype).element_size()


def _layout(tree):
    """Where each tensor (or _Stack) of tree lies in one chunk, ALIGN
    apart: (skeleton with _Slots for them, [(leaf, slot)], total bytes)."""
    leaves = []
    total = 0

    def place(x):
        nonlocal total
        nbytes = _nbytes(x.shape, x.dtype)
        off = 0
        if nbytes:
            off = (total + ALIGN - 1) // ALIGN * ALIGN
            total = off + nbytes
        slot = _Slot(off, nbytes, x.dtype, tuple(x.shape))
        leaves.append((x, slot))
        return slot

    return _walk(tree, _is_packable, place), leaves, total


# -- records of .npy shards read straight into the batch's chunk -----------
_TORCH_DTYPES = {
    "b1": torch.bool, "u1": torch.uint8, "i1": torch.int8,
    "i2": torch.int16, "i4": torch.int32, "i8": torch.int64,
    "f2": torch.float16, "f4": torch.float32, "f8": torch.float64,
    "c8": torch.complex64, "c16": torch.complex128,
}


class NpyRecord(tuple):
    """What NpyShards[i] is: (shard number, row in that shard)."""
    __slots__ = ()

    def __new__(cls, shard, row):
        return tuple.__new__(cls, (shard, row))

    def __getnewargs__(self):
        return tuple(self)

    shard = property(lambda self: self[0])
    row = property(lambda self: self[1])


class NpyShards(torch.utils.data.Dataset):
    """A map-style Dataset over .npy files holding arrays of one dtype whose
    shapes differ in their first dimension only: item i is row i of the
    shards taken one after the other, as an NpyRecord (a reference, not the
    data); ShardCollate reads a batch of them into one pool chunk.

    labels: None, or one value per record (a sequence, numpy array or
    tensor of numbers): the batches are then (records, labels)."""

    def __init__(self, paths, labels=None):
        from . import npy
        self.paths = [os.fspath(p) for p in paths]
        if not self.paths:
            raise ValueError("gpupool.torch.NpyShards: no shards")
        self.headers = [npy.read_header(p) for p in self.paths]
        first = self.headers[0]
        if not first.shape:
            raise npy.NpyError("gpupool.torch.NpyShards: %s holds a 0-d array "
                               "(records are rows of the first dimension)"
                               % first.path)
        if first.code not in _TORCH_DTYPES:
            raise npy.NpyError("gpupool.torch.NpyShards: %s: dtype %r has no "
                               "torch dtype" % (first.path, first.descr))
        for h in self.headers[1:]:
            if h.code != first.code or h.shape[1:] != first.shape[1:]:
                raise npy.NpyError(
                    "gpupool.torch.NpyShards: %s holds %s rows of %r, %s "
                    "holds %s rows of %r: every shard needs the same dtype "
                    "and shape[1:]" % (first.path, first.descr,
                                       first.shape[1:], h.path, h.descr,
                                       h.shape[1:]))
        self.dtype = _TORCH_DTYPES[first.code]
        self.record_shape = tuple(first.shape[1:])
        self.record_bytes = first.nbytes // first.shape[0] if first.shape[0] \
            else _nbytes(self.record_shape, self.dtype)
        # Where the batch tensor starts in its chunk.  O_DIRECT reads a
        # record without a copy when its file offset and its address are
        # aligned alike: where records are whole blocks and every shard's
        # data starts at the same offset within a page (the header's size),
        # the tensor starts at that offset in the (page-aligned) chunk.
        # Otherwise at 0 (256-byte aligned, as PinnedCollate's tensors).
        self.data_offset = 0
        page = {h.offset % 4096 for h in self.headers}
        if self.record_bytes and self.record_bytes % 4096 == 0 and \
                len(page) == 1:
            self.data_offset = page.pop()
        self.starts = [0]                 # global index of each shard's row 0
        for h in self.headers:
            self.starts.append(self.starts[-1] + h.shape[0])
        self.labels = None
        if labels is not None:
            lab = torch.as_tensor(labels)
            if lab.dim() != 1 or lab.shape[0] != len(self):
                raise ValueError("gpupool.torch.NpyShards: %d labels for %d "
                                 "records" % (lab.numel(), len(self)))
            self.labels = lab

    def __len__(self):
        return self.starts[-1]

    def __getitem__(self, i):
        import bisect
        n = len(self)
        i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("gpupool.torch.NpyShards: record %d of %d"
                             % (i, n))
        s = bisect.bisect_right(self.starts, i) - 1
        return NpyRecord(s, i - self.starts[s])

    def index(self, rec):
        """The global index of an NpyRecord."""
        return self.starts[rec[0]] + rec[1]


class ShardCollate(PinnedCollate):
    """A DataLoader collate_fn for NpyShards: the batch's records are read
    from their files (Pool.read_many: io_uring / O_DIRECT where the file
    system allows) straight into one tensor of shape (batch,) + record
    shape in one pool chunk, then cross to the training process as
    PinnedCollate's batches do.  Records that follow each other in a shard
    and in the batch are read as one request.  With labels, the batch is
    (records, labels), both in the chunk."""

    def __init__(self, pool, dataset, no_cache=False, buffered=False,
                 depth=64):
        if not isinstance(dataset, NpyShards):
            raise TypeError("gpupool.torch.ShardCollate wants an NpyShards, "
                            "not %s" % type(dataset).__name__)
        super().__init__(pool)
        self.dataset = dataset
        self.read_opts = dict(no_cache=no_cache, buffered=buffered,
                              depth=depth)

    def __call__(self, batch):
        ds = self.dataset
        for r in batch:
            if not isinstance(r, NpyRecord):
                raise TypeError("gpupool.torch.ShardCollate: batch items must "
                                "be NpyShards records, found %s"
                                % type(r).__name__)
        shape = (len(batch),) + ds.record_shape
        data = _Slot(ds.data_offset, _nbytes(shape, ds.dtype), ds.dtype,
                     shape)
        total = data.offset + data.nbytes
        skeleton = data
        if ds.labels is not None:
            lshape = (len(batch),)
            off = (total + ALIGN - 1) // ALIGN * ALIGN
            lab = _Slot(off, _nbytes(lshape, ds.labels.dtype),
                        ds.labels.dtype, lshape)
            total = off + lab.nbytes
            skeleton = (data, lab)
        buf, in_worker = self._buffer(total, 1 if ds.labels is None else 2)
        base = buf.torch()
        outs = {id(data): data.tensor(base)}
        if ds.labels is not None:
            idx = torch.tensor([ds.index(r) for r in batch], dtype=torch.long)
            outs[id(lab)] = torch.index_select(ds.labels, 0, idx,
                                               out=lab.tensor(base))
        rb = ds.record_bytes
        if rb:
            flat = base.narrow(0, data.offset, data.nbytes)
            reqs = []                     # [buf, path, offset, length]
            prev = None
            for pos, (s, row) in enumerate(batch):
                h = ds.headers[s]
                if prev is not None and prev == (s, row - 1):
                    reqs[-1][0] = flat.narrow(0, reqs[-1][4], reqs[-1][3] + rb)
                    reqs[-1][3] += rb
                else:
                    reqs.append([flat.narrow(0, pos * rb, rb), h.path,
                                 h.offset + row * rb, rb, pos * rb])
                prev = (s, row)
            got = self._pool_here().read_many(
                [r[:4] for r in reqs], **self.read_opts)
            for r, n in zip(reqs, got):
                if n != r[3]:
                    raise IOError("gpupool.torch.ShardCollate: %s: %d of %d "
                                  "bytes at offset %d (file shrunk?)"
                                  % (r[1], n, r[3], r[2]))
        del base
        return self._finish(buf, in_worker, skeleton, total, outs)
