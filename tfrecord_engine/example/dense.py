"""Compiled decoding of wide Examples whose spec holds only FixedLenFeatures.

Feature-store and recommender exports carry hundreds of scalar features per record, and
a spec may select any number of them. The template decoder (:mod:`.template`) needs
records that share a layout, which varints of varying widths break, and the lockstep
walk (:mod:`.lockstep`) pays numpy calls per feature; both cost far more than the bytes.
Here one compiled loop (:func:`tfrecord_engine.kernels.dense_examples`) walks each
record's feature map once: it hashes every key from its length and first and last 8
bytes, drops most unselected ones by a 4,096-entry table of the selected keys' marks,
looks the rest up in an open-addressing table of the selected keys (then compared as
words), skips unselected entries by their length without decoding them, and
decodes the selected ones' packed values straight into their output rows; a missing
feature takes its default. One buffer per dtype holds every feature's output, each a
contiguous ``[n, *shape]`` view. String features get each value's span in the records'
buffer from the loop; their ``bytes`` objects are then made by one call per chunk for
every string feature at once (:func:`.lists.bytes_objects`), in record order.

Records the loop does not take whole (unpacked or concatenated lists, duplicate keys,
unusual layouts, or anything that is an error) are decoded by the exact per-record
path (:mod:`.records`); where that finds an error, :class:`NeedsExact` tells the caller
to parse the batch with :func:`~.parse.parse_example`, which raises TensorFlow's error.
Without numba (or with ``TFE_KERNELS=0``) there is no plan and the callers keep their
numpy paths.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..errors import TFRecordError
from ..kernels.threads import EPOCH_CHUNK, ThreadFlag, in_loader_worker
from .lists import bytes_objects
from .records import Request, decode_requests
from .specs import FeatureSpec, FixedLenFeature
from .string_rows import string_rows
from .wire import KIND_BYTES, KIND_FLOAT, KIND_INT64, Duplicates, example_feature_map

__all__ = [
    "DensePlan",
    "NeedsExact",
    "eligible",
    "on_calling_thread",
    "pool_threads",
    "usable_cores",
]

I64 = npt.NDArray[np.int64]
#: A chunk of a batch: ``(buf, starts, ends, first)``, records ``first``.. at ``buf[starts:ends]``.
Chunk = tuple[npt.NDArray[np.uint8], I64, I64, int]
#: Bytes of records joined and walked at a time by :meth:`DensePlan.decode_records`.
CHUNK_BYTES = 1 << 20
#: Threads that decode the chunks of one big batch at once (at most the usable cores).
MAX_THREADS = 4
#: The threads walk a batch's chunks only where the kernel's CPU time per
#: :data:`CHUNK_BYTES` of records (measured per plan, as it decodes) is at least this
#: many seconds; below it the calling thread walks them one after the other. Measured
#: on 2 cores: tabular records (0.45 ms) decoded 1.02-1.40x faster without the pool
#: (``benchmarks.bench_dense_pool``); so did image records (0.04 ms: an encoded image
#: and a label) called directly (``parse_example`` of 4,096: 8.2-11.9 ms with it,
#: 6.4-6.7 ms without; ``__getitems__(256)``: 1.19 against 0.78-0.80 ms). Records of
#: 200 scalar features, a third of them strings (0.82 ms), keep it. In an epoch's
#: chunk (:data:`~tfrecord_engine.kernels.threads.EPOCH_CHUNK`) a spec with strings
#: keeps the pool whatever its kernel costs: there the next chunk's walk overlaps the
#: ``bytes`` objects of this one (made under the GIL) while the caller's thread takes
#: batches, and without it ``tfrecord_engine.torch`` epochs of image records ran at
#: 0.71-0.79x the protobuf ``Dataset`` against 1.34-1.45x with it (the matrix's
#: sequence of rows; alone, the two measured alike).
POOL_MIN_KERNEL_S = 0.0007

_SERIAL = ThreadFlag()


def on_calling_thread() -> contextlib.AbstractContextManager[None]:
    """Within it, the dense decodes of this thread walk their chunks on this thread.

    For callers that already decode on several threads at once (an epoch's read-ahead
    threads) where those threads' pools together would outnumber the cores
    (:func:`pool_threads`): they would only compete for them.
    """
    return _SERIAL.set()


class NeedsExact(Exception):
    """The batch holds an error (or a record the plan cannot place): parse it exactly."""


def eligible(features: Mapping[str, FeatureSpec]) -> bool:
    """Whether every spec is a :class:`FixedLenFeature` (and some exist)."""
    return bool(features) and all(type(f) is FixedLenFeature for f in features.values())


@dataclass(frozen=True)
class _Slot:
    name: str
    kind: int
    count: int
    shape: tuple[int, ...]
    col: int  # first column in its dtype's buffer (strings: 2 int64 words per value)
    default: int  # start of the default in the buffer's tail (relative), or -1

    @property
    def words(self) -> int:
        """Words of its buffer per record (a string value's span takes two)."""
        return 2 * self.count if self.kind == KIND_BYTES else self.count


class DensePlan:
    """The compiled plan of one spec (build with :meth:`of`; cache it with the spec).

    Example:
        >>> from tfrecord_engine.example.encode import encode_example
        >>> from tfrecord_engine.example.batch import join_records
        >>> plan = DensePlan.of({"x": FixedLenFeature([], "int64", default_value=0)})
        >>> out = plan.decode(*join_records([encode_example({"x": 3}), b""])) if plan else None
        >>> out is None or out["x"].tolist() == [3, 0]
        True
    """

    def __init__(self, features: Mapping[str, FeatureSpec], requests: Mapping[str, Request]):
        self._requests = dict(requests)
        slots: list[_Slot] = []
        cols = {KIND_INT64: 0, KIND_FLOAT: 0, KIND_BYTES: 0}
        int_defaults: list[int] = []
        float_defaults: list[float] = []
        #: String defaults' values; a default's span in ``ints`` is ``-1 - index`` twice.
        self._str_defaults: list[bytes] = []
        for name, spec in features.items():
            assert isinstance(spec, FixedLenFeature)
            kind = _kind(spec)
            count = math.prod(spec.shape)
            default = -1
            # TensorFlow treats a default with no elements as no default.
            if spec.default_value:
                if kind == KIND_FLOAT:
                    default = len(float_defaults)
                    float_defaults.extend(spec.default_value)
                else:
                    default = len(int_defaults)
                    if kind == KIND_INT64:
                        int_defaults.extend(spec.default_value)
                    else:
                        for value in spec.default_value:
                            mark = -1 - len(self._str_defaults)
                            self._str_defaults.append(value)
                            int_defaults += [mark, mark]
            slots.append(_Slot(name, kind, count, spec.shape, cols[kind], default))
            cols[kind] += 2 * count if kind == KIND_BYTES else count
        # String spans after every int64 column, in the same buffer.
        slots = [
            s if s.kind != KIND_BYTES else replace(s, col=s.col + cols[KIND_INT64]) for s in slots
        ]
        self._slots = slots
        self._strings = [s for s in slots if s.kind == KIND_BYTES]
        self._cols = cols
        self._int_defaults = np.array(int_defaults, np.int64)
        self._float_defaults = np.array(float_defaults, np.float32).view(np.uint32)
        keys = [name.encode("utf-8") for name in features]
        hashed = kernels.key_hashes(keys)
        assert hashed is not None
        hashes, key_marks = hashed
        marks = np.zeros(4096, np.uint8)
        marks[key_marks] = 1
        size = 8
        while size < 2 * len(keys):
            size *= 2
        table = np.full(size, -1, np.int64)
        table_hash = np.zeros(size, np.uint64)
        for s, h in enumerate(hashes.tolist()):
            idx = h & (size - 1)
            while table[idx] >= 0:
                idx = (idx + 1) & (size - 1)
            table[idx] = s
            table_hash[idx] = h
        self._table_hash = table_hash
        self._keys = np.frombuffer(b"".join(keys), np.uint8)
        #: The kernel's CPU seconds per record byte, a running mean (None: not measured).
        self._kernel_cost: float | None = None
        self._plan = (
            table,
            np.cumsum([0] + [len(k) for k in keys], dtype=np.int64),
            np.array([s.kind for s in slots], np.int8),
            np.array([s.words for s in slots], np.int64),
            np.array([s.col for s in slots], np.int64),
            marks,
            np.array([w for key in keys for w in _key_words(key)], np.uint64),
        )

    @classmethod
    def of(
        cls, features: Mapping[str, FeatureSpec], requests: Mapping[str, Request] | None = None
    ) -> DensePlan | None:
        """The plan of ``features``, or None if not :func:`eligible` or kernels are off."""
        if not eligible(features) or not kernels.ready():
            return None
        if requests is None:
            requests = {
                name: Request(name, name.encode("utf-8"), _kind(spec), "dense", counted=False)
                for name, spec in features.items()
            }
        return cls(features, requests)

    def decode(
        self, buf: npt.NDArray[np.uint8], starts: I64, ends: I64
    ) -> dict[str, npt.NDArray[Any]] | None:
        """Outputs of the Examples ``buf[starts[i]:ends[i]]``, as ``parse_example`` gives.

        Returns None when the kernel cannot run (kernels disabled, spans outside ``buf``).

        Raises:
            NeedsExact: the batch holds an error; the exact path raises it.
        """
        out = self.decode_counted(buf, starts, ends)
        return None if out is None else out[0]

    def decode_counted(
        self, buf: npt.NDArray[np.uint8], starts: I64, ends: I64, *, rows: bool = False
    ) -> tuple[dict[str, npt.NDArray[Any]], int] | None:
        """:meth:`decode`, with how many records the exact per-record path decoded.

        With ``rows``, string features come as :mod:`.string_rows` where every value of
        the batch allows (the kernel took every record, no value was a default, none
        pads too wide), else as ``bytes`` objects.
        """
        mv = buf.data

        def record(i: int) -> bytes:
            return mv[int(starts[i]) : int(ends[i])].tobytes()

        bounds = _chunk_bounds(ends - starts)

        def chunk(k: int) -> Chunk:
            a, b = bounds[k], bounds[k + 1]
            return buf, starts[a:b], ends[a:b], a

        return self._run(
            int(starts.shape[0]), len(bounds) - 1, chunk, record, rows_of=buf if rows else None
        )

    def decode_records(
        self, records: Sequence[bytes]
    ) -> tuple[dict[str, npt.NDArray[Any]], int] | None:
        """:meth:`decode_counted` of a list of serialized Examples.

        They are joined into buffers of about :data:`CHUNK_BYTES`, one at a time, each
        by the thread that walks it right after, so each is walked while still in that
        core's cache (a wide record may be tens of KB; a batch joined ahead of its walk
        would be read back from memory).
        """
        n = len(records)
        lengths = np.fromiter(map(len, records), np.int64, n)
        bounds = _chunk_bounds(lengths)

        def chunk(k: int) -> Chunk:
            a, b = bounds[k], bounds[k + 1]
            ends = np.cumsum(lengths[a:b])
            return np.frombuffer(b"".join(records[a:b]), np.uint8), ends - lengths[a:b], ends, a

        return self._run(n, len(bounds) - 1, chunk, records.__getitem__)

    def _run(
        self,
        n: int,
        count: int,
        chunk: Callable[[int], Chunk],
        record: Callable[[int], bytes],
        rows_of: npt.NDArray[np.uint8] | None = None,
    ) -> tuple[dict[str, npt.NDArray[Any]], int] | None:
        """Runs the kernel over chunks ``chunk(0)``.. ``chunk(count - 1)`` of ``n`` records
        (on the thread pool when there are several and the kernel costs enough, see
        :meth:`_pool_for`: each made by the thread walking it). ``rows_of``: the one
        buffer of every chunk, whose string values may stay rows (see
        :meth:`decode_counted`): they are made after every walk."""
        n_int = n * (self._cols[KIND_INT64] + self._cols[KIND_BYTES])
        n_float = n * self._cols[KIND_FLOAT]
        ints = np.empty(n_int + self._int_defaults.shape[0], np.int64)
        ints[n_int:] = self._int_defaults
        floats = np.empty(n_float + self._float_defaults.shape[0], np.uint32)
        floats[n_float:] = self._float_defaults
        defaults = np.array(
            [
                -1 if s.default < 0 else s.default + (n_float if s.kind == KIND_FLOAT else n_int)
                for s in self._slots
            ],
            np.int64,
        )
        fallback = np.zeros(n, np.bool_)
        strings = {s.name: np.empty(n * s.count, object) for s in self._strings}
        # The kernel's cost decides whether the pool walks the chunks (see _pool_for).
        measure = count > 1

        def walk(k: int) -> bool:
            buf, starts, ends, first = chunk(k)
            began = time.thread_time() if measure else 0.0
            done = kernels.dense_examples(
                buf,
                starts,
                ends,
                first=first,
                total=n,
                plan=self._plan,
                table_hash=self._table_hash,
                keys=self._keys,
                defaults=defaults,
                ints=ints,
                floats=floats,
            )
            if done is None:
                return False
            if measure:
                self._measured(time.thread_time() - began, int((ends - starts).sum()))
            fallback[first : first + done.shape[0]] = done
            if strings and rows_of is None:
                self._make_strings(buf, ints, strings, first, done, n)
            return True

        # The kernel releases the GIL, and chunks write disjoint rows: big batches of
        # costly records use every core, as TensorFlow's parse_example does.
        pool = self._pool_for(count)
        if not all(map(walk, range(count)) if pool is None else pool.map(walk, range(count))):
            return None
        if strings and rows_of is not None:
            rows = None if fallback.any() else self._string_rows(rows_of, ints, n)
            if rows is None:
                self._make_strings(rows_of, ints, strings, 0, fallback, n)
            else:
                strings = rows
        fvalues = floats.view(np.float32)
        out: dict[str, npt.NDArray[Any]] = {}
        for s in self._slots:
            if s.kind == KIND_BYTES:
                out[s.name] = strings[s.name].reshape((n, *s.shape))
                continue
            data = ints if s.kind == KIND_INT64 else fvalues
            out[s.name] = data[s.col * n : (s.col + s.count) * n].reshape((n, *s.shape))
        slow = np.flatnonzero(fallback)
        if slow.size:
            self._exact_records(record, slow, out)
        return out, int(slow.size)

    def _measured(self, seconds: float, size: int) -> None:
        """Adds a kernel run of ``seconds`` (CPU time) over ``size`` bytes to the mean."""
        if size <= 0:
            return
        cost = seconds / size
        # (Threads may race here: a lost update only slows the mean down.)
        before = self._kernel_cost
        self._kernel_cost = cost if before is None else before + (cost - before) / 4

    def _pool_for(self, count: int) -> concurrent.futures.ThreadPoolExecutor | None:
        """The pool to walk ``count`` chunks on, or None: on the calling thread (one
        chunk, inside :func:`on_calling_thread`, in a PyTorch ``DataLoader`` worker, or
        a spec whose kernel is too cheap for the pool, see :data:`POOL_MIN_KERNEL_S`,
        except a spec with strings in an epoch's chunk; before the first measurement
        the pool is used).

        A loader's workers are processes decoding side by side already (PyTorch keeps
        its own ops to one thread there): a pool in each only hands chunks between
        threads that compete for the same cores (a batch of 256 image records in a
        worker: 1.07 ms with the pool, 0.71 ms without)."""
        if count < 2 or _SERIAL.on or in_loader_worker():
            return None
        cost = self._kernel_cost
        if self._strings and EPOCH_CHUNK.on:
            return _pool()  # (an epoch's chunk: see POOL_MIN_KERNEL_S)
        if cost is not None and cost * CHUNK_BYTES < POOL_MIN_KERNEL_S:
            return None
        return _pool()

    def _make_strings(  # noqa: PLR0917
        self,
        buf: npt.NDArray[np.uint8],
        ints: I64,
        strings: dict[str, npt.NDArray[Any]],
        first: int,
        fallback: npt.NDArray[np.bool_],
        n: int,
    ) -> None:
        """The ``bytes`` of records ``first``.. (``fallback.shape[0]`` of them) of every
        string feature, from the spans the kernel wrote, into ``strings`` (one call for
        all features: records the kernel left get theirs from the exact path later)."""
        m = int(fallback.shape[0])
        width = sum(s.count for s in self._strings)
        if m == 0 or width == 0:
            return  # (no values: the outputs are empty)
        spans = self._string_spans(ints, n, first, m)
        spans[fallback] = 0  # (their words were never written)
        vs, ve = spans[..., 0], spans[..., 1]
        defaulted = vs < 0
        if defaulted.any():
            marks = vs[defaulted]
            vs[defaulted] = ve[defaulted] = 0
        values = bytes_objects(buf, vs.reshape(-1), ve.reshape(-1)).reshape(m, width)
        if defaulted.any():
            chosen = np.empty(marks.shape[0], object)
            chosen[:] = [self._str_defaults[-1 - int(v)] for v in marks.tolist()]
            values[defaulted] = chosen
        for s, columns in self._by_feature(values):
            strings[s.name].reshape(n, s.count)[first : first + m] = columns

    def _string_rows(
        self, buf: npt.NDArray[np.uint8], ints: I64, n: int
    ) -> dict[str, npt.NDArray[Any]] | None:
        """Every string feature's values as :mod:`.string_rows` (flat, ``n * count``
        each), or None where one is a default or pads too wide.

        The rows of all string features are one array ``[n, values a record]`` of one
        width, each feature's its columns: a consumer takes a batch of all of them as
        one block (the tf.data bridge: one buffer, no step per feature).
        """
        if n == 0:
            return None  # (no values: the objects' empty arrays)
        spans = self._string_spans(ints, n, 0, n).reshape(-1, 2)
        if spans.shape[0] and int(spans[:, 0].min()) < 0:
            return None  # (a default: its value is not in the records)
        rows = string_rows(buf, spans)
        if rows is None:
            return None
        return {s.name: columns for s, columns in self._by_feature(rows.reshape(n, -1))}

    def _string_spans(self, ints: I64, n: int, first: int, m: int) -> I64:
        """The spans the kernel wrote for records ``first``.. (``m`` of them) of every
        string feature, as one new array ``[m, values a record, 2]``, the features'
        values side by side in spec order (see :meth:`_by_feature`)."""
        blocks = []
        for s in self._strings:
            at = s.col * n + first * s.words
            blocks.append(ints[at : at + m * s.words].reshape(m, s.count, 2))
        return np.concatenate(blocks, axis=1) if len(blocks) > 1 else blocks[0].copy()

    def _by_feature(self, table: npt.NDArray[Any]) -> Iterator[tuple[_Slot, npt.NDArray[Any]]]:
        """Each string feature with its columns of ``table`` (``[records, values a
        record]``, as :meth:`_string_spans` lays them out)."""
        at = 0
        for s in self._strings:
            yield s, table[:, at : at + s.count]
            at += s.count

    def _exact_records(
        self,
        record: Callable[[int], bytes],
        which: npt.NDArray[np.intp],
        out: dict[str, npt.NDArray[Any]],
    ) -> None:
        """Decodes records the kernel left, one by one, into their output rows."""
        for i in which.tolist():
            data = record(i)
            dups = Duplicates()
            try:
                fmap = example_feature_map(data, dups)
                row = decode_requests(data, fmap, dups, self._requests, i)
            except (TFRecordError, ValueError) as exc:
                raise NeedsExact from exc
            for s in self._slots:
                values = row[s.name]
                if s.count == 0:
                    if values is None and s.default < 0:
                        raise NeedsExact  # required but missing
                    if values is not None and len(values):
                        raise NeedsExact  # a wrong number of values
                    continue
                target = out[s.name].reshape(-1, s.count)
                if values is None:
                    if s.default < 0:
                        raise NeedsExact  # required but missing
                    if s.kind == KIND_BYTES:
                        words = self._int_defaults[s.default : s.default + 2 * s.count]
                        target[i] = [self._str_defaults[-1 - int(v)] for v in words[::2]]
                        continue
                    spec_default = (
                        self._int_defaults if s.kind == KIND_INT64 else self._float_defaults
                    )
                    default = spec_default[s.default : s.default + s.count]
                    target[i] = default if s.kind == KIND_INT64 else default.view(np.float32)
                elif len(values) != s.count:
                    raise NeedsExact  # a wrong number of values
                else:
                    target[i] = values


def _chunk_bounds(lengths: I64) -> list[int]:
    """Record boundaries of chunks of about :data:`CHUNK_BYTES` (at least one record each)."""
    n = int(lengths.shape[0])
    cuts = np.flatnonzero(np.diff(np.cumsum(lengths) // CHUNK_BYTES)) + 1
    return [0, *cuts.tolist(), n]


_POOL: list[concurrent.futures.ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()


def _forget_pool() -> None:
    """In a forked child: the parent's pool has no threads here (a ``map`` on it would
    wait forever, e.g. in a DataLoader worker), and its lock may have been held at the
    fork. The child makes its own on first use."""
    global _POOL_LOCK  # noqa: PLW0603 - one module-wide lock, replaced after fork
    _POOL.clear()
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def pool_threads() -> int:
    """The threads of the pool that walks chunks of one batch at once (0 on one core)."""
    cores = usable_cores()
    return 0 if cores < 2 else min(cores, MAX_THREADS)


def _pool() -> concurrent.futures.ThreadPoolExecutor | None:
    """The threads that walk chunks of one batch at once (None on a single core)."""
    threads = pool_threads()
    if threads == 0:
        return None
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(
                concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="tfe-dense")
            )
        return _POOL[0]


def _key_words(key: bytes) -> tuple[int, int]:
    """The kernel's two words of a key: its first (up to) 8 bytes and, if it is longer
    than 8, its last 8, little-endian (bytes past the key read as 0)."""
    return int.from_bytes(key[:8], "little"), int.from_bytes(key[-8:], "little") if len(
        key
    ) > 8 else 0


def _kind(spec: FeatureSpec) -> int:
    assert isinstance(spec, FixedLenFeature)
    return {"int64": KIND_INT64, "float32": KIND_FLOAT}.get(spec.dtype, KIND_BYTES)
