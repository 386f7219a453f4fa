#!/usr/bin/python3
"""Run the gpupool Python tests (unittest) and report like kselftest, so
that scripts/run-tests.sh (host) and vm/vmreport.py (VM) count them:
`ok N name` / `not ok N name` lines and a closing
`# Totals: pass:N fail:N xfail:0 xpass:0 skip:N error:0`.

Uses Debian's /usr/bin/python3 (numpy); the library comes from
$GPUPOOL_LIBRARY or the checkout's build/userlib.
"""
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))      # the package, from the checkout
sys.dont_write_bytecode = True                  # the VM's root is read-only


class Result(unittest.TextTestResult):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.n = 0
        self.counts = {"pass": 0, "fail": 0, "skip": 0}
        self.started = time.monotonic()

    def startTest(self, test):
        super().startTest(test)
        self.started = time.monotonic()

    def _line(self, ok, test, extra=""):
        self.n += 1
        print("%s %d %s%s" % ("ok" if ok else "not ok", self.n, test.id(),
                              extra), flush=True)
        # Where a suite's time goes (a VM under TCG runs it 10-50x slower
        # than the host): a diagnostic line for every test of 1 s or more.
        took = time.monotonic() - self.started
        if took >= 1:
            print("# %s: %.1f s" % (test.id(), took), flush=True)

    def addSuccess(self, test):
        super().addSuccess(test)
        self.counts["pass"] += 1
        self._line(True, test)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.counts["fail"] += 1
        self._line(False, test)

    def addError(self, test, err):
        super().addError(test, err)
        self.counts["fail"] += 1
        self._line(False, test)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.counts["skip"] += 1
        self._line(True, test, " # SKIP " + reason)


def main():
    # GPUPOOL_PY_TESTS: which test files (a glob; the VM runs test_torch.py
    # on its own).
    pattern = os.environ.get("GPUPOOL_PY_TESTS", "test_*.py")
    t0 = time.monotonic()
    suite = unittest.defaultTestLoader.discover(HERE, pattern=pattern)
    print("TAP version 13\n1..%d" % suite.countTestCases(), flush=True)
    t1 = time.monotonic()
    runner = unittest.TextTestRunner(resultclass=Result, stream=sys.stderr,
                                     verbosity=0)
    r = runner.run(suite)
    print("# importing the tests: %.1f s; running them: %.1f s"
          % (t1 - t0, time.monotonic() - t1), flush=True)
    c = r.counts
    print("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0"
          % (c["pass"], c["fail"], c["skip"]), flush=True)
    return 1 if c["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
