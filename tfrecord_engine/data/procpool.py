"""Decoding chunks of an epoch in worker processes.

The read-ahead thread overlaps decoding with the consumer, but decoding holds the GIL
for much of its time (per-record CRC calls, small numpy operations), so one process
decodes on about one core. :class:`DecodePool` runs :func:`~tfrecord_engine.data.prepare.
prepare_chunk` in ``workers`` separate Python processes instead:

- workers are started with ``subprocess`` (``python -c ...``), not ``multiprocessing``:
  nothing of the parent is forked (safe next to threads and TensorFlow) and the user's
  ``__main__`` is never re-imported, so no ``if __name__ == "__main__"`` guard is
  needed;
- a task is a list of :class:`~tfrecord_engine.data.sampler.IndexBatch`; each worker opens
  the dataset itself and maps the files, so records never cross a pipe. The pool knows
  no dataset class: a :class:`PoolSource` hands it a :class:`WorkerInit` (a module-level
  opener, picklable by reference, with the plain arguments and indexes it needs);
- results cross through shared memory: the worker pickles the prepared batches with
  protocol 5, numpy arrays out of band, into a slot of a shared file the parent
  owns; the parent copies the stream and the numeric arrays once into a fresh buffer
  and unpickles the arrays as views of it, while fixed-size string values become
  ``bytes`` objects straight from the slot (the slot is then free again). Results
  that do not fit a slot are sent whole through the pipe;
- results come back in task order whatever the timing; an error raised by a worker
  (or a worker that dies) surfaces in the consumer at that chunk.
"""

from __future__ import annotations

import collections
import contextlib
import io
import mmap
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import weakref
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any, Final, NamedTuple, Protocol, cast

import numpy as np

from ..errors import InvalidArgumentError, WorkerError
from .prepare import ChunkSource, Ready, prepare_chunk
from .sampler import IndexBatch

__all__ = ["DEFAULT_SLOT_BYTES", "DecodePool", "PoolSource", "PoolStream", "WorkerInit"]

#: Shared memory per in-flight chunk: a parsed chunk of ~4,096 records of ~1 KB
#: needs ~4 MB; larger results go through the pipe instead (slower, same output).
DEFAULT_SLOT_BYTES: Final = 16 << 20
_ALIGN: Final = 64
_WORKER_CODE: Final = "from tfrecord_engine.data.procpool import _worker_main; _worker_main()"


def _shm_dir() -> str:
    # tmpfs where there is one: the slots are then plain memory shared by both sides.
    return "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [here, *(p for p in sys.path if p)]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def _shutdown(
    owner: int, procs: list[subprocess.Popen[bytes]], pipes: list[list[Connection]]
) -> None:
    if os.getpid() != owner:
        return  # a forked copy: the workers are its parent's
    for conns in pipes:
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.close()
    # Killed, not asked: a worker keeps nothing that needs a clean exit (the shared
    # file is unlinked at start), and waiting for an idle one's interpreter to wind
    # down took ~1 s on a loaded machine, for one still decoding a chunk far longer.
    _kill(procs)
    for proc in procs:
        proc.wait()


