#!/usr/bin/env python3
"""Judge one VM test run: the test output (TAP stream from vm/guest-run.sh on
ttyS1) and the kernel log (serial console, ttyS0).

- Each test program counts by its kselftest "# Totals:" line (pass+xfail ->
  passed, fail+xpass+error -> failed, skip -> skipped).  A program with no
  Totals line (crashed, timed out, killed with the VM) counts as 1 failure; a
  non-zero exit status with no failure in its Totals adds 1 failure.
- Kernel splats (BUG:, WARNING:, Oops, lockdep, KASAN, UBSAN, kmemleak, GPF,
  panic, refcount_t, list corruption, hung task, RCU stall) are blamed on the
  test whose begin/end markers surround them in the kernel log and add 1
  failure to that test; outside any test they count as 1 failure of a
  pseudo-test ("(boot)", "(after NAME)" for one between NAME's end and the
  next begin, e.g. from a worker NAME left behind, "kmemleak").
- A VM that did not reach "gpupool-vm: done" fails the test that was running
  (the last begin marker without its end); programs that never started count
  as 1 failure each.

Writes the counts file ("pass=N fail=N skip=N"), prints a readable log and
the line "vm NAME: N passed, N failed, N skipped".  Exit 0 when nothing
failed, else 1.
"""
import argparse
import os
import re
import sys

SPLAT = re.compile(
    r"BUG:|WARNING:|\bOops\b|possible circular locking|"
    r"possible recursive locking|inconsistent lock state|"
    r"INFO: .*lock|UBSAN:|unreferenced object|general protection fault|"
    r"Kernel panic|refcount_t:|list_add corruption|list_del corruption|"
    r"kernel BUG at|INFO: task .* blocked for more than|"
    r"detected stalls on CPUs|rcu_.* self-detected stall")
END_SPLAT = re.compile(r"---\[ end |^=+$")
TS = re.compile(r"^\[\s*\d+\.\d+\]\s?")
BEGIN = re.compile(r"gpupool-test: begin (\S+)")
END = re.compile(r"gpupool-test: end (\S+)")
TOTALS = re.compile(r"# Totals: pass:(\d+) fail:(\d+) xfail:(\d+) "
                    r"xpass:(\d+) skip:(\d+) error:(\d+)")
SPLAT_LINES = 60
COMM = re.compile(r'^\s*comm "([^"]*)", pid')
INTERESTING = re.compile(r"^not ok|FAIL|[Ee]xpected|Assertion|terminated|"
                         r"Test failed|timed out|timeout")


