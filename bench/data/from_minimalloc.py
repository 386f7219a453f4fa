#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
"""Convert a MiniMalloc instance (google/minimalloc, benchmarks/*/X.1048576.csv:
`buffer,start,end,size`, each buffer live over [start, end)) into this
directory's trace format: an allocation at start and a free at end, events in
time order, frees before allocations at the same time, buffers in their order
within each; ids numbered in order of allocation.  It reproduces
minimalloc_A.csv from benchmarks/asplos2024/A.1048576.csv byte for byte.

    bench/data/from_minimalloc.py X.1048576.csv > minimalloc_X.csv
"""
import sys

HEADER = ("# a,<id>,<size_bytes>,<stream or empty>,<t>  |  f,<id>,<t>   "
          "(t = microseconds since first event; for minimalloc: abstract "
          "time units)")


def convert(lines):
    events = []
    for line in lines[1:]:
        if line.strip():
            buf, start, end, size = map(int, line.split(","))
            events.append((start, 1, buf, size))
            events.append((end, 0, buf, size))
    events.sort()
    ids, out = {}, [HEADER]
    for t, alloc, buf, size in events:
        if alloc:
            ids[buf] = len(ids)
            out.append("a,%d,%d,,%d" % (ids[buf], size, t))
        else:
            out.append("f,%d,%d" % (ids[buf], t))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: from_minimalloc.py X.1048576.csv > trace.csv")
    with open(sys.argv[1]) as f:
        sys.stdout.write(convert(f.read().split("\n")))
