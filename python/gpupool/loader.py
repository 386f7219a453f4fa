"""A zero-copy data-loader building block over shared pool chunks.

The consumer owns a ring of `slots` shared pinned buffers and hands each
worker process their file descriptors once.  A task is a small message
(slot, batch index); the worker writes the batch straight into that slot
(pinned memory the GPU can DMA from) and answers with whatever small,
picklable metadata its produce function returns.  The consumer gets the
batch without a copy and gives the slot back with Batch.release().

PyTorch's DataLoader with pin_memory=True copies every batch once more, from
the worker's shared memory into a pinned buffer, in a separate thread
(pytorch issue 78018); here there is nothing to copy.

    def produce(index, view):            # in a worker; view: memoryview
        view[:] = make_batch(index)
        return {"labels": ...}           # small, picklable

    with gpupool.Pool() as pool:
        with gpupool.Loader(pool, produce, batch_bytes=64 << 20,
                            num_workers=4) as loader:
            for batch in loader.batches(1000):
                with batch:               # release() on exit
                    train_step(batch.numpy((64, 224, 224, 3)))

With the "spawn" start method produce must be picklable (a module-level
function).
"""
import multiprocessing
import multiprocessing.connection
import os
import traceback
from multiprocessing import reduction


class Batch:
    """One produced batch, living in a pool slot until release()."""

    def __init__(self, loader, slot, index, meta, view):
        self._loader = loader
        self.slot = slot
        self.index = index
        self.meta = meta
        self.view = view

    def numpy(self, shape=None, dtype="uint8"):
        import numpy as np
        a = np.frombuffer(self.view, dtype=dtype)
        return a if shape is None else a.reshape(shape)

    def release(self):
        """Give the slot back for the next batch.  Views taken from this
        batch must not be used afterwards: the slot will be overwritten."""
        if self._loader is not None:
            self.view.release()
            self._loader._give_back(self.slot)
            self._loader = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


_worker_pool = None


def worker_pool():
    """In a worker (inside produce): its Pool, where the slots are imported
    buffers (for pool.read_into(view, file, ...)).  None elsewhere."""
    return _worker_pool


def _worker_main(conn, produce, batch_bytes, nslots, backend, inherited):
    """Worker process: import the slots once, then serve tasks."""
    from . import Pool
    # With fork, this process holds copies of the consumer's ends of every
    # pipe made so far, its own included: closed, so that if the consumer
    # dies, recv() below sees EOF and the worker exits (and lets go of the
    # pool memory it maps) instead of waiting for ever.
    for c in inherited:
        c.close()
    slot = index = -1
    try:
        fds = [reduction.recv_handle(conn) for _ in range(nslots)]
        with Pool(backend=backend, no_cuda=True) as pool:
            global _worker_pool
            _worker_pool = pool
            bufs = [pool.import_fd(fd) for fd in fds]
            for fd in fds:
                os.close(fd)
            while True:
                task = conn.recv()
                if task is None:
                    break
                slot, index = task
                view = bufs[slot].view()[:batch_bytes]
                try:
                    meta = produce(index, view)
                finally:
                    view.release()
                conn.send((slot, index, meta))
            bufs = None
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass
    except Exception:
        # produce() failing, or anything else here (importing the slots,
        # pickling the metadata): the consumer raises it with this text.
        try:
            conn.send(("error", index, traceback.format_exc(), slot))
        except (OSError, EOFError):
            pass
    finally:
        conn.close()


