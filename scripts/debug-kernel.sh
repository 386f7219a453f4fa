#!/bin/sh
# The debug kernel of the test matrix (Linux 7.2, x86_64, with KASAN,
# lockdep, kmemleak, UBSAN, fault injection and dmem): scripts/test-kernel.sh
# debug, which says how it is built and cached.
# Usage: scripts/debug-kernel.sh [--hold PID] [DIR [TARBALL]]
exec "$(dirname "$0")/test-kernel.sh" debug "$@"
