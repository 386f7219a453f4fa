#!/usr/bin/env python3
"""Host-side self-test of vm/vmreport.py, the VM suite's judge: synthetic
test and kernel logs (pass, test failure, WARN/lockdep/KASAN/UBSAN/GPF/
refcount/list corruption/hung task splats inside and outside tests, panic,
VM timeout, per-test timeout, kmemleak reports, skips) must give the right
counts, blame and exit status.  No VM needed: runs in a fraction of a second.

Usage: vm/selftest-vmreport.py [--counts FILE]
Prints TAP and `vmreport-selftest: N passed, N failed, 0 skipped`; exit 1 on
any failure.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOT = "# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0"


def tlog(*tests, done=True, plan=None):
    """tests: (name, output lines, rc or None for 'never ended')."""
    names = plan or [t[0] for t in tests]
    out = ["# gpupool-vm: runner start uptime=3.00 kernel=x", "TAP version 13",
           "1..%d" % len(names), "# gpupool-vm: plan " + " ".join(names)]
    for i, (name, lines, rc) in enumerate(tests, 1):
        out.append("# gpupool-test: begin " + name)
        out.extend(lines)
        if rc is None:
            break
        out.append("# gpupool-test: end %s rc=%d secs=0.50" % (name, rc))
        out.append(("ok %d %s" if rc == 0 else "not ok %d %s") % (i, name))
    if done:
        out.append("# gpupool-vm: done uptime=9.00")
    return "\n".join(out) + "\n"


def klog(*chunks):
    """chunks: ('begin', name) | ('end', name) | list of message lines."""
    out, t = [], 1.0
    for c in chunks:
        msgs = ["gpupool-test: %s %s" % c] if isinstance(c, tuple) else c
        for m in msgs:
            out.append("[%12.6f] %s" % (t, m))
            t += 0.001
    return "\n".join(out) + "\n"


WARN = ["------------[ cut here ]------------",
        "WARNING: CPU: 0 PID: 160 at kmod/pool.c:3 gp_fn+0x5/0x10 [gpupool]",
        "Modules linked in: gpupool(OE)", "Call Trace:", " <TASK>",
        " do_one_initcall+0x59/0x220", " </TASK>",
        "---[ end trace 0000000000000000 ]---"]
LOCKDEP = ["======================================================",
           "WARNING: possible circular locking dependency detected",
           "6.1.0 #1 Not tainted",
           "------------------------------------------------------",
           "t/123 is trying to acquire lock:", " *** DEADLOCK ***"]
KASAN = ["==================================================================",
         "BUG: KASAN: slab-use-after-free in gp_chunk_put+0x1/0x2 [gpupool]",
         "Read of size 8 at addr ffff888000000000 by task t/1",
         "=================================================================="]
UBSAN = ["UBSAN: shift-out-of-bounds in kmod/pool.c:10:5",
         "shift exponent 64 is too large for 64-bit type"]
GPF = ["general protection fault, probably for non-canonical address 0xdead: 0000 [#1] SMP",
       "RIP: 0010:gp_fn+0x1/0x2 [gpupool]"]
REFCOUNT = ["refcount_t: underflow; use-after-free.",
            "WARNING: CPU: 1 PID: 5 at lib/refcount.c:28 refcount_warn_saturate+0x1/0x2"]
LISTADD = ["list_add corruption. prev->next should be next (ffff1), but was ffff2."]
HUNG = ["INFO: task t:123 blocked for more than 60 seconds.",
        "      Tainted: G           OE      6.1.0 #1"]
PANIC = ["Kernel panic - not syncing: sysrq triggered crash", "Kernel Offset: disabled"]
BENIGN = ["gpupool: loaded: 16 MiB on 1 node(s)", "gpupool: unloaded",
          "module verification failed: signature and/or required key missing - tainting kernel",
          "ACPI Warning: something harmless-looking", "warn: lowercase is fine"]

P3 = [TOT % (3, 0, 0)]


def case(name, tests, kernel, want_counts, want_rc, qemu_rc=0,
         kmemleak=None, want_in_output=()):
    return dict(name=name, tests=tests, kernel=kernel, counts=want_counts,
                rc=want_rc, qemu_rc=qemu_rc, kmemleak=kmemleak or {},
                want=want_in_output)


CASES = [
    case("clean pass", tlog(("a", P3, 0)),
         klog(BENIGN, ("begin", "a"), BENIGN, ("end", "a")),
         "pass=3 fail=0 skip=0", 0),
    case("failing TEST", tlog(("a", ["# a.c:3:x:Expected 1 (1) == 2 (2)",
                                      "not ok 2 global.x", TOT % (2, 1, 0)], 1)),
         klog(("begin", "a"), ("end", "a")),
         "pass=2 fail=1 skip=0", 1, want_in_output=["Expected 1"]),
    case("WARN blamed on the test around it",
         tlog(("a", P3, 0), ("b", P3, 0), ("c", P3, 0)),
         klog(("begin", "a"), ("end", "a"), ("begin", "b"), WARN, ("end", "b"),
              ("begin", "c"), ("end", "c")),
         "pass=9 fail=1 skip=0", 1,
         want_in_output=["not ok 2 b", "kernel splat blamed on b", "ok 1 a", "ok 3 c"]),
    case("lockdep", tlog(("a", P3, 0)),
         klog(("begin", "a"), LOCKDEP, ("end", "a")), "pass=3 fail=1 skip=0", 1,
         want_in_output=["blamed on a", "circular locking"]),
    case("KASAN", tlog(("a", P3, 0)),
         klog(("begin", "a"), KASAN, ("end", "a")), "pass=3 fail=1 skip=0", 1,
         want_in_output=["BUG: KASAN"]),
    case("UBSAN", tlog(("a", P3, 0)),
         klog(("begin", "a"), UBSAN, ("end", "a")), "pass=3 fail=1 skip=0", 1),
    case("GPF", tlog(("a", P3, 0)),
         klog(("begin", "a"), GPF, ("end", "a")), "pass=3 fail=1 skip=0", 1),
    case("refcount_t", tlog(("a", P3, 0)),
         klog(("begin", "a"), REFCOUNT, ("end", "a")), "pass=3 fail=1 skip=0", 1),
    case("list_add corruption", tlog(("a", P3, 0)),
         klog(("begin", "a"), LISTADD, ("end", "a")), "pass=3 fail=1 skip=0", 1),
    case("hung task", tlog(("a", P3, 0)),
         klog(("begin", "a"), HUNG, ("end", "a")), "pass=3 fail=1 skip=0", 1),
    case("two splats in one test count once",
         tlog(("a", P3, 0)),
         klog(("begin", "a"), WARN, KASAN, ("end", "a")), "pass=3 fail=1 skip=0", 1,
         want_in_output=["2 kernel splats"]),
    case("splat between tests names the test before",
         tlog(("a", P3, 0), ("b", P3, 0)),
         klog(("begin", "a"), ("end", "a"), WARN, ("begin", "b"), ("end", "b")),
         "pass=6 fail=1 skip=0", 1, want_in_output=["blamed on (after a)", "ok 1 a"]),
    case("splat at boot", tlog(("a", P3, 0)),
         klog(WARN, ("begin", "a"), ("end", "a")), "pass=3 fail=1 skip=0", 1,
         want_in_output=["blamed on (boot)"]),
    case("panic during a test; the rest never ran",
         tlog(("a", P3, 0), ("b", ["about to crash"], None), done=False,
              plan=["a", "b", "c"]),
         klog(("begin", "a"), ("end", "a"), ("begin", "b"), PANIC),
         "pass=3 fail=3 skip=0", 1, qemu_rc=0,
         want_in_output=["not ok 2 b", "was running when the VM stopped",
                         "not ok 3 c", "not run"]),
    case("VM timeout names the running test",
         tlog(("a", ["hanging"], None), done=False, plan=["a", "b"]),
         klog(("begin", "a")), "pass=0 fail=2 skip=0", 1, qemu_rc=124,
         want_in_output=["VM killed after", "was running when the VM stopped"]),
    case("per-test timeout without Totals",
         tlog(("a", ["hanging", "# gpupool-vm: a timed out after 5s"], 124),
              ("b", P3, 0)),
         klog(("begin", "a"), ("end", "a"), ("begin", "b"), ("end", "b")),
         "pass=3 fail=1 skip=0", 1, want_in_output=["timed out"]),
    case("crash without Totals (signal)",
         tlog(("a", ["Segmentation fault"], 139)),
         klog(("begin", "a"), ("end", "a")), "pass=0 fail=1 skip=0", 1),
    case("non-zero exit with clean Totals",
         tlog(("a", P3, 2)), klog(("begin", "a"), ("end", "a")),
         "pass=3 fail=1 skip=0", 1),
    case("skips", tlog(("a", [TOT % (1, 0, 2)], 0), ("b", ["no ksft"], 4)),
         klog(), "pass=1 fail=0 skip=3", 0),
    case("kmemleak at the end", tlog(("a", P3, 0)),
         klog(("begin", "a"), ("end", "a")), "pass=3 fail=1 skip=0", 1,
         kmemleak={"end": "unreferenced object 0xffff8880 (size 64):\n"
                          "  comm \"insmod\", pid 1, jiffies 1\n"
                          "unreferenced object 0xffff8881 (size 64):\n"},
         want_in_output=["blamed on kmemleak", "unreferenced object"]),
    case("kmemleak at the end blamed on the allocating test by comm",
         tlog(("a_long_test_name_x", P3, 0), ("b", P3, 0)),
         klog(("begin", "a_long_test_name_x"), ("end", "a_long_test_name_x"),
              ("begin", "b"), ("end", "b")),
         "pass=6 fail=1 skip=0", 1,
         kmemleak={"end": "unreferenced object 0xffff8880 (size 64):\n"
                          "  comm \"a_long_test_nam\", pid 1, jiffies 1\n"},
         want_in_output=["not ok 1 a_long_test_name_x", "ok 2 b"]),
    case("kmemleak after one test", tlog(("a", P3, 0), ("b", P3, 0)),
         klog(("begin", "a"), ("end", "a"), ("begin", "b"), ("end", "b")),
         "pass=6 fail=1 skip=0", 1,
         kmemleak={"b": "unreferenced object 0xffff8880 (size 64):\n"},
         want_in_output=["not ok 2 b"]),
    case("guest setup failure", "# gpupool-vm: FATAL: cannot mount the host root\n",
         klog(), "pass=0 fail=1 skip=0", 1, want_in_output=["FATAL"]),
    case("no tests at all is a failure", tlog(), klog(), "pass=0 fail=1 skip=0", 1,
         want_in_output=["no test programs"]),
]


def run(c, d):
    os.makedirs(os.path.join(d, "scratch"))
    with open(os.path.join(d, "tests.log"), "w") as f:
        f.write(c["tests"])
    with open(os.path.join(d, "console.log"), "w") as f:
        f.write(c["kernel"])
    for label, text in c["kmemleak"].items():
        with open(os.path.join(d, "scratch", "kmemleak-%s.txt" % label), "w") as f:
            f.write(text)
    counts = os.path.join(d, "out.counts")
    r = subprocess.run([sys.executable, os.path.join(HERE, "vmreport.py"),
                        "--name", "selftest", "--console",
                        os.path.join(d, "console.log"), "--tests-log",
                        os.path.join(d, "tests.log"), "--scratch",
                        os.path.join(d, "scratch"), "--qemu-rc",
                        str(c["qemu_rc"]), "--timeout", "25", "--counts", counts],
                       capture_output=True, text=True)
    problems = []
    got = open(counts).read().strip() if os.path.exists(counts) else None
    if got != c["counts"]:
        problems.append("counts %r, want %r" % (got, c["counts"]))
    if r.returncode != c["rc"]:
        problems.append("exit %d, want %d" % (r.returncode, c["rc"]))
    for w in c["want"]:
        if w not in r.stdout:
            problems.append("output lacks %r" % w)
    return problems, r.stdout + r.stderr


def main():
    counts = None
    if len(sys.argv) == 3 and sys.argv[1] == "--counts":
        counts = sys.argv[2]
    passed = failed = 0
    print("TAP version 13\n1..%d" % len(CASES))
    for i, c in enumerate(CASES, 1):
        with tempfile.TemporaryDirectory() as d:
            problems, out = run(c, d)
        if problems:
            failed += 1
            print("not ok %d %s # %s" % (i, c["name"], "; ".join(problems)))
            print("\n".join("#   " + x for x in out.splitlines()))
        else:
            passed += 1
            print("ok %d %s" % (i, c["name"]))
    if counts:
        with open(counts, "w") as f:
            f.write("pass=%d fail=%d skip=0\n" % (passed, failed))
    print("vmreport-selftest: %d passed, %d failed, 0 skipped" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
