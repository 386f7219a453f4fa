#!/usr/bin/python3
"""The CDI spec gpupoolctl writes, validated against the CDI JSON schema the
tree carries (packaging/cdi/schema/, Debian's python3-jsonschema), and
checked for what that schema leaves open: the kind's and the device's
names as the CDI spec words them, the device node (/dev/gpupool, a
character device, read-write, the mode and group of the node it was made
from), the environment, no field newer than the spec's cdiVersion (the CDI
library refuses those) and no field the spec does not define (it refuses
those too; the schema lets them through).

Usage:
  scripts/cdi-check.py [--counts FILE] [--ctl GPUPOOLCTL]
      the test cases below, each one TAP line, on fixtures: /dev/null and
      another character device stand in for /dev/gpupool
      (GPUPOOL_DEV_PATH); default gpupoolctl: $O/tools/gpupoolctl, else
      build/tools/gpupoolctl
  scripts/cdi-check.py --file SPEC [--dev NODE | --packaged]
      one spec file (the one the package installs): 0 when it passes,
      checked against NODE's stat when given, or with --packaged against
      the packaged setup's node (root, group gpupool, mode 0660)
"""
import json
import os
import re
import stat
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    sys.exit("cdi-check: no jsonschema for %s (make deps: python3-jsonschema)"
             % sys.executable)

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_DIR = os.path.join(TOP, "packaging", "cdi", "schema")
KIND = "gpupool.io/pool"
NODE = "/dev/gpupool"
PODMAN_43_NEWEST = (0, 5, 0)    # Debian 12's podman (CDI library 0.5.2)

# The fields each object may have, and the spec version that added those
# newer than 0.3.0 (SPEC.md's table of released versions).
FIELDS = {
    "spec": {"cdiVersion", "kind", "annotations", "devices",
             "containerEdits"},
    "device": {"name", "annotations", "containerEdits"},
    "edits": {"env", "deviceNodes", "mounts", "hooks", "intelRdt",
              "additionalGids", "netDevices"},
    "node": {"path", "hostPath", "type", "major", "minor", "fileMode",
             "permissions", "uid", "gid"},
    "mount": {"hostPath", "containerPath", "options", "type"},
}
# The devices, and each one's interposer mode (None: no interposer): the
# interposer's two are there where gpupoolctl found the library.
DEVICES = {"default": None, "interpose": "strict",
           "interpose-fallback": "fallback"}
SINCE = {"hostPath": (0, 5, 0), "annotations": (0, 6, 0),
         "intelRdt": (0, 7, 0), "additionalGids": (0, 7, 0),
         "netDevices": (1, 1, 0)}
LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
NAME = r"[A-Za-z0-9]([-_.A-Za-z0-9]*[A-Za-z0-9])?"


def validator():
    with open(os.path.join(SCHEMA_DIR, "schema.json")) as f:
        schema = json.load(f)
    base = "file://%s/" % SCHEMA_DIR
    resolver = jsonschema.RefResolver(base_uri=base, referrer=schema)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, resolver=resolver)


def version(v):
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", v or "")
    return tuple(int(x) for x in m.groups()) if m else None


