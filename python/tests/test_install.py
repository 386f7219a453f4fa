"""`pip install ./python` works offline and installs an importable package."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from vmenv import IN_VM

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class InstallTest(unittest.TestCase):
    # pip is the same program whatever the kernel, and under TCG it takes
    # 30 s of each VM's run: the test runs on the host.  The installed
    # package on the kernel backend is the Debian packages' check's VM test.
    @unittest.skipIf(IN_VM, "host only (pip under TCG takes 30 s; the "
                     "installed package on the kernel backend is the "
                     "packages' VM test)")
    def test_pip_install_offline(self):
        if subprocess.run([sys.executable, "-m", "pip", "--version"],
                          capture_output=True).returncode:
            self.skipTest("pip not available for %s" % sys.executable)
        with tempfile.TemporaryDirectory() as tmp:
            # pip builds in the source tree: build from a copy.
            src = os.path.join(tmp, "src")
            shutil.copytree(SRC, src, ignore=shutil.ignore_patterns(
                "__pycache__", "build", "*.egg-info"))
            target = os.path.join(tmp, "site")
            r = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--no-index",
                 "--no-build-isolation", "--no-deps", "--target", target,
                 src], capture_output=True, text=True)
            self.assertEqual(0, r.returncode, r.stdout + r.stderr)
            env = dict(os.environ, PYTHONPATH=target)
            r = subprocess.run(
                [sys.executable, "-c",
                 "import gpupool; print(gpupool.__file__); "
                 "p = gpupool.Pool(); b = p.buffer(4096); "
                 "b.view()[0] = 1; b.free(); print(p.info()['backend'])"],
                capture_output=True, text=True, env=env, cwd=tmp)
            self.assertEqual(0, r.returncode, r.stderr)
            self.assertTrue(r.stdout.startswith(target), r.stdout)


if __name__ == "__main__":
    unittest.main()