def read(path):
    try:
        with open(path, "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return []
    return [ln.rstrip("\r") for ln in data.replace("\r\n", "\n").split("\n")]


class Test:
    def __init__(self, name):
        self.name = name
        self.started = False
        self.ended = False
        self.rc = None
        self.secs = None
        self.totals = None
        self.output = []
        self.splats = []
        self.notes = []


def parse_tests(lines):
    plan, tests, done, fatal = [], {}, False, []
    cur = None
    for ln in lines:
        if ln.startswith("# gpupool-vm: plan"):
            plan = ln.split()[3:]
            for n in plan:
                tests[n] = Test(n)
        elif ln.startswith("# gpupool-vm: done"):
            done = True
        elif ln.startswith("# gpupool-vm: FATAL"):
            fatal.append(ln[2:])
        elif ln.startswith("# gpupool-test: begin "):
            n = ln.split()[3]
            cur = tests.setdefault(n, Test(n))
            cur.started = True
        elif ln.startswith("# gpupool-test: end "):
            f = ln.split()
            t = tests.setdefault(f[3], Test(f[3]))
            t.ended = True
            for kv in f[4:]:
                k, _, v = kv.partition("=")
                if k == "rc":
                    t.rc = int(v) if v.isdigit() else 255
                elif k == "secs":
                    t.secs = v
            cur = None
        elif cur is not None:
            cur.output.append(ln)
            m = TOTALS.search(ln)
            if m:
                cur.totals = [int(x) for x in m.groups()]
    return plan, tests, done, fatal


def parse_kernel(lines):
    """Return [(context, [lines])]: splats with the test running then."""
    splats = []
    ctx = "(boot)"
    i = 0
    while i < len(lines):
        msg = TS.sub("", lines[i])
        m = BEGIN.search(msg)
        if m:
            ctx = m.group(1)
            i += 1
            continue
        m = END.search(msg)
        if m:
            ctx = "(after %s)" % m.group(1)
            i += 1
            continue
        if "gpupool-vm: done" in msg:
            ctx = "(after tests)"
        if SPLAT.search(msg):
            block = [lines[i]]
            j = i + 1
            while j < len(lines) and len(block) < SPLAT_LINES:
                nm = TS.sub("", lines[j])
                if BEGIN.search(nm) or END.search(nm):
                    break
                block.append(lines[j])
                j += 1
                if END_SPLAT.search(nm) and len(block) > 2:
                    break
            splats.append((ctx, block))
            i = j
            continue
        i += 1
    return splats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--console", required=True)
    ap.add_argument("--tests-log", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--qemu-rc", type=int, default=0)
    ap.add_argument("--timeout", default="?")
    ap.add_argument("--counts", required=True)
    ap.add_argument("--timing", default="")
    a = ap.parse_args()

    plan, tests, done, fatal = parse_tests(read(a.tests_log))
    klines = read(a.console)
    splats = parse_kernel(klines)

    # kmemleak reports the runner saved: kmemleak-NAME.txt (after test NAME)
    # or kmemleak-end.txt (after all tests).
    try:
        files = sorted(os.listdir(a.scratch))
    except FileNotFoundError:
        files = []
    for fn in files:
        if not (fn.startswith("kmemleak-") and fn.endswith(".txt")):
            continue
        label = fn[len("kmemleak-"):-len(".txt")]
        ctx = "kmemleak" if label == "end" else label
        cur = None
        for ln in read(os.path.join(a.scratch, fn)):
            if "unreferenced object" in ln:
                cur = [ln]
                splats.append([ctx, cur])
            elif cur is not None and ln.strip():
                cur.append(ln)
                # After the whole run, blame the test whose process made
                # the allocation, when its comm (15 chars) names one.
                m = COMM.search(ln)
                if m and label == "end":
                    for n in tests:
                        if n[:15] == m.group(1):
                            splats[-1][0] = n

    extra = {}   # pseudo-tests: name -> Test
    for ctx, block in splats:
        t = tests.get(ctx)
        if t is None:
            t = extra.setdefault(ctx, Test(ctx))
            t.started = t.ended = True
        t.splats.append(block)

    timed_out = a.qemu_rc in (124, 137)
    vm_problem = None
    if fatal:
        vm_problem = "; ".join(fatal)
    elif timed_out:
        vm_problem = "VM killed after %ss (--timeout)" % a.timeout
    elif not done:
        vm_problem = "VM ended before the runner finished (panic or crash?)"
    elif not plan and not tests:
        vm_problem = "no test programs selected (empty tests directory or --filter)"

    P = F = S = 0
    out = []
    out.append("# ---- vm %s: results ----" % a.name)
    order = plan + [n for n in tests if n not in plan] + list(extra)
    num = 0
    for n in order:
        t = tests.get(n) or extra[n]
        num += 1
        reasons = []
        p = f = s = 0
        if not t.started:
            f = 1
            reasons.append("not run: " + (vm_problem or "runner stopped"))
        elif t.totals is not None:
            tp, tf, txf, txp, ts, te = t.totals
            p, f, s = tp + txf, tf + txp + te, ts
            if f:
                reasons.append("%d failed" % f)
            if t.rc not in (None, 0, 4) and f == 0:
                f += 1
                reasons.append("exit status %s" % t.rc)
        elif n in extra:
            pass
        else:
            f = 1
            if not t.ended:
                reasons.append("was running when the VM stopped: " +
                               (vm_problem or "?"))
            elif t.rc == 124:
                reasons.append("timed out (--test-timeout)")
            elif t.rc == 4:
                f, s = 0, 1
                reasons.append("SKIP")
            else:
                reasons.append("no kselftest Totals line, exit status %s"
                               % t.rc)
        if t.splats:
            f += 1
            reasons.append("%d kernel splat%s" %
                           (len(t.splats), "s" if len(t.splats) > 1 else ""))
        P, F, S = P + p, F + f, S + s
        ok = "ok" if f == 0 else "not ok"
        detail = "pass:%d fail:%d skip:%d" % (p, f, s)
        if t.secs:
            detail += ", %ss" % t.secs
        line = "%s %d %s (%s)" % (ok, num, n, detail)
        if reasons:
            line += " # " + "; ".join(reasons)
        out.append(line)
        if f and t.output:
            if t.totals is None:
                head = "last output of"
                shown = t.output[-15:]
            else:
                head = "failures in"
                shown = [x for x in t.output if INTERESTING.search(x)][:40]
            while shown and not shown[-1].strip():
                shown.pop()
            if shown:
                out.append("#   %s %s:" % (head, n))
                out.extend("#   | " + x for x in shown)
        for block in t.splats:
            out.append("#   kernel splat blamed on %s:" % n)
            out.extend("#   | " + x for x in block)

    if vm_problem:
        out.append("# VM: " + vm_problem)
        if not done and not splats:
            out.append("#   last kernel log lines:")
            out.extend("#   | " + x for x in [l for l in klines if l][-25:])
        F = max(F, 1)
    if a.timing:
        out.append("# timing: " + a.timing)
    print("\n".join(out))
    os.makedirs(os.path.dirname(os.path.abspath(a.counts)), exist_ok=True)
    with open(a.counts, "w") as f:
        f.write("pass=%d fail=%d skip=%d\n" % (P, F, S))
    print("vm %s: %d passed, %d failed, %d skipped" % (a.name, P, F, S))
    return 1 if F or vm_problem else 0


if __name__ == "__main__":
    sys.exit(main())