def problems(spec, val, node=None, want_version=None):
    """What is wrong with spec (a parsed JSON document): a list of strings.
    node: the stat of the device node it describes (mode, uid, gid)."""
    out = ["schema: %s (at %s)" % (e.message, "/".join(map(str, e.path)))
           for e in val.iter_errors(spec)]
    if out or not isinstance(spec, dict):
        return out or ["not an object"]
    ver = version(spec.get("cdiVersion"))
    if not ver:
        return ["cdiVersion %r is not X.Y.Z" % spec.get("cdiVersion")]
    if want_version and ver != want_version:
        out.append("cdiVersion %s, wanted %s" % (spec["cdiVersion"],
                                                 ".".join(map(str, want_version))))

    def fields(obj, what, where):
        for k in obj:
            if k not in FIELDS[what]:
                out.append("%s: unknown field %r" % (where, k))
            elif k in SINCE and ver < SINCE[k]:
                out.append("%s: %s needs cdiVersion %s, the spec says %s" % (
                    where, k, ".".join(map(str, SINCE[k])), spec["cdiVersion"]))

    fields(spec, "spec", "spec")
    kind = spec["kind"]
    m = re.fullmatch(r"([^/]+)/([^/]+)", kind)
    if not m:
        out.append("kind %r is not VENDOR/CLASS" % kind)
    else:
        vendor, cls = m.groups()
        if len(vendor) > 253 or not all(
                re.fullmatch(LABEL, lab) and len(lab) <= 63
                for lab in vendor.split(".")):
            out.append("kind %r: vendor is not a DNS subdomain" % kind)
        if len(cls) > 63 or not re.fullmatch(NAME, cls) or \
                ("." in cls and ver < (0, 6, 0)):
            out.append("kind %r: class is not a name (for this version)" % kind)
    if kind != KIND:
        out.append("kind %r, not %r" % (kind, KIND))
    devs = spec["devices"]
    names = [d.get("name") for d in devs]
    if names not in (["default"], list(DEVICES)):
        out.append("devices %r: wanted default, and interpose and "
                   "interpose-fallback where the interposer is" % names)
    for i, d in enumerate(devs):
        where = "devices[%d]" % i
        fields(d, "device", where)
        if not re.fullmatch(NAME, d["name"]) or \
                (d["name"][0].isdigit() and ver < (0, 5, 0)):
            out.append("%s: name %r is not a device name" % (where, d["name"]))
        ed = d["containerEdits"]
        fields(ed, "edits", where + ".containerEdits")
        for j, n in enumerate(ed.get("deviceNodes") or []):
            fields(n, "node", "%s.deviceNodes[%d]" % (where, j))
        for j, m in enumerate(ed.get("mounts") or []):
            fields(m, "mount", "%s.mounts[%d]" % (where, j))
        out += edit_problems(ed, where, DEVICES.get(d["name"]), node, ver,
                             spec["cdiVersion"])
    if "containerEdits" in spec:
        fields(spec["containerEdits"], "edits", "containerEdits")
    return out


