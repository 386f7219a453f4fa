#!/usr/bin/python3
"""Parse every YAML file in the tree (Debian's python3-yaml) and check the
Kubernetes manifests for the mistakes a parser alone lets through: every
document has apiVersion, kind and metadata.name; a workload's selector
matches its pod template's labels; every container has a name and an image
and mounts only volumes the pod defines; a ConfigMap's data are strings.

Usage: scripts/yaml-check.py [--counts FILE]   (from anywhere in the tree)
Prints one TAP line per file; exit status 1 when any file fails.
"""
import os
import subprocess
import sys

try:
    import yaml
except ImportError:
    sys.exit("yaml-check: no PyYAML for %s (make deps: python3-yaml)"
             % sys.executable)


def problems(path):
    out = []
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    for i, d in enumerate(docs):
        where = "%s: document %d" % (path, i + 1)
        if not isinstance(d, dict):
            out.append("%s: not a mapping" % where)
            continue
        if "apiVersion" not in d and "kind" not in d:
            continue        # not a Kubernetes manifest
        for key in ("apiVersion", "kind"):
            if not d.get(key):
                out.append("%s: no %s" % (where, key))
        if not (d.get("metadata") or {}).get("name"):
            out.append("%s: no metadata.name" % where)
        kind = d.get("kind")
        if kind == "ConfigMap":
            for k, v in (d.get("data") or {}).items():
                if not isinstance(v, str):
                    out.append("%s: data.%s is not a string" % (where, k))
        spec = d.get("spec") or {}
        tmpl = spec.get("template")
        if kind in ("DaemonSet", "Deployment", "StatefulSet", "Job"):
            if not tmpl:
                out.append("%s: no spec.template" % where)
                continue
            want = (spec.get("selector") or {}).get("matchLabels") or {}
            have = (tmpl.get("metadata") or {}).get("labels") or {}
            if not want or any(have.get(k) != v for k, v in want.items()):
                out.append("%s: selector %s does not match the template's "
                           "labels %s" % (where, want, have))
            pod = tmpl.get("spec") or {}
            vols = {v.get("name") for v in pod.get("volumes") or []}
            ctrs = (pod.get("initContainers") or []) + \
                (pod.get("containers") or [])
            if not pod.get("containers"):
                out.append("%s: no containers" % where)
            for c in ctrs:
                name = c.get("name")
                if not name or not c.get("image"):
                    out.append("%s: a container without name or image" % where)
                known = {"name", "image", "command", "args", "env",
                         "securityContext", "volumeMounts", "resources",
                         "ports", "imagePullPolicy", "workingDir",
                         "livenessProbe", "readinessProbe", "envFrom"}
                for k in c:
                    if k not in known:
                        out.append("%s: container %s: unknown field %s"
                                   % (where, name, k))
                for m in c.get("volumeMounts") or []:
                    if m.get("name") not in vols:
                        out.append("%s: container %s mounts undefined volume "
                                   "%s" % (where, name, m.get("name")))
    return out


def main():
    counts = None
    if len(sys.argv) == 3 and sys.argv[1] == "--counts":
        counts = sys.argv[2]
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = subprocess.run(
        ["git", "-C", top, "ls-files", "-co", "--exclude-standard",
         "*.yaml", "*.yml"], check=True, capture_output=True,
        text=True).stdout.split()
    passed = failed = 0
    for n, rel in enumerate(files, 1):
        try:
            bad = problems(os.path.join(top, rel))
        except (OSError, yaml.YAMLError) as e:
            bad = ["%s: %s" % (rel, e)]
        for b in bad:
            print("# " + b)
        print("%s %d %s" % ("not ok" if bad else "ok", n, rel))
        failed += bool(bad)
        passed += not bad
    if not files:
        print("not ok 1 no YAML files found")
        failed = 1
    print("yaml: %d passed, %d failed, 0 skipped" % (passed, failed))
    if counts:
        with open(counts, "w") as f:
            f.write("pass=%d fail=%d skip=0\n" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
