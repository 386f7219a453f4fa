#!/usr/bin/env python3
"""Extract the uncompressed vmlinux ELF from an x86 bzImage, for qemu's PVH
direct boot (-kernel vmlinux).  Under TCG that skips the firmware's slow
kernel loading and the in-guest decompression: measured here, the first
kernel message comes after ~1 s instead of 5-14 s.

Usage: extract-vmlinux.py BZIMAGE OUT
Exit 0: OUT written and it has a PVH entry point (Xen ELF note
XEN_ELFNOTE_PHYS32_ENTRY).  Exit 3: no usable PVH vmlinux (unknown
compression, or CONFIG_PVH off): boot the bzImage instead.
"""
import bz2
import gzip
import lzma
import os
import shutil
import struct
import subprocess
import sys

XEN_ELFNOTE_PHYS32_ENTRY = 18


def payload(img):
    """The compressed kernel, located through the boot protocol header."""
    if img[0x202:0x206] != b"HdrS":
        raise ValueError("not a bzImage")
    setup_sects = img[0x1f1] or 4
    off, length = struct.unpack_from("<II", img, 0x248)
    start = (setup_sects + 1) * 512 + off
    return img[start:start + length]


def decompress(data):
    if data.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMADecompressor().decompress(data)
    if data.startswith(b"\x1f\x8b"):
        return gzip.decompress(data)
    if data.startswith(b"BZh"):
        return bz2.decompress(data)
    if data.startswith(b"\x5d\x00\x00"):
        return lzma.LZMADecompressor(format=lzma.FORMAT_ALONE).decompress(data)
    for magic, tool in ((b"\x28\xb5\x2f\xfd", "zstd"),
                        (b"\x02\x21\x4c\x18", "lz4")):
        if data.startswith(magic):
            if not shutil.which(tool):
                raise ValueError("%s needed to decompress this kernel" % tool)
            # The kernel's image carries a 4-byte size trailer; the tools
            # stop at the end of the frame.
            r = subprocess.run([tool, "-dc"], input=data, capture_output=True)
            if not r.stdout:
                raise ValueError("%s failed: %s" % (tool, r.stderr.decode()))
            return r.stdout
    raise ValueError("unknown compression (magic %s)" % data[:4].hex())


def has_pvh_note(elf):
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        return False
    e_phoff, = struct.unpack_from("<Q", elf, 0x20)
    e_phentsize, e_phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(e_phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", elf, e_phoff + i * e_phentsize)
        if p_type != 4:		# PT_NOTE
            continue
        pos, end = p_offset, p_offset + p_filesz
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, pos)
            name = elf[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and ntype == XEN_ELFNOTE_PHYS32_ENTRY:
                return True
            pos += 12 + ((namesz + 3) & ~3) + ((descsz + 3) & ~3)
    return False


def main():
    src, out = sys.argv[1], sys.argv[2]
    with open(src, "rb") as f:
        img = f.read()
    try:
        elf = decompress(payload(img))
    except (ValueError, EOFError, OSError, lzma.LZMAError) as e:
        print("extract-vmlinux: %s: %s" % (src, e), file=sys.stderr)
        return 3
    if not has_pvh_note(elf):
        print("extract-vmlinux: %s: no PVH entry (CONFIG_PVH off?)" % src,
              file=sys.stderr)
        return 3
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(elf)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
