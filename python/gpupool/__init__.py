"""gpupool: pinned host memory from the gpupool pool, for Python.

    with gpupool.Pool() as pool:
        arr = pool.empty((16, 3, 224, 224), "float32")   # numpy, pinned
        buf = pool.buffer(1 << 20)                        # Buffer (memoryview)

Memory goes back to the pool when a Buffer and all its views are gone;
Buffer.free() does it at once, and refuses (BufferError) while a view still
exists. See python/README.md.
"""
import ctypes
import os
import threading
import weakref

from ._lib import (GP_BACKEND_AUTO, GP_BACKEND_KERNEL, GP_BACKEND_USER,
                   GP_HOST_SHARED, GP_NUMA_ANY, GP_NUMA_NEAR_GPU,
                   GP_OPEN_NO_CUDA, GP_OPEN_REQUIRE_CUDA,
                   GP_PLACEMENT_AGE, GP_PLACEMENT_DEFAULT, GP_PLACEMENT_EXACT,
                   GP_PLACEMENT_HALF, GP_PLACEMENT_SEG, GP_PLACEMENT_TF,
                   GpupoolError,
                   _HOST_STATS_FIELDS, _HostStats, _Info, _Options, check, lib)

__all__ = ["Pool", "Buffer", "GpupoolError", "Loader", "Batch"]
__version__ = "0.1.0"

_BACKENDS = {None: GP_BACKEND_AUTO, "auto": GP_BACKEND_AUTO,
             "kernel": GP_BACKEND_KERNEL, "user": GP_BACKEND_USER}

# gp_options.placement: None leaves the library's default, which
# $GPUPOOL_POLICY may name (docs/placement.md).
_PLACEMENTS = {None: GP_PLACEMENT_DEFAULT, "tf": GP_PLACEMENT_TF,
               "exact": GP_PLACEMENT_EXACT, "seg": GP_PLACEMENT_SEG,
               "half": GP_PLACEMENT_HALF, "age": GP_PLACEMENT_AGE}


# Address ranges of this process's live Buffers (ptr -> size), for
# gpupool.torch.is_pool_tensor.
_spans = {}
_spans_lock = threading.Lock()


def _owns(addr):
    """Whether addr lies in a live Buffer of this process."""
    with _spans_lock:
        spans = list(_spans.items())
    return any(p <= addr < p + n for p, n in spans)


class _Ctx:
    """The gp_ctx handle.  Every Buffer holds a reference, so the context
    is closed (gp_close) only after the pool and all its buffers are gone."""

    def __init__(self, opts):
        handle = ctypes.c_void_p()
        check(lib.gp_open(ctypes.byref(opts), ctypes.byref(handle)), None,
              "gp_open")
        self.handle = handle.value
        # A fork()ed child inherits this object, and its finalizers run at
        # the child's exit: the context is the parent's, and on the kernel
        # backend its file is shared, so closing it there would free the
        # parent's chunks.  Only the process that opened it closes it.
        self.pid = os.getpid()
        self._finalizer = weakref.finalize(self, _Ctx._close, self.handle,
                                           self.pid)

    @staticmethod
    def _close(handle, pid):
        if os.getpid() == pid:
            lib.gp_close(handle)