def edit_problems(ed, where, mode, node, ver, cdi_version):
    """One device's containerEdits: its env, its one device node, its
    group, and with mode (strict or fallback) the interposer's env and
    mount."""
    out = []
    env = ed.get("env") or []
    for e in env:
        if not isinstance(e, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", e):
            out.append("%s: env %r is not NAME=VALUE" % (where, e))
    if "GPUPOOL_BACKEND=kernel" not in env:
        out.append("%s: no GPUPOOL_BACKEND=kernel in env" % where)
    if mode:
        out += interposer_problems(ed, env, where, mode)
    elif "mounts" in ed or any(str(e).startswith("LD_PRELOAD=") for e in env):
        out.append("%s: a mount or LD_PRELOAD without the interposer" % where)
    if "additionalGids" in ed and node and \
            ed["additionalGids"] != [node.st_gid]:
        out.append("%s: additionalGids %r, the node's group is %d" % (
            where, ed["additionalGids"], node.st_gid))
    if "additionalGids" not in ed and node and node.st_gid and \
            ver >= (0, 7, 0):
        out.append("%s: no additionalGids in a %s spec" % (where, cdi_version))
    nodes = ed.get("deviceNodes") or []
    if len(nodes) != 1:
        return out + ["%s: %d device nodes, wanted one" % (where, len(nodes))]
    return out + node_problems(nodes[0], node)


def interposer_problems(ed, env, where, mode):
    out = []
    pre = [e[len("LD_PRELOAD="):] for e in env if e.startswith("LD_PRELOAD=")]
    if len(pre) != 1 or not pre[0].startswith("/") or \
            not pre[0].endswith("/libgpupool-interpose.so"):
        return ["%s: LD_PRELOAD %r, wanted the interposer's absolute path"
                % (where, pre)]
    if "GPUPOOL_INTERPOSE_MODE=%s" % mode not in env:
        out.append("%s: no GPUPOOL_INTERPOSE_MODE=%s" % (where, mode))
    mounts = ed.get("mounts") or []
    if len(mounts) != 1 or mounts[0].get("hostPath") != pre[0] or \
            mounts[0].get("containerPath") != pre[0] or \
            not {"ro", "bind"} <= set(mounts[0].get("options") or []):
        out.append("%s: mounts %r: wanted %s read-only at the same path"
                   % (where, mounts, pre[0]))
    return out


def node_problems(n, node):
    out = []
    if n["path"] != NODE:
        out.append("device node path %r, not %s" % (n["path"], NODE))
    if not n.get("hostPath", n["path"]).startswith("/"):
        out.append("device node hostPath %r is not absolute" % n.get("hostPath"))
    if n.get("type", "c") != "c":
        out.append("device node type %r, not 'c'" % n["type"])
    if not re.fullmatch(r"r?w?m?", n.get("permissions", "")) or \
            "r" not in n.get("permissions", "rw") or \
            "w" not in n.get("permissions", "rw"):
        out.append("permissions %r: not read-write" % n.get("permissions"))
    if "m" in n.get("permissions", ""):
        out.append("permissions %r: mknod is not needed" % n["permissions"])
    if "major" in n or "minor" in n:
        out.append("major/minor fixed: the runtime should take them from "
                   "the host's node (misc minors change on reload)")
    for k in ("fileMode", "uid", "gid"):
        if k not in n:
            out.append("device node without %s (the runtime's default "
                       "is 0666 root:root)" % k)
    if "fileMode" in n and not 0 <= n["fileMode"] <= 0o777:
        out.append("fileMode %#o is not permission bits" % n["fileMode"])
    if node:
        if n.get("fileMode") != stat.S_IMODE(node.st_mode) & 0o777:
            out.append("fileMode %s, the node's %#o" % (
                oct(n.get("fileMode", 0)), stat.S_IMODE(node.st_mode)))
        if n.get("gid") != node.st_gid or n.get("uid") != node.st_uid:
            out.append("uid:gid %s:%s, the node's %d:%d" % (
                n.get("uid"), n.get("gid"), node.st_uid, node.st_gid))
    return out


class Tap:
    def __init__(self):
        self.n = self.passed = self.failed = self.skipped = 0

    def ok(self, bad, name):
        self.n += 1
        for b in bad:
            print("# " + b)
        print("%s %d %s" % ("not ok" if bad else "ok", self.n, name))
        self.failed += bool(bad)
        self.passed += not bad

    def skip(self, name, why):
        self.n += 1
        self.skipped += 1
        print("ok %d %s # SKIP %s" % (self.n, name, why))


def run_ctl(ctl, args, dev):
    env = dict(os.environ, GPUPOOL_DEV_PATH=dev, LC_ALL="C")
    return subprocess.run([ctl] + args, env=env, capture_output=True,
                          text=True)


def spec_of(ctl, dev, args=()):
    """(problems so far, parsed spec or None) from gpupoolctl cdi."""
    r = run_ctl(ctl, ["cdi"] + list(args), dev)
    if r.returncode:
        return ["gpupoolctl cdi exited %d: %s" % (r.returncode,
                                                 r.stderr.strip())], None
    try:
        return [], json.loads(r.stdout)
    except ValueError as e:
        return ["not JSON: %s" % e], None


def other_chardev(tmp):
    """A character device with a group other than root's: one of /dev's,
    or, as root, one made in tmp (1:3, group 4242, mode 0660)."""
    for p in ("/dev/tty", "/dev/ptmx", "/dev/kvm", "/dev/net/tun",
              "/dev/fuse", "/dev/dri/card0", "/dev/snd/timer"):
        try:
            st = os.stat(p)
        except OSError:
            continue
        if stat.S_ISCHR(st.st_mode) and st.st_gid:
            return p
    if os.geteuid() == 0:
        p = os.path.join(tmp, "node")
        try:
            os.mknod(p, stat.S_IFCHR | 0o660, os.makedev(1, 3))
            os.chown(p, 0, 4242)
            os.chmod(p, 0o660)
            return p
        except OSError:
            pass
    return None


def cases(ctl, val, t):
    # The schema is live: a spec without kind fails it.
    t.ok([] if list(val.iter_errors({"cdiVersion": "0.5.0", "devices": []}))
         else ["the schema let a spec without kind through"],
         "the carried schema rejects a spec without kind")

    null = os.stat("/dev/null")
    bad, spec = spec_of(ctl, "/dev/null")
    if spec is not None:
        bad += problems(spec, val, null, PODMAN_43_NEWEST)
        dn = spec["devices"][0]["containerEdits"]["deviceNodes"][0]
        if dn.get("hostPath") != "/dev/null":
            bad.append("hostPath %r, not the fixture's /dev/null"
                       % dn.get("hostPath"))
        if "additionalGids" in spec["devices"][0]["containerEdits"]:
            bad.append("additionalGids in a 0.5.0 spec")
    t.ok(bad, "gpupoolctl cdi, /dev/null as the node: cdiVersion 0.5.0 "
         "(podman 4.3's newest), valid, mode 0666 root:root from its stat")

    tmp = tempfile.TemporaryDirectory(prefix="cdi-check.")
    dev = other_chardev(tmp.name)
    if not dev:
        t.skip("gpupoolctl cdi --cdi-version 0.7.0 adds the node's group",
               "no character device with a group other than root here, "
               "and not root to make one")
    else:
        st = os.stat(dev)
        bad, spec = spec_of(ctl, dev, ["--cdi-version", "0.7.0"])
        if spec is not None:
            bad += problems(spec, val, st, (0, 7, 0))
            if spec["devices"][0]["containerEdits"].get("additionalGids") \
                    != [st.st_gid]:
                bad.append("additionalGids is not [%d]" % st.st_gid)
        t.ok(bad, "gpupoolctl cdi --cdi-version 0.7.0, %s as the node "
             "(gid %d, mode %#o): additionalGids [%d], valid" % (
                 dev, st.st_gid, stat.S_IMODE(st.st_mode), st.st_gid))
    tmp.cleanup()

    with tempfile.TemporaryDirectory(prefix="cdi-check.") as d:
        out = os.path.join(d, "cdi", "gpupool.json")
        r = run_ctl(ctl, ["cdi", "--output", out], "/dev/null")
        bad = [] if r.returncode == 0 else [
            "exit %d: %s" % (r.returncode, r.stderr.strip())]
        want = run_ctl(ctl, ["cdi"], "/dev/null").stdout
        if not bad:
            with open(out) as f:
                got = f.read()
            if got != want:
                bad.append("the file differs from the standard output's spec")
            if stat.S_IMODE(os.stat(out).st_mode) != 0o644:
                bad.append("mode %#o, not 0644" % stat.S_IMODE(os.stat(out).st_mode))
            left = sorted(os.listdir(os.path.dirname(out)))
            if left != ["gpupool.json"]:
                bad.append("the directory holds %s" % left)
            # Again, over the old file: replaced, nothing left beside it.
            r = run_ctl(ctl, ["cdi", "--output", out], "/dev/null")
            if r.returncode or sorted(os.listdir(os.path.dirname(out))) != ["gpupool.json"]:
                bad.append("the second write: exit %d, %s" % (
                    r.returncode, sorted(os.listdir(os.path.dirname(out)))))
        t.ok(bad, "gpupoolctl cdi --output FILE: makes the directory, "
             "writes the same spec, mode 0644, no temporary left, rewrites")

        reg = os.path.join(d, "regular")
        open(reg, "w").close()
        r = run_ctl(ctl, ["cdi"], reg)
        t.ok([] if r.returncode == 1 and "not a character device" in r.stderr
             else ["exit %d: %s" % (r.returncode, r.stderr.strip())],
             "gpupoolctl cdi refuses a node that is not a character device "
             "(exit 1)")

    r = run_ctl(ctl, ["cdi", "--cdi-version", "0.4.0"], "/dev/null")
    t.ok([] if r.returncode == 2 and "0.5.0" in r.stderr
         else ["exit %d: %s" % (r.returncode, r.stderr.strip())],
         "gpupoolctl cdi --cdi-version 0.4.0: a usage error (exit 2) "
         "naming the versions it writes")

    # No node: the packaged setup's spec (group gpupool, 0660), where
    # that group exists; exit 3 (module not loaded) where it does not.
    missing = "/nonexistent-gpupool-node"
    r = run_ctl(ctl, ["cdi"], missing)
    try:
        import grp
        g = grp.getgrnam("gpupool")
    except KeyError:
        g = None
    if g is None:
        t.ok([] if r.returncode == 3 and "no group 'gpupool'" in r.stderr
             else ["exit %d: %s" % (r.returncode, r.stderr.strip())],
             "gpupoolctl cdi without the node nor a gpupool group: exit 3")
    else:
        bad = ["exit %d: %s" % (r.returncode, r.stderr.strip())] \
            if r.returncode else []
        if not bad:
            spec = json.loads(r.stdout)
            fake = os.stat_result((stat.S_IFCHR | 0o660, 0, 0, 1, 0,
                                   g.gr_gid, 0, 0, 0, 0))
            bad += problems(spec, val, fake, PODMAN_43_NEWEST)
        t.ok(bad, "gpupoolctl cdi without the node: the packaged setup's "
             "spec (group gpupool, gid %d, mode 0660)" % g.gr_gid)

    # The checks themselves catch what the schema does not.
    interposer_cases(ctl, val, t, null)

    _, spec = spec_of(ctl, "/dev/null")
    bad = []
    if spec is not None:
        for what, edit in (
                ("a kind without a vendor", lambda s: s.update(kind="pool")),
                ("another path", lambda s: s["devices"][0]["containerEdits"]
                 ["deviceNodes"][0].update(path="/dev/other")),
                ("additionalGids in 0.5.0", lambda s: s["devices"][0]
                 ["containerEdits"].update(additionalGids=[5])),
                ("an unknown field", lambda s: s["devices"][0]
                 ["containerEdits"]["deviceNodes"][0].update(mode=1))):
            s = json.loads(json.dumps(spec))
            edit(s)
            if not problems(s, val, null):
                bad.append("%s passed the checks" % what)
    t.ok(bad if spec is not None else ["no spec"],
         "the checks catch a kind without a vendor, another path, "
         "additionalGids in 0.5.0, an unknown field")


def interposer_cases(ctl, val, t, null):
    """The interposer's devices: there where gpupoolctl finds the library
    (beside it in the build tree), gone where it finds none."""
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(ctl))),
                       "userlib", "libgpupool-interpose.so")
    if not os.path.exists(lib):
        t.skip("gpupoolctl cdi: the interposer's devices", "%s not built" % lib)
        return
    bad, spec = spec_of(ctl, "/dev/null")
    if spec is not None:
        bad += problems(spec, val, null, PODMAN_43_NEWEST)
        names = [d["name"] for d in spec["devices"]]
        if names != list(DEVICES):
            bad.append("devices %r" % names)
        elif spec["devices"][1]["containerEdits"]["mounts"][0]["hostPath"] \
                != os.path.realpath(lib):
            bad.append("the interposer mounted from %r, not %s" % (
                spec["devices"][1]["containerEdits"]["mounts"], lib))
        broken = json.loads(json.dumps(spec))
        del broken["devices"][1]["containerEdits"]["mounts"]
        if not problems(broken, val, null):
            bad.append("an interposer device without its mount passed")
    t.ok(bad, "gpupoolctl cdi with the interposer built: devices interpose "
         "(strict) and interpose-fallback, LD_PRELOAD and the library "
         "mounted read-only, valid")
    env = dict(os.environ, GPUPOOL_DEV_PATH="/dev/null", LC_ALL="C",
               GPUPOOL_INTERPOSE_LIBRARY="/nonexistent/libgpupool-interpose.so")
    r = subprocess.run([ctl, "cdi"], env=env, capture_output=True, text=True)
    try:
        names = [d["name"] for d in json.loads(r.stdout)["devices"]]
    except (ValueError, KeyError):
        names = None
    t.ok([] if r.returncode == 0 and names == ["default"]
         else ["exit %d, devices %r" % (r.returncode, names)],
         "gpupoolctl cdi where the interposer is not: the default device alone")