def _kill(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        with contextlib.suppress(OSError):
            proc.kill()  # (a reaped worker is not signalled)


class WorkerInit(NamedTuple):
    """How a worker process opens its own copy of a dataset.

    Attributes:
        opener: a module-level function (pickled by reference, so the worker imports
            its module) called as ``opener(state, indexes)``.
        state: plain, picklable arguments (paths, features, policies).
        indexes: the parent's indexes: a file changed since it was indexed must read
            the same (and fail its CRCs the same) in every process.
    """

    opener: Callable[[dict[str, Any], Any], ChunkSource]
    state: dict[str, Any]
    indexes: Any


class PoolSource(Protocol):
    """A dataset that decode workers can reopen."""

    def worker_init(self) -> WorkerInit:
        """What a worker needs to open the same dataset."""


class DecodePool:
    """``workers`` processes that prepare chunks of batches of one dataset.

    A pool counts the chunks queued on each worker whose replies are unread, so
    :meth:`drain` leaves every pipe empty whatever interrupted the epoch that used it.
    Any exception or interrupt (``KeyboardInterrupt``) inside a send or a receive marks
    it :attr:`broken`: its pipes may be out of step, so it is never used again.

    Args:
        dataset: the dataset to decode; each worker reopens it from its arguments.
        workers: the number of processes (≥ 1).
        slots: chunks that may be in flight at once (each has a shared-memory slot).
        slot_bytes: bytes of shared memory per slot.

    Raises:
        WorkerError: a worker could not start or open the dataset (the message says why).
    """

    def __init__(
        self,
        dataset: PoolSource,
        workers: int,
        *,
        slots: int,
        slot_bytes: int = DEFAULT_SLOT_BYTES,
    ) -> None:
        if workers < 1 or slots < 1:
            raise InvalidArgumentError(f"workers and slots must be >= 1, got {workers}, {slots}")
        if os.name != "posix":
            raise InvalidArgumentError("decode worker processes need a POSIX system")
        self.workers = workers
        self.slots = slots
        #: The process that started the workers (a forked child must not use them).
        self.owner = os.getpid()
        self.slot_bytes = slot_bytes
        self._procs: list[subprocess.Popen[bytes]] = []
        self._tasks: list[Connection] = []
        self._results: list[Connection] = []
        self._next_task = 0
        #: Per worker: chunks sent whose replies are not read yet.
        self._queued = [0] * workers
        #: The pipes may be out of step (an error or interrupt in a send or a receive,
        #: a dead worker): the pool must not serve another epoch.
        self.broken = False
        #: :meth:`close` ran: every later use raises :class:`WorkerError`.
        self.closed = False
        #: Taken by an epoch (the owner of the pool sets and clears it).
        self.in_use = False
        # Held around each use of the pipes: a close() from another thread never closes
        # a descriptor under a read or a write (its number could be reused meanwhile).
        self._io = threading.RLock()
        self._view = np.empty(0, np.uint8)
        fd, path = tempfile.mkstemp(prefix="tfe-pool-", dir=_shm_dir())
        try:
            try:
                # Reserve the memory now: a full tmpfs must fail here, not as a SIGBUS
                # in a worker writing its result.
                os.posix_fallocate(fd, 0, slots * slot_bytes)
            except OSError as exc:
                raise WorkerError(
                    f"cannot reserve {slots * slot_bytes} bytes of shared memory in "
                    f"{os.path.dirname(path)}: {exc}"
                ) from exc
            self._shm = mmap.mmap(fd, slots * slot_bytes)
            self._view = np.frombuffer(self._shm, dtype=np.uint8)
            self._finalizer = weakref.finalize(
                self, _shutdown, self.owner, self._procs, [self._tasks, self._results]
            )
            init = dataset.worker_init()
            for _ in range(workers):
                self._start_worker(init, path)
            for w in range(workers):
                reply = self._read(w, counted=False)
                if reply[0] != "ready":
                    raise WorkerError(f"decode worker {w} could not open the dataset: {reply[1]}")
        except BaseException:
            # (An interrupt while starting too: no worker, pipe or map is left behind.)
            self.close()
            raise
        finally:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                # Every worker has mapped it by now (or failed): the name is not needed.
                os.unlink(path)

    def _start_worker(self, init: WorkerInit, shm_path: str) -> None:
        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        # The parent's ends belong to the pool from here on (close() closes them); the
        # children's ends are closed here whatever happens, so that a worker started
        # by an interrupted Popen still reads end-of-file once the pool closes.
        self._tasks.append(Connection(task_w, readable=False))
        self._results.append(Connection(result_r, writable=False))
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER_CODE, str(task_r), str(result_w)],
                pass_fds=(task_r, result_w),
                env=_child_env(),
                stdin=subprocess.DEVNULL,
            )
        except OSError as exc:
            raise WorkerError(f"cannot start a decode worker: {exc}") from exc
        finally:
            os.close(task_r)
            os.close(result_w)
        self._procs.append(proc)
        message = ("init", init.opener, init.state, shm_path, self.slot_bytes, init.indexes)
        w = len(self._procs) - 1
        with self._io:
            try:
                self._tasks[w].send(message)
            except BaseException as exc:
                self._fail(w, exc)
                raise

    def _read(self, w: int, *, counted: bool) -> tuple[Any, ...]:
        """Worker ``w``'s next reply (``counted``: the reply to a queued chunk)."""
        with self._io:
            if self.closed or self.broken:
                raise self._stopped()
            try:
                message: tuple[Any, ...] = self._results[w].recv()
                if counted:
                    self._queued[w] -= 1
            except BaseException as exc:
                self._fail(w, exc)
                raise
        return message

    def _fail(self, w: int, exc: BaseException) -> None:
        """Marks the pool broken after ``exc`` on a pipe of worker ``w``; raises
        :class:`WorkerError` for a closed pool or a dead worker (else the caller raises
        ``exc`` as it is: an interrupt stays an interrupt)."""
        self.broken = True
        if self.closed:
            raise self._stopped() from exc
        if isinstance(exc, (EOFError, OSError)):
            raise self._died(w, exc) from exc

    def _stopped(self) -> WorkerError:
        pids = ", ".join(str(p.pid) for p in self._procs)
        return WorkerError(
            f"the decode workers (pids {pids}) were stopped (RecordDataset.close(), or an "
            "error or interrupt earlier in this epoch); start a new epoch, or resume this "
            "one with ds.batches(..., state=it.get_state())"
        )

    def _died(self, w: int, exc: BaseException) -> WorkerError:
        proc = self._procs[w]
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1)
        code = proc.returncode
        how = (
            f"was killed by signal {-code}"
            if code is not None and code < 0
            else f"exited with status {code}"
            if code is not None
            else f"stopped answering ({type(exc).__name__})"
        )
        return WorkerError(f"decode worker {w} (pid {proc.pid}) {how}")

    def submit(self, batches: list[IndexBatch], slot: int) -> int:
        """Queues a chunk on the next worker (round robin); returns the worker's number.

        Raises:
            WorkerError: the pool was closed, or the worker died.
        """
        with self._io:
            if self.closed or self.broken:
                raise self._stopped()
            w = self._next_task % self.workers
            try:
                # Counted before it is sent: an interrupt anywhere in here marks the
                # pool broken, so a count that runs ahead of the pipe is never drained.
                self._queued[w] += 1
                self._next_task += 1
                self._tasks[w].send(("task", slot, batches))
            except BaseException as exc:
                self._fail(w, exc)
                raise
        return w

    def receive(self, w: int, slot: int) -> list[Ready]:
        """The result of worker ``w``'s oldest queued chunk (which used ``slot``).

        Raises:
            WorkerError: the pool was closed, or the worker died.
            Exception: what the worker raised preparing the chunk (the pool stays usable).
        """
        reply = self._read(w, counted=True)
        kind = reply[0]
        if kind == "error":
            raise reply[1]
        if kind == "inline":
            chunk: list[Ready] = pickle.loads(reply[1])
        else:
            _, stream_len, spans, rows = reply
            chunk = self._unpack(slot * self.slot_bytes, stream_len, spans, rows)
        return chunk

    def drain(self) -> None:
        """Reads and drops the replies of every queued chunk: the pool can then serve
        another epoch. Does nothing to a broken or closed pool.

        Raises:
            BaseException: what stopped the draining (an interrupt, a dead worker); the
                pool is then broken.
        """
        for w in range(self.workers):
            while self._queued[w] and not (self.broken or self.closed):
                self._read(w, counted=True)

    @property
    def queued(self) -> int:
        """Chunks sent to the workers whose replies are not read yet."""
        return sum(self._queued)

    def _unpack(
        self, base: int, stream_len: int, spans: list[tuple[int, int]], rows: frozenset[int]
    ) -> list[Ready]:
        """Unpickles the result in the slot at ``base``; nothing refers to the slot after.

        The stream and the numeric arrays are copied out of the slot into a fresh
        64-byte-aligned buffer that the arrays are views of: TensorFlow takes aligned
        arrays without a copy, and the batches of one feature stay consecutive there,
        so the bridge stacks them for free. Fixed-size string values (spans in
        ``rows``, see :class:`_Pickler`) are not copied there: their ``bytes`` objects
        are made straight from the slot while unpickling (each value is copied once).
        """
        view = self._view
        buffers: list[Any] = []
        try:
            total = max([stream_len, *(o + n for o, n in spans)])
            # Pages of this buffer that no copy touches (where the rows would be) are
            # never faulted in.
            buf = _aligned_empty(total)
            copied = [(0, stream_len)] + [s for i, s in enumerate(spans) if i not in rows]
            for start, stop in _runs(copied):
                np.copyto(buf[start:stop], view[base + start : base + stop])
            buffers = [
                view[base + o : base + o + n] if i in rows else buf[o : o + n]
                for i, (o, n) in enumerate(spans)
            ]
            chunk: list[Ready] = pickle.loads(buf[:stream_len].data, buffers=buffers)
        except BaseException as exc:
            # A caller that keeps the exception (a notebook keeps the last one) keeps
            # its frames: views of the slot in them would pin the map, and close()
            # could not unmap it nor close its descriptor.
            del view, buffers
            traceback.clear_frames(exc.__traceback__)
            raise
        return chunk

    def close(self) -> None:
        """Stops (kills) the workers and releases their pipes and the shared memory, at
        once, whatever they were doing. Idempotent; another thread may call it while an
        epoch uses the pool: that epoch's next send or receive raises
        :class:`WorkerError`.
        """
        self.closed = self.broken = True
        if os.getpid() == self.owner:
            # First, outside the lock: a read or write of another thread that holds it
            # returns once its worker is gone.
            _kill(self._procs)
        with self._io:
            self._finalizer_call()
            self._view = np.empty(0, np.uint8)  # the view pins the map: drop it first
            shm = getattr(self, "_shm", None)
            if shm is not None:
                with contextlib.suppress(BufferError):
                    shm.close()

    def _finalizer_call(self) -> None:
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()
        else:
            _shutdown(self.owner, self._procs, [self._tasks, self._results])