class Buffer:
    """size bytes of pinned pool memory.  buf.view() gives a memoryview
    (memoryview(buf) too, on Python 3.12 and later); buf.numpy(...) and
    buf.torch(...) typed ones."""

    def __init__(self, ctx, ptr, size, shared, owned_size=None):
        self._ctx = ctx
        self.ptr = ptr
        self.size = size
        self.shared = shared
        self.capacity = owned_size or size
        # The ctypes array is the exporter every view refers to; when the
        # last reference to it goes (this Buffer's and every view's), the
        # finalizer returns the memory to the pool.
        self._arr = (ctypes.c_ubyte * size).from_address(ptr)
        self._fin = weakref.finalize(self._arr, Buffer._release, ctx, ptr)
        with _spans_lock:
            _spans[ptr] = size

    @staticmethod
    def _release(ctx, ptr):
        with _spans_lock:
            _spans.pop(ptr, None)
        if os.getpid() == ctx.pid:     # not in a fork()ed child: see _Ctx
            lib.gp_host_free(ctx.handle, ptr)

    def _live(self):
        if self._arr is None:
            raise ValueError("gpupool: buffer already freed")
        return self._arr

    def view(self):
        """A writable memoryview of the bytes."""
        return memoryview(self._live()).cast("B")

    def __buffer__(self, flags):   # Python >= 3.12 buffer protocol
        return self.view()

    def __len__(self):
        return self.size

    def numpy(self, shape=None, dtype="uint8"):
        """A numpy array over the buffer (shape defaults to 1-D)."""
        import numpy as np
        dt = np.dtype(dtype)
        count = -1 if shape is None else int(np.prod(shape))
        a = np.frombuffer(self._live(), dtype=dt, count=count)
        return a if shape is None else a.reshape(shape)

    def torch(self, dtype=None):
        """A torch tensor over the buffer (torch.frombuffer); pinned when
        libgpupool registered the memory with CUDA."""
        import torch
        return torch.frombuffer(self._live(), dtype=dtype or torch.uint8)

    def free(self):
        """Return the memory now.  BufferError while any view exists: a
        view must never outlive the memory it shows."""
        if self._arr is None:
            return
        import sys
        # References: self._arr, and getrefcount's own argument.
        extra = sys.getrefcount(self._arr) - 2
        if extra > 0:
            raise BufferError("gpupool: %d view(s) of this buffer still exist; "
                              "delete them before free()" % extra)
        self._arr = None     # drops the last reference: the finalizer frees

    @property
    def freed(self):
        return self._arr is None

    def __repr__(self):
        return "<gpupool.Buffer %d bytes at %#x%s>" % (
            self.size, self.ptr, " (freed)" if self._arr is None else "")


