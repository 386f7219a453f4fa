"""ctypes bindings for libgpupool.so.1 (include/gpupool.h).

Only what the Python package uses is declared; each struct mirrors the C
header field for field (the header's `size` word lets the library check).
"""
import ctypes
import ctypes.util
import errno
import os

GP_BACKEND_AUTO, GP_BACKEND_KERNEL, GP_BACKEND_USER = 0, 1, 2
GP_NUMA_ANY, GP_NUMA_NEAR_GPU = -1, -2
(GP_PLACEMENT_DEFAULT, GP_PLACEMENT_TF, GP_PLACEMENT_EXACT, GP_PLACEMENT_SEG,
 GP_PLACEMENT_HALF, GP_PLACEMENT_AGE) = range(6)
GP_OPEN_REQUIRE_CUDA = 1 << 0
GP_OPEN_NO_CUDA = 1 << 1
GP_HOST_SHARED = 1 << 0


class GpupoolError(OSError):
    """A libgpupool call failed: errno plus the library's own message.

    e.errno ENOMEM: no room (the pool, host_limit, RLIMIT_MEMLOCK, the
    module's per_process_limit); ENOSPC: a cgroup limit of gpupool.ko
    refused the memory, and the message names the cgroup, its limit and
    its use (docs/library.md, "Errors of gp_host_alloc")."""


class _Options(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint32), ("flags", ctypes.c_uint32),
        ("backend", ctypes.c_int32), ("numa_node", ctypes.c_int32),
        ("numa_device", ctypes.c_int32), ("placement", ctypes.c_int32),
        ("host_limit", ctypes.c_uint64), ("host_cache_max", ctypes.c_uint64),
        ("host_gc_idle_ms", ctypes.c_uint64),
        ("host_small_segment", ctypes.c_uint64),
        ("dev_limit", ctypes.c_uint64), ("dev_limit_fraction", ctypes.c_double),
        ("dev_initial_segment", ctypes.c_uint64),
        ("cudart", ctypes.c_char_p), ("reserved", ctypes.c_uint64 * 8),
    ]


class _Info(ctypes.Structure):
    _fields_ = [
        ("backend", ctypes.c_int32), ("cuda_state", ctypes.c_int32),
        ("device_count", ctypes.c_int32),
        ("cuda_runtime_version", ctypes.c_int32),
        ("cuda_driver_version", ctypes.c_int32),
        ("numa_node", ctypes.c_int32),
        ("lib_major", ctypes.c_uint32), ("lib_minor", ctypes.c_uint32),
        ("abi_major", ctypes.c_uint32), ("abi_minor", ctypes.c_uint32),
        ("kmod_abi_major", ctypes.c_uint32), ("kmod_abi_minor", ctypes.c_uint32),
        ("host_granularity", ctypes.c_uint64),
        ("hugepages", ctypes.c_uint32), ("io_fixed", ctypes.c_uint32),
        ("dev_mode", ctypes.c_int32),
        ("backend_name", ctypes.c_char * 16), ("cudart", ctypes.c_char * 128),
        ("why", ctypes.c_char * 192),
    ]


_HOST_STATS_FIELDS = [
    "in_use", "requested", "reserved", "peak_reserved", "cached", "idle",
    "limit", "memlock_limit", "segments", "segments_huge", "allocs", "frees",
    "cache_hits", "map_calls", "unmap_calls", "register_calls",
    "unregister_calls", "registered", "exports", "imports", "trimmed",
    "failed",
]


class _HostStats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in _HOST_STATS_FIELDS]


def _candidates():
    env = os.environ.get("GPUPOOL_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    found = []
    # Running from a checkout: <repo>/python/gpupool -> <repo>/build/userlib.
    repo_lib = os.path.join(here, "..", "..", "build", "userlib",
                            "libgpupool.so.1")
    if os.path.exists(repo_lib):
        found.append(os.path.normpath(repo_lib))
    system = ctypes.util.find_library("gpupool")
    found.append(system or "libgpupool.so.1")
    return found


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path, use_errno=True)
        except OSError as e:
            errors.append("%s: %s" % (path, e))
    raise ImportError(
        "gpupool: cannot load libgpupool.so.1 (%s). Build it with `make lib` "
        "and set GPUPOOL_LIBRARY=<build>/userlib/libgpupool.so.1, or `make "
        "install` it." % "; ".join(errors))


lib = _load()
_vp = ctypes.c_void_p
_P = ctypes.POINTER

lib.gp_options_init.argtypes = [_P(_Options)]
lib.gp_options_init.restype = None
lib.gp_open.argtypes = [_P(_Options), _P(_vp)]
lib.gp_close.argtypes = [_vp]
lib.gp_close.restype = None
lib.gp_last_error.argtypes = [_vp]
lib.gp_last_error.restype = ctypes.c_char_p
lib.gp_strerror.argtypes = [ctypes.c_int]
lib.gp_strerror.restype = ctypes.c_char_p
lib.gp_info.argtypes = [_vp, _P(_Info)]
lib.gp_host_alloc.argtypes = [_vp, ctypes.c_size_t, ctypes.c_uint, _P(_vp)]
lib.gp_host_free.argtypes = [_vp, _vp]
lib.gp_host_export.argtypes = [_vp, _vp, _P(ctypes.c_int)]
lib.gp_host_import.argtypes = [_vp, ctypes.c_int, _P(_vp),
                               _P(ctypes.c_size_t)]
lib.gp_host_trim.argtypes = [_vp, _P(ctypes.c_uint64)]
lib.gp_host_stats.argtypes = [_vp, _P(_HostStats)]
for _f in ("gp_open", "gp_info", "gp_host_alloc", "gp_host_free",
           "gp_host_export", "gp_host_import", "gp_host_trim",
           "gp_host_stats"):
    getattr(lib, _f).restype = ctypes.c_int


def check(ret, ctx, what):
    """Raise GpupoolError for a negative errno return, with the message."""
    if ret >= 0:
        return ret
    msg = lib.gp_last_error(ctx) or b""
    msg = msg.decode(errors="replace") or lib.gp_strerror(ret).decode()
    err = -ret
    raise GpupoolError(err, "%s: %s (%s)" % (what, msg,
                                             errno.errorcode.get(err, err)))