class PoolStream(Iterator[list[Ready]]):
    """The prepared chunks of one epoch from a :class:`DecodePool`, in order.

    At most ``pool.slots`` chunks are in flight. ``close()`` waits for the chunks in
    flight (so the pool can serve the next epoch) and hands the pool to ``release``;
    an exception or interrupt in ``next`` closes the stream (a pool that it left out of
    step is broken, and ``release`` stops it).
    """

    def __init__(
        self,
        pool: DecodePool,
        chunks: Iterator[list[IndexBatch]],
        release: Callable[[DecodePool], None],
    ) -> None:
        self._pool: DecodePool | None = pool
        self._chunks = chunks
        self._release = release
        self._free = list(range(pool.slots))
        self._inflight: collections.deque[tuple[int, int]] = collections.deque()
        self._exhausted = False

    def __iter__(self) -> PoolStream:
        return self

    def start(self) -> None:
        """Queues the first chunks on the workers now rather than at the first ``next``."""
        pool = self._pool
        if pool is None:
            return
        try:
            self._fill(pool)
        except BaseException:
            self.close()
            raise

    def _fill(self, pool: DecodePool) -> None:
        while self._free and not self._exhausted:
            chunk = next(self._chunks, None)
            if chunk is None:
                self._exhausted = True
                break
            slot = self._free.pop()
            self._inflight.append((pool.submit(chunk, slot), slot))

    def __next__(self) -> list[Ready]:
        pool = self._pool
        if pool is None:
            raise StopIteration
        try:
            self._fill(pool)
            if not self._inflight:
                self.close()
                raise StopIteration
            w, slot = self._inflight.popleft()
            try:
                result = pool.receive(w, slot)
            finally:
                self._free.append(slot)
            # Keep the workers busy while the consumer works on this chunk.
            self._fill(pool)
        except StopIteration:
            raise
        except BaseException:
            self.close()
            raise
        return result

    def close(self) -> None:
        """Drains the chunks in flight and returns the pool. Idempotent."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        self._inflight.clear()
        try:
            # The pool counts what it was sent, so this also reads a reply that an
            # interrupt left between a send and this stream's own list. What fails
            # here marks the pool broken (release then stops it); an interrupt is
            # raised once the pool is handed back.
            with contextlib.suppress(Exception):
                pool.drain()
        finally:
            self._release(pool)

    def __del__(self) -> None:
        # A dropped epoch must not keep its pool busy; draining only reads pipes.
        with contextlib.suppress(Exception):
            self.close()


# ---- the worker side ------------------------------------------------------------------


def _void_to_objects(rows: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A ``V<size>`` array as an object array of ``bytes`` of the same shape.

    ``tolist`` makes each element one bytes object in C (an "S" view would strip
    trailing NUL bytes).
    """
    out = np.empty(rows.shape, dtype=object)
    out.reshape(-1)[:] = rows.reshape(-1).tolist()
    return out


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any failure means: send a plain description
        return WorkerError(f"{type(exc).__name__}: {exc}")
    return exc