class Pool:
    """A libgpupool context.  backend: None/"auto", "kernel" or "user";
    numa_node: a node, "gpu" (near numa_device) or None; host_limit: bytes;
    require_cuda / no_cuda: as GP_OPEN_REQUIRE_CUDA / GP_OPEN_NO_CUDA;
    placement: how its pools place buffers: "tf" (TensorFlow's BFC, the
    default), "exact", "seg", "half" or "age" (tighter packing, a little
    slower: docs/placement.md), or None for $GPUPOOL_POLICY, else the
    default."""

    def __init__(self, backend=None, numa_node=None, numa_device=0,
                 host_limit=0, require_cuda=False, no_cuda=False,
                 placement=None):
        if backend not in _BACKENDS:
            raise ValueError("gpupool: backend must be 'auto', 'kernel' or "
                             "'user', not %r" % (backend,))
        try:
            placement_code = _PLACEMENTS[placement]
        except (KeyError, TypeError):      # TypeError: unhashable
            raise ValueError("gpupool: placement must be 'tf', 'exact', "
                             "'seg', 'half', 'age' or None, not %r"
                             % (placement,)) from None
        opts = _Options()
        lib.gp_options_init(ctypes.byref(opts))
        opts.backend = _BACKENDS[backend]
        opts.placement = placement_code
        if numa_node == "gpu":
            opts.numa_node = GP_NUMA_NEAR_GPU
            opts.numa_device = int(numa_device)
        elif numa_node is not None:
            opts.numa_node = int(numa_node)
        else:
            opts.numa_node = GP_NUMA_ANY
        opts.host_limit = int(host_limit)
        opts.flags = ((GP_OPEN_REQUIRE_CUDA if require_cuda else 0) |
                      (GP_OPEN_NO_CUDA if no_cuda else 0))
        self._ctx = _Ctx(opts)
        self._lock = threading.Lock()

    # context manager ---------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Let go of the context.  Buffers still alive keep it open until
        the last of them goes; no new buffer can be made from this Pool."""
        self._ctx = None

    def _handle(self):
        if self._ctx is None:
            raise ValueError("gpupool: pool is closed")
        return self._ctx

    # buffers -------------------------------------------------------------------
    def buffer(self, nbytes, shared=False):
        """A Buffer of nbytes of pinned memory.  shared=True gives it a
        chunk of its own that export() can hand to another process."""
        ctx = self._handle()
        nbytes = int(nbytes)
        if nbytes <= 0:
            raise ValueError("gpupool: buffer size must be positive, not %d"
                             % nbytes)
        ptr = ctypes.c_void_p()
        check(lib.gp_host_alloc(ctx.handle, nbytes,
                                GP_HOST_SHARED if shared else 0,
                                ctypes.byref(ptr)),
              ctx.handle, "gp_host_alloc(%d)" % nbytes)
        return Buffer(ctx, ptr.value, nbytes, shared)

    def empty(self, shape, dtype="uint8", shared=False):
        """An uninitialised numpy array on pinned pool memory; the memory
        lives as long as the array (and any view of it)."""
        import numpy as np
        dt = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        nbytes = int(np.prod(shape)) * dt.itemsize
        buf = self.buffer(max(nbytes, 1), shared=shared)
        arr = buf.numpy(shape, dt) if nbytes else np.empty(shape, dt)
        return arr

    def tensor(self, shape, dtype=None, shared=False):
        """A torch tensor on pinned pool memory (torch.frombuffer)."""
        import torch
        dtype = dtype or torch.uint8
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        n = 1
        for s in shape:
            n *= int(s)
        itemsize = torch.empty((), dtype=dtype).element_size()
        buf = self.buffer(max(n * itemsize, 1), shared=shared)
        return buf.torch(dtype)[:n].view(shape)

    # sharing -------------------------------------------------------------------
    def export(self, buf):
        """A new file descriptor for a shared Buffer, to pass to another
        process (multiprocessing.reduction.send_handle, or fork).  The
        caller owns it (os.close when sent)."""
        ctx = self._handle()
        fd = ctypes.c_int(-1)
        buf._live()
        check(lib.gp_host_export(ctx.handle, buf.ptr,
                                 ctypes.byref(fd)),
              ctx.handle, "gp_host_export")
        return fd.value

    def import_fd(self, fd):
        """Map a buffer another process exported; the fd stays the caller's."""
        ctx = self._handle()
        ptr = ctypes.c_void_p()
        size = ctypes.c_size_t()
        check(lib.gp_host_import(ctx.handle, int(fd), ctypes.byref(ptr),
                                 ctypes.byref(size)),
              ctx.handle, "gp_host_import")
        return Buffer(ctx, ptr.value, size.value, True)

    # figures -------------------------------------------------------------------
    def stats(self):
        """gp_host_stats as a dict (bytes and counts)."""
        ctx = self._handle()
        st = _HostStats()
        check(lib.gp_host_stats(ctx.handle, ctypes.byref(st)), ctx.handle,
              "gp_host_stats")
        return {name: getattr(st, name) for name in _HOST_STATS_FIELDS}

    def info(self):
        """gp_info as a dict: backend, CUDA state, versions, why."""
        ctx = self._handle()
        i = _Info()
        check(lib.gp_info(ctx.handle, ctypes.byref(i)), ctx.handle, "gp_info")
        return {
            "backend": i.backend_name.decode(),
            "cuda_registered": bool(i.cuda_state),
            "device_count": i.device_count,
            "numa_node": i.numa_node,
            "lib_version": "%d.%d" % (i.lib_major, i.lib_minor),
            "abi_version": "%d.%d" % (i.abi_major, i.abi_minor),
            "kmod_abi_version": "%d.%d" % (i.kmod_abi_major, i.kmod_abi_minor),
            "host_granularity": i.host_granularity,
            "hugepages": bool(i.hugepages),
            "cudart": i.cudart.decode(),
            "why": i.why.decode(),
        }

    def trim(self):
        """Give cached memory back to the system; the bytes released."""
        ctx = self._handle()
        released = ctypes.c_uint64()
        check(lib.gp_host_trim(ctx.handle, ctypes.byref(released)),
              ctx.handle, "gp_host_trim")
        return released.value

    # files -------------------------------------------------------------------
    def read_into(self, buf, file, offset=0, length=None, no_cache=False,
                  buffered=False):
        """Read length bytes (default: the buffer's size) of file (a path or
        an fd) at offset into buf (a Buffer, numpy array or torch tensor on
        this pool's memory) with gp_read; the bytes read (short at EOF)."""
        return _io.read_into(self._handle(), buf, file, offset, length,
                             no_cache, buffered)

    def read_many(self, requests, depth=64, no_cache=False, buffered=False):
        """Many reads in flight: (buf, file, offset[, length]) tuples; the
        bytes read for each, in order (gpupool.io)."""
        return _io.read_many(self._handle(), requests, depth, no_cache,
                             buffered)

    def read_stats(self):
        """gp_read_stats as a dict: requests and bytes per path."""
        return _io.read_stats(self._handle())


from . import io as _io  # noqa: E402
from .loader import Batch, Loader  # noqa: E402  (needs Pool above)
from .torch_support import use_as_cuda_allocator  # noqa: E402,F401
