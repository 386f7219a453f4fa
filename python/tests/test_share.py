"""Sharing buffers with other processes: fds over a pipe (fork and spawn)."""
import multiprocessing
import os
import subprocess
import sys
import unittest
from multiprocessing import reduction

import gpupool


def _child(conn, backend):
    """Import the buffer whose fd arrives on conn, check and overwrite it."""
    fd = reduction.recv_handle(conn)
    with gpupool.Pool(backend=backend) as pool:
        buf = pool.import_fd(fd)
        os.close(fd)
        v = buf.view()
        ok = bytes(v[:5]) == b"hello"
        v[:5] = b"world"
        del v
        buf.free()
    conn.send(ok)
    conn.close()


class ShareTest(unittest.TestCase):
    def roundtrip(self, method):
        ctx = multiprocessing.get_context(method)
        with gpupool.Pool() as pool:
            buf = pool.buffer(1 << 20, shared=True)
            buf.view()[:5] = b"hello"
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_child,
                            args=(child, pool.info()["backend"]))
            p.start()
            child.close()   # then a child that dies reads as EOF here
            fd = pool.export(buf)
            reduction.send_handle(parent, fd, p.pid)
            os.close(fd)
            self.assertTrue(parent.poll(60),
                            "the child sent nothing (its traceback is above)")
            self.assertTrue(parent.recv())
            p.join(30)
            self.assertEqual(0, p.exitcode)
            self.assertEqual(b"world", bytes(buf.view()[:5]))
            buf.free()

    def test_fork(self):
        self.roundtrip("fork")

    def test_spawn(self):
        self.roundtrip("spawn")

    def test_fork_child_exit_leaves_the_parent_alone(self):
        # A child of os.fork() that exits normally runs the finalizers it
        # inherited.  They once closed the parent's context there, which
        # on the kernel backend freed the parent's chunks through the
        # shared file: the parent's own free then failed (its handle was
        # gone), which GPUPOOL_DEBUG reports.
        code = (
            "import gc, os, sys, gpupool\n"
            "pool = gpupool.Pool()\n"
            "buf = pool.buffer(8 << 20)\n"
            "buf.view()[:3] = b'abc'\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    sys.exit(0)\n"
            "os.waitpid(pid, 0)\n"
            "assert bytes(buf.view()[:3]) == b'abc'\n"
            "buf.free()\n"
            "print(pool.info()['backend'])\n")
        env = dict(os.environ, GPUPOOL_DEBUG="1")
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(gpupool.__file__))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True, env=env, timeout=60)
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertNotIn("GPUPOOL_IOC_FREE", r.stderr)

    def test_imported_size(self):
        with gpupool.Pool() as pool:
            buf = pool.buffer(10000, shared=True)
            fd = pool.export(buf)
            other = pool.import_fd(fd)
            os.close(fd)
            self.assertGreaterEqual(other.size, 10000)
            other.view()[0] = 7
            self.assertEqual(7, buf.view()[0])
            other.free()
            buf.free()


if __name__ == "__main__":
    unittest.main()