def _bytes_array(shape: tuple[int, ...], data: Any, lengths: Any) -> np.ndarray[Any, Any]:
    """Rebuilds an object array of ``bytes`` from their concatenation (see _Pickler)."""
    n = int(np.prod(shape))
    if n and isinstance(lengths, int) and lengths:
        # Equal sizes: one C-level pass makes every bytes object.
        return _rows_to_bytes(data, shape, lengths)
    out = np.empty(n, dtype=object)
    if n and isinstance(lengths, int):
        out[:] = [b""] * n
    elif n:
        ends = np.cumsum(lengths)
        blob = bytes(data)
        cuts = map(slice, (ends - lengths).tolist(), ends.tolist())
        out[:] = list(map(blob.__getitem__, cuts))
    return out.reshape(shape)


def _rows_to_bytes(data: Any, shape: tuple[int, ...], size: int) -> np.ndarray[Any, Any]:
    """An object array of ``bytes`` from ``size``-byte rows (see :class:`_Pickler`)."""
    return _void_to_objects(np.frombuffer(data, dtype=f"V{size}").reshape(shape))


class _Pickler(pickle.Pickler):
    """Pickles the arrays of a worker's result for the trip through a slot.

    - A ``V<size>`` array (fixed-size string values that the decoder left as rows,
      ``BatchDecoder.defer_bytes``) goes out of band as it is and is made into an
      object array of ``bytes`` while the parent unpickles, straight from the slot;
      the out-of-band buffers that hold rows are listed in :attr:`rows`.
    - An object array of ``bytes`` goes as one out-of-band buffer plus lengths: numpy
      pickles it element by element, in band (~600 ns per 784-byte value measured);
      joined, the values cross as one copy and are rebuilt in C.
    """

    def __init__(self, file: Any, buffers: list[pickle.PickleBuffer]) -> None:
        # The row buffers by id (held here, so their ids stay theirs during the dump).
        row_buffers: dict[int, pickle.PickleBuffer] = {}
        self._row_buffers = row_buffers
        #: Positions (in ``buffers``) of the buffers that hold string rows.
        self.rows: set[int] = set()
        rows = self.rows

        def take(buffer: pickle.PickleBuffer) -> None:
            # A closure, not a method: the pickler must not refer to itself (a cycle
            # would keep the result's arrays alive until the garbage collector runs).
            if id(buffer) in row_buffers:
                rows.add(len(buffers))
            buffers.append(buffer)

        super().__init__(file, protocol=5, buffer_callback=take)

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is not np.ndarray or not obj.size:
            return NotImplemented
        if obj.dtype.kind == "V" and obj.dtype.fields is None:
            rows = pickle.PickleBuffer(cast(Any, np.ascontiguousarray(obj)))
            self._row_buffers[id(rows)] = rows
            return _rows_to_bytes, (rows, obj.shape, obj.dtype.itemsize)
        if obj.dtype == object:
            flat = obj.ravel().tolist()
            if set(map(type, flat)) == {bytes}:
                lengths = np.fromiter(map(len, flat), dtype=np.int64, count=len(flat))
                first = int(lengths[0])
                same: Any = first if bool((lengths == first).all()) else lengths
                blob = pickle.PickleBuffer(b"".join(flat))
                return _bytes_array, (obj.shape, blob, same)
        return NotImplemented


