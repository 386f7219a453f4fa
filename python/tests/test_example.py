"""The data-loader example (python/examples/loader.py) runs and proves its
bytes arrived, synthetic, from a directory of files and from one file
(gp_read)."""
import os
import subprocess
import sys
import tempfile
import unittest

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "examples", "loader.py")


def run(*args):
    return subprocess.run([sys.executable, EXAMPLE, "--quiet"] + list(args),
                          capture_output=True, text=True, timeout=300)


class ExampleTest(unittest.TestCase):
    def test_synthetic(self):
        r = run("--workers", "2", "--batches", "12", "--batch-size", "1M")
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        self.assertIn("batches: 12\n", r.stdout)
        self.assertIn("checksum: ok\n", r.stdout)
        self.assertRegex(r.stdout, r"throughput: [0-9.]+ batches/s, [0-9.]+ GB/s")

    def test_data_dir(self):
        with tempfile.TemporaryDirectory() as d:
            for i in range(3):
                with open(os.path.join(d, "f%d" % i), "wb") as f:
                    f.write(os.urandom(70000 + i))
            r = run("--workers", "1", "--batches", "5", "--batch-size", "64K",
                    "--data-dir", d)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        self.assertIn("checksum: ok\n", r.stdout)

    def test_file(self):
        with tempfile.NamedTemporaryFile() as f:
            f.write(os.urandom(1 << 20))
            f.flush()
            r = run("--workers", "1", "--batches", "6", "--batch-size", "256K",
                    "--file", f.name)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        self.assertIn("checksum: ok\n", r.stdout)
        self.assertIn("batch 0 read with gp_read", r.stderr)

    def test_bad_arguments(self):
        r = run("--batch-size", "lots")
        self.assertEqual(2, r.returncode)
        self.assertIn("'lots' is not a size", r.stderr)


if __name__ == "__main__":
    unittest.main()