class Loader:
    """num_workers processes producing batches of batch_bytes into `slots`
    shared pool buffers (default 2 per worker)."""

    def __init__(self, pool, produce, batch_bytes, num_workers=2, slots=None,
                 start_method=None):
        if num_workers < 1 or batch_bytes < 1:
            raise ValueError("gpupool.Loader: num_workers and batch_bytes "
                             "must be positive")
        self.batch_bytes = int(batch_bytes)
        self.num_workers = int(num_workers)
        nslots = int(slots or 2 * num_workers)
        if nslots < num_workers:
            raise ValueError("gpupool.Loader: need at least one slot per worker")
        backend = pool.info()["backend"]
        self._bufs = [pool.buffer(self.batch_bytes, shared=True)
                      for _ in range(nslots)]
        self._free = list(range(nslots))
        self._busy = {}            # conn -> tasks in flight
        self._dead = set()         # conns whose worker is gone
        ctx = multiprocessing.get_context(start_method)
        forked = ctx.get_start_method() == "fork"
        self._procs, self._conns = [], []
        try:
            for _ in range(self.num_workers):
                parent, child = ctx.Pipe(duplex=True)
                inherited = self._conns + [parent] if forked else []
                p = ctx.Process(target=_worker_main, daemon=True,
                                args=(child, produce, self.batch_bytes,
                                      nslots, backend, inherited))
                p.start()
                child.close()
                # Ours from here: close() stops it, whatever fails next.
                self._procs.append(p)
                self._conns.append(parent)
                self._busy[parent] = 0
                for buf in self._bufs:
                    fd = pool.export(buf)
                    try:
                        reduction.send_handle(parent, fd, p.pid)
                    finally:
                        os.close(fd)
        except BaseException:
            self.close()
            raise
        self._next_index = 0
        self._limit = 0

    def _dispatch(self):
        while self._free and self._next_index < self._limit:
            live = [c for c in self._conns if c not in self._dead]
            if not live:
                return
            conn = min(live, key=lambda c: self._busy[c])
            slot = self._free.pop()
            try:
                conn.send((slot, self._next_index))
            except (BrokenPipeError, ConnectionResetError):
                # The worker is gone, perhaps after reporting an error
                # that is still in its pipe: batches() reads and raises
                # it.  Here the write can lose that race.
                self._free.append(slot)
                self._dead.add(conn)
                continue
            self._busy[conn] += 1
            self._next_index += 1

    def _give_back(self, slot):
        self._free.append(slot)
        self._dispatch()

    def _drain(self):
        """Wait for the tasks a previous, abandoned batches() left in
        flight and take their slots back, results unseen."""
        self._limit = self._next_index      # dispatch nothing more
        while True:
            busy = [c for c in self._conns
                    if self._busy[c] and c not in self._dead]
            if not busy:
                return
            for conn in multiprocessing.connection.wait(busy):
                try:
                    msg = conn.recv()
                except EOFError:
                    self._dead.add(conn)
                    continue
                self._busy[conn] -= 1
                if msg[0] == "error":
                    self._dead.add(conn)    # it has exited
                    if msg[3] >= 0:
                        self._free.append(msg[3])
                else:
                    self._free.append(msg[0])

    def batches(self, count):
        """Yield `count` batches (indices 0..count-1, in completion order).
        Each must be release()d to keep the ring turning.  A call after an
        earlier one was abandoned (a break out of its loop) first waits for
        the batches that one still had in production and discards them."""
        self._drain()
        self._next_index, self._limit = 0, int(count)
        done = 0
        self._dispatch()
        while done < count:
            busy = [c for c in self._conns if self._busy[c]]
            if not busy and self._dead:
                raise RuntimeError("gpupool.Loader: a worker died")
            if not busy:
                raise RuntimeError("gpupool.Loader: every slot is held by an "
                                   "unreleased batch; release() batches to "
                                   "keep the ring turning")
            ready = multiprocessing.connection.wait(busy)
            for conn in ready:
                try:
                    msg = conn.recv()
                except EOFError:
                    raise RuntimeError("gpupool.Loader: a worker died") from None
                if msg[0] == "error":
                    raise RuntimeError("gpupool.Loader: worker failed on batch "
                                       "%d:\n%s" % (msg[1], msg[2]))
                slot, index, meta = msg
                self._busy[conn] -= 1
                done += 1
                view = self._bufs[slot].view()[:self.batch_bytes]
                yield Batch(self, slot, index, meta, view)

    def close(self):
        """Stop the workers and let go of the slots."""
        for conn in self._conns:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for p in self._procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()
        for conn in self._conns:
            conn.close()
        self._procs, self._conns = [], []
        for buf in self._bufs:
            try:
                buf.free()
            except BufferError:
                # A view of a batch (a numpy array, say) still uses this
                # slot: it goes back to the pool when the last view goes.
                pass
        self._bufs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
