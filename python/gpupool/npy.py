"""The header of a .npy file, read without numpy (format versions 1.0, 2.0
and 3.0): where the array's bytes start, its dtype and shape.

    h = gpupool.npy.read_header("shard-000.npy")
    h.offset, h.descr, h.shape, h.itemsize

Only what can be read straight into memory as it lies in the file is taken:
C order (fortran_order False), little-endian (or one-byte) numeric dtypes.
Object, structured, string and big-endian dtypes are refused with NpyError.
"""
import ast
import os
import struct

MAGIC = b"\x93NUMPY"

# descr without its byte-order character -> item size in bytes
_KINDS = {
    "b1": 1, "u1": 1, "i1": 1, "i2": 2, "i4": 4, "i8": 8, "u2": 2, "u4": 4,
    "u8": 8, "f2": 2, "f4": 4, "f8": 8, "c8": 8, "c16": 16,
}


class NpyError(ValueError):
    """A .npy file that cannot be read as records."""


class NpyHeader:
    """path, offset (of the data), descr ('<f4', '|u1', ...), code ('f4'),
    itemsize, shape, nbytes (of the data)."""
    __slots__ = ("path", "offset", "descr", "code", "itemsize", "shape",
                 "nbytes")

    def __init__(self, path, offset, descr, code, itemsize, shape):
        self.path, self.offset = path, offset
        self.descr, self.code, self.itemsize = descr, code, itemsize
        self.shape = shape
        n = itemsize
        for s in shape:
            n *= s
        self.nbytes = n

    def __repr__(self):
        return "NpyHeader(%r, offset=%d, descr=%r, shape=%r)" % (
            self.path, self.offset, self.descr, self.shape)


def _fail(path, why):
    raise NpyError("gpupool.npy: %s: %s" % (path, why))


def read_header(path):
    """The NpyHeader of the .npy file at path; NpyError if it is not one
    this module reads (truncated, Fortran order, object dtype, ...)."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        head = f.read(12)
        if len(head) < 10 or head[:6] != MAGIC:
            _fail(path, "not a .npy file (no \\x93NUMPY magic)")
        major, minor = head[6], head[7]
        if (major, minor) == (1, 0):
            (hlen,), start = struct.unpack("<H", head[8:10]), 10
        elif (major, minor) in ((2, 0), (3, 0)):
            if len(head) < 12:
                _fail(path, "truncated header")
            (hlen,), start = struct.unpack("<I", head[8:12]), 12
        else:
            _fail(path, "format version %d.%d (this reads 1.0, 2.0, 3.0)"
                  % (major, minor))
        f.seek(start)
        raw = f.read(hlen)
        size = os.fstat(f.fileno()).st_size
    if len(raw) < hlen:
        _fail(path, "truncated header (%d of %d bytes)" % (len(raw), hlen))
    try:
        text = raw.decode("utf8" if major == 3 else "latin1")
        d = ast.literal_eval(text)
    except (UnicodeDecodeError, ValueError, SyntaxError) as e:
        _fail(path, "header is not a Python literal (%s)" % e)
    if not isinstance(d, dict) or \
            not {"descr", "fortran_order", "shape"} <= set(d):
        _fail(path, "header lacks descr, fortran_order or shape: %r" % (d,))
    descr, fortran, shape = d["descr"], d["fortran_order"], d["shape"]
    if fortran is not False:
        _fail(path, "fortran_order is %r: only C-order arrays are read "
              "(save with numpy.ascontiguousarray)" % (fortran,))
    if not isinstance(descr, str):
        _fail(path, "structured dtype %r is not read (one numeric dtype "
              "only)" % (descr,))
    if not isinstance(shape, tuple) or \
            not all(isinstance(s, int) and s >= 0 for s in shape):
        _fail(path, "bad shape %r" % (shape,))
    if descr[:1] not in ("<", "|", ">", "=") or len(descr) < 2:
        _fail(path, "dtype %r is not a numeric dtype" % descr)
    order, code = descr[0], descr[1:]
    if code.startswith("O"):
        _fail(path, "object dtype %r: objects are pickles, not records"
              % descr)
    if code not in _KINDS:
        _fail(path, "dtype %r is not read (bool, int, uint, float, complex "
              "only)" % descr)
    itemsize = _KINDS[code]
    if order == ">" and itemsize > 1:
        _fail(path, "big-endian dtype %r: only little-endian data is read "
              "(convert with arr.astype(arr.dtype.newbyteorder('<')))"
              % descr)
    h = NpyHeader(path, start + hlen, descr, code, itemsize, shape)
    if size < h.offset + h.nbytes:
        _fail(path, "truncated: %d bytes of data, the header says %d"
              % (max(0, size - h.offset), h.nbytes))
    return h