def default_ctl():
    o = os.environ.get("O") or os.path.join(TOP, "build")
    return os.path.join(o, "tools", "gpupoolctl")


def main():
    args = sys.argv[1:]
    opts = {}
    while args:
        if args[0] == "--packaged":
            opts["--packaged"] = True
            args = args[1:]
        elif args[0] in ("--counts", "--ctl", "--file", "--dev") and len(args) > 1:
            opts[args[0]] = args[1]
            args = args[2:]
        else:
            sys.exit(__doc__)
    val = validator()
    if "--file" in opts:
        try:
            with open(opts["--file"]) as f:
                spec = json.load(f)
            node = os.stat(opts["--dev"]) if "--dev" in opts else None
            if "--packaged" in opts:
                import grp
                node = os.stat_result((stat.S_IFCHR | 0o660, 0, 0, 1, 0,
                                       grp.getgrnam("gpupool").gr_gid,
                                       0, 0, 0, 0))
            bad = problems(spec, val, node)
        except (OSError, ValueError, KeyError) as e:
            bad = [str(e)]
        for b in bad:
            print("cdi-check: %s: %s" % (opts["--file"], b))
        return 1 if bad else 0
    ctl = opts.get("--ctl") or default_ctl()
    t = Tap()
    if not os.access(ctl, os.X_OK):
        t.ok(["%s: not built (make tools)" % ctl], "gpupoolctl is built")
    else:
        cases(ctl, val, t)
    print("1..%d" % t.n)
    print("cdi: %d passed, %d failed, %d skipped" % (t.passed, t.failed,
                                                     t.skipped))
    if "--counts" in opts:
        with open(opts["--counts"], "w") as f:
            f.write("pass=%d fail=%d skip=%d\n" % (t.passed, t.failed,
                                                  t.skipped))
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