def _aligned_empty(size: int) -> np.ndarray[Any, Any]:
    """An uninitialised ``uint8`` array of ``size`` bytes starting on an ``_ALIGN`` boundary."""
    raw = np.empty(size + _ALIGN, np.uint8)
    start = -raw.ctypes.data % _ALIGN
    return raw[start : start + size]


def _place(raws: list[memoryview], start: int) -> tuple[list[tuple[int, int]], int]:
    """Offsets in a slot for out-of-band buffers, and the end of the last one.

    Buffers that follow each other in this process's memory (the batches of one feature
    of a chunk are consecutive rows of one array) stay back to back, in runs that each
    start on an ``_ALIGN`` boundary: the parent's copy then holds each feature's batches
    as one block again.
    """
    addresses = [np.frombuffer(raw, np.uint8).ctypes.data if raw.nbytes else 0 for raw in raws]
    spans = [(0, 0)] * len(raws)
    pos = start
    previous_end = -1
    for i in sorted(range(len(raws)), key=addresses.__getitem__):
        if addresses[i] != previous_end or not raws[i].nbytes:
            pos = -(-pos // _ALIGN) * _ALIGN  # a new run
        spans[i] = (pos, raws[i].nbytes)
        pos += raws[i].nbytes
        previous_end = addresses[i] + raws[i].nbytes
    return spans, pos


def _runs(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``(offset, size)`` spans as ``(start, stop)`` ranges, merged where at most
    ``_ALIGN`` bytes apart (one copy per run of a feature's consecutive batches)."""
    out: list[tuple[int, int]] = []
    for offset, size in sorted(s for s in spans if s[1]):
        if out and offset <= out[-1][1] + _ALIGN:
            out[-1] = (out[-1][0], max(out[-1][1], offset + size))
        else:
            out.append((offset, offset + size))
    return out


def _pack(result: list[Ready], view: np.ndarray[Any, Any], base: int, size: int) -> tuple[Any, ...]:
    buffers: list[pickle.PickleBuffer] = []
    sink = io.BytesIO()
    pickler = _Pickler(sink, buffers)
    pickler.dump(result)
    stream = sink.getbuffer()
    raws = [b.raw() for b in buffers]
    spans, pos = _place(raws, len(stream))
    if pos > size:
        return ("inline", pickle.dumps(result, protocol=5))
    view[base : base + len(stream)] = np.frombuffer(stream, dtype=np.uint8)
    for (offset, n), raw in zip(spans, raws, strict=True):
        view[base + offset : base + offset + n] = np.frombuffer(raw, dtype=np.uint8)
    return ("ok", len(stream), spans, frozenset(pickler.rows))


def _worker_main() -> None:
    """Entry point of a worker process: ``python -c ... TASK_FD RESULT_FD``."""
    # Ctrl-C is the parent's to handle; a worker ends when its task pipe closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tasks = Connection(int(sys.argv[1]), writable=False)
    results = Connection(int(sys.argv[2]), readable=False)
    try:
        _, opener, state, shm_path, slot_bytes, indexes = tasks.recv()
    except EOFError:
        return
    try:
        ds = opener(state, indexes)
        fd = os.open(shm_path, os.O_RDWR)
        try:
            shm = mmap.mmap(fd, 0)
        finally:
            os.close(fd)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises
        results.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    view = np.frombuffer(shm, dtype=np.uint8)
    results.send(("ready",))
    while True:
        try:
            message = tasks.recv()
        except EOFError:
            return
        _, slot, batches = message
        try:
            result = prepare_chunk(ds, batches)
            reply = _pack(result, view, slot * slot_bytes, slot_bytes)
        except Exception as exc:  # noqa: BLE001 - raised again in the parent
            reply = ("error", _picklable(exc))
        try:
            results.send(reply)
        except OSError:
            return
