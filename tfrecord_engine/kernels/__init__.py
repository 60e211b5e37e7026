"""Compiled loops for the two per-byte jobs of the read path (optional, with numba).

numpy handles whole arrays well but not byte-level loops whose length varies per
record. Two such loops dominate a decoded epoch of small records:

- the CRC32C of every record's payload: one ``crc32c`` call per record costs about
  0.3-0.5 µs of Python-level call overhead (argument parsing and a memoryview slice),
  whatever the record size, and holds the GIL;
- the packed varints of int64 lists whose lengths vary from record to record: about a
  dozen whole-array numpy passes over the bytes, ~40 ns per varint.

When numba is installed (a dependency of a plain install on the platforms it has
wheels for; elsewhere the ``fast`` extra asks for it), both run as compiled loops over all the
spans of a chunk in one call, without the GIL: the CRC with the CPU's CRC32C
instruction (x86-64 with SSE 4.2; elsewhere the ``crc32c`` package stays in use), the
varints byte by byte. They return exactly what the numpy paths return (differential
tests in ``tests/test_kernels.py``); without numba, or with ``TFE_KERNELS=0`` in the
environment, the numpy paths run.

numba is imported on first use, not with the package, in a background thread: until
the kernels are loaded (~0.5-1 s of one core: importing numba, then loading the
compiled code from numba's on-disk cache, ``cache=True``), the numpy paths serve. So a
new process's first batch costs what it costs without numba. Where the cache does not
hold the compiled kernels yet (a new install), that thread does not compile them
itself: it starts a detached builder process (:mod:`.warm`) that fills the cache, and
loads the kernels once the builder is done; a process that ends first ends at once,
with the numpy paths, instead of waiting for a compilation of several seconds at exit.
Callers that ask for the kernels explicitly (:func:`available`, :func:`enabled`,
:func:`wait`) still get them, compiled in this process if need be.

This module holds the switches and the wrappers of the loops (each checks its spans,
then calls the loaded kernel or returns None for the numpy path); :mod:`._loader` holds
the loading: the background thread, the fork and exit hooks, the self-test.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

import numpy as np
import numpy.typing as npt

# The loader (state, thread, fork and exit hooks, self-test); the names tests and the
# kernels' own modules reach through this package are re-exported.
from ._loader import _STATE as _STATE
from ._loader import _aligned_words as _aligned_words
from ._loader import _has_clmul_instruction as _has_clmul_instruction
from ._loader import _kernels as _kernels
from ._loader import _load as _load
from ._loader import _self_test as _self_test
from ._loader import _start, _wanted

__all__ = [
    "available",
    "can_fill_frames",
    "crc32c_spans",
    "dense_examples",
    "enabled",
    "fill_frames",
    "frame_records",
    "gather_inside",
    "gather_spans",
    "key_hashes",
    "match_lengths",
    "match_words",
    "ready",
    "switched",
    "varint_runs",
    "wait",
    "walk_records",
]

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]

#: Spans longer than this go to the ``crc32c`` package, whose three interleaved
#: streams are about twice as fast per byte as this module's single stream; below it
#: the saved call overhead wins.
CRC_MAX_MEAN_SPAN: Final = 16384


def enabled() -> bool:
    """Whether the compiled kernels are used (numba importable, ``TFE_KERNELS`` not 0).

    Waits for a load under way (see :func:`wait`); :func:`ready` asks without waiting.
    """
    return _wanted() and available()


def available() -> bool:
    """Whether numba can be imported and the kernels pass their self-test.

    Loads them (from numba's on-disk cache, or compiling) if nothing has yet.
    """
    return _load() is not None


def ready() -> bool:
    """Whether the kernels are loaded and in use *now*, without waiting.

    The first call of any kernel starts loading them in a background thread (importing
    numba and loading the compiled code costs ~0.5-1 s of one core); until they are
    ready, the numpy paths serve, giving the same results. So a new process (a spawned
    DataLoader worker, a ``tfr`` call) has its first batch as fast as without numba.
    """
    return _kernels() is not None


def wait(timeout: float | None = None) -> bool:
    """Waits until the kernels are loaded (starting the load if needed); :func:`ready`.

    Benchmarks call it before timing, so that warm figures do not mix in numpy paths.
    """
    if not _wanted():
        return False
    _start()
    loader = _STATE.get("loader")
    if loader is not None and loader is not threading.current_thread():
        loader.join(timeout)
    return ready()


@contextmanager
def switched(on: bool) -> Iterator[None]:
    """The kernels on or off inside the block, through ``TFE_KERNELS`` (read at every
    call), restored after it: for comparing the two paths (tests, benchmarks). It sets
    a process-wide environment variable, so other threads see it too.
    """
    old = os.environ.get("TFE_KERNELS")
    os.environ["TFE_KERNELS"] = "1" if on else "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["TFE_KERNELS"]
        else:
            os.environ["TFE_KERNELS"] = old


def _in_bounds(buf: U8, starts: I64, ends: I64) -> bool:
    """Whether every span ``[starts[j], ends[j])`` lies inside ``buf``.

    The compiled loops do not check indexes, so the spans are checked here (the numpy
    paths, which clip or raise as before, take any that are not).
    """
    if starts.shape[0] == 0:
        return True
    return bool(starts.min() >= 0 and (ends >= starts).all() and int(ends.max()) <= buf.shape[0])


def crc32c_spans(buf: U8, starts: I64, ends: I64) -> npt.NDArray[np.uint32] | None:
    """Unmasked CRC32C of ``buf[starts[j]:ends[j]]`` for every j, or None.

    None means "use the ``crc32c`` package": kernels disabled, no CRC instruction on
    this CPU, or spans long enough that the package is faster.
    """
    kernels = _kernels()
    if kernels is None or starts.shape[0] == 0:
        return None
    kernel: Callable[..., None] | None = kernels["crc"]
    if kernel is None:
        return None
    buf = np.ascontiguousarray(buf).reshape(-1)
    if not _in_bounds(buf, starts, ends):
        return None
    total = int(ends.sum() - starts.sum())
    if total > CRC_MAX_MEAN_SPAN * starts.shape[0]:
        return None
    base, words = _aligned_words(buf)
    out = np.empty(starts.shape[0], np.uint32)
    kernel(
        buf,
        words,
        base,
        np.ascontiguousarray(starts, np.int64),
        np.ascontiguousarray(ends, np.int64),
        out,
    )
    return out


def gather_spans(buf: U8, starts: I64, ends: I64, out: U8 | None = None) -> U8 | None:
    """``buf[starts[j]:ends[j]]`` for every j, back to back in one array, or None.

    One compiled pass without the GIL (records scattered over a shuffled epoch's copy
    of a file: the cache misses overlap). The spans go to the start of ``out`` when
    given (at least their total size; a reused buffer saves the page faults of a new
    one), else to a new array; the filled part is returned. None when the kernels are
    disabled or not loaded yet, or a span is not inside ``buf``: the caller slices.
    """
    kernels = _kernels()
    if kernels is None or starts.shape[0] == 0:
        return None
    kernel: Callable[..., None] = kernels["gather"]
    buf = np.ascontiguousarray(buf).reshape(-1)
    if not _in_bounds(buf, starts, ends):
        return None
    size = int(ends.sum() - starts.sum())
    if out is None:
        out = np.empty(size, np.uint8)
    elif out.dtype != np.uint8 or out.ndim != 1 or not out.flags.c_contiguous:
        raise ValueError("gather_spans: out must be a contiguous 1-D uint8 array")
    elif out.shape[0] < size:
        raise ValueError(f"gather_spans: out holds {out.shape[0]} bytes, the spans {size}")
    out = out[:size]
    kernel(buf, np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(ends, np.int64), out)
    return out


def gather_inside(buf: U8, starts: I64, ends: I64, size: int) -> U8 | None:
    """:func:`gather_spans` of spans a decode of ``buf`` found (so inside it: not
    checked again), totalling ``size`` bytes, into a new array; the per-call path of
    small batches (a ``RawFeature``'s values in ``__getitems__``). ``starts`` and
    ``ends`` are contiguous int64 vectors. None when the kernels are not loaded."""
    kernels = _kernels()
    if kernels is None:
        return None
    out = np.empty(size, np.uint8)
    kernels["gather"](buf, starts, ends, out)
    return out


def varint_runs(buf: U8, p_start: I64, p_end: I64) -> tuple[I64, I64, npt.NDArray[np.bool_]] | None:
    """Runs of back-to-back varints ``buf[p_start[i]:p_end[i]]`` decoded, or None.

    Returns ``(values, counts, ok)`` as :func:`lockstep.varint_runs` does, except that a
    run that is not ok (torn last varint, or one over 10 bytes) contributes no values
    and a count of 0; callers drop not-ok runs' values by their counts either way.
    None when the kernels are disabled.
    """
    kernels = _kernels()
    if kernels is None:
        return None
    kernel: Callable[..., int] = kernels["varints"]
    buf = np.ascontiguousarray(buf).reshape(-1)
    if not _in_bounds(buf, p_start, p_end):
        return None
    m = p_start.shape[0]
    total = int(p_end.sum() - p_start.sum()) if m else 0
    values = np.empty(total, np.int64)
    counts = np.empty(m, np.int64)
    ok = np.empty(m, np.bool_)
    n = kernel(
        buf,
        np.ascontiguousarray(p_start, np.int64),
        np.ascontiguousarray(p_end, np.int64),
        values,
        counts,
        ok,
    )
    return values[:n], counts, ok


def match_words(
    buf: U8,
    base: I64,
    at: I64,
    word: npt.NDArray[np.uint64],
    mask: npt.NDArray[np.uint64],
) -> npt.NDArray[np.bool_] | None:
    """Per record j: whether ``read_words(buf, base[j] + at) ^ word & mask`` is all 0.

    What template matching asks of every record (its structural bytes equal the
    template's), without the ``[m, k]`` gather; None when the kernels are disabled or a
    position falls before the buffer.
    """
    kernels = _kernels()
    if kernels is None or base.shape[0] == 0 or at.shape[0] == 0:
        return None
    if int(base.min()) + int(at.min()) < 0:
        return None
    kernel: Callable[..., None] = kernels["match"]
    ok = np.empty(base.shape[0], np.bool_)
    kernel(
        np.ascontiguousarray(buf).reshape(-1),
        np.ascontiguousarray(base, np.int64),
        np.ascontiguousarray(at, np.int64),
        np.ascontiguousarray(word, np.uint64),
        np.ascontiguousarray(mask, np.uint64),
        ok,
    )
    return ok


def match_lengths(
    buf: U8,
    base: I64,
    ok: npt.NDArray[np.bool_],
    fields: tuple[tuple[int, int, int], ...],
    delta: I64,
) -> bool:
    """Clears ``ok[j]`` unless every ``(pos, width, value)`` length field of record j
    reads ``value + delta[j]`` (its ``width`` 7-bit groups at ``base[j] + pos``).

    Returns False (nothing done) when the kernels are disabled or a field would reach
    outside the buffer: the caller checks with numpy then.
    """
    kernels = _kernels()
    if kernels is None or base.shape[0] == 0 or not fields:
        return False
    pos = np.array([f[0] for f in fields], np.int64)
    width = np.array([f[1] for f in fields], np.int64)
    value = np.array([f[2] for f in fields], np.int64)
    if int(base.min()) + int(pos.min()) < 0:
        return False
    if int(base.max()) + int((pos + width).max()) > buf.shape[0]:
        return False
    kernel: Callable[..., None] = kernels["lengths"]
    kernel(
        np.ascontiguousarray(buf).reshape(-1),
        np.ascontiguousarray(base, np.int64),
        pos,
        width,
        value,
        np.ascontiguousarray(delta, np.int64),
        ok,
    )
    return True


def walk_records(buf: U8, pos: int, max_records: int, max_bytes: int) -> tuple[I64, int] | None:
    """Record starts from ``pos`` found by their length fields, and where the walk ended.

    The walk goes on while each record (header, data, footer) fits in ``buf``, for at
    most ``max_records`` records, none starting past ``pos + max_bytes``; the caller
    checks the length CRCs. None when the kernels are disabled.
    """
    kernels = _kernels()
    if kernels is None or pos < 0:
        return None
    kernel: Callable[..., tuple[int, int]] = kernels["walk"]
    starts = np.empty(max_records, np.int64)
    count, stop = kernel(buf, pos, buf.shape[0], max_records, max_bytes, starts)
    return starts[:count], int(stop)


def frame_records(
    data: U8,
    starts: I64,
    lengths: I64,
    length_crcs: npt.NDArray[np.uint32],
    data_crcs: npt.NDArray[np.uint32],
    *,
    out: U8,
) -> bool:
    """Writes the framed stream of records ``data[starts[j]:starts[j] + lengths[j]]``.

    Headers and footers carry the given masked CRCs; ``out`` must hold exactly
    ``lengths.sum() + 16 * len(lengths)`` bytes. False (and ``out`` untouched) when the
    kernels are disabled or a record lies outside ``data``.
    """
    kernels = _kernels()
    if kernels is None or not _in_bounds(data, starts, starts + lengths):
        return False
    if out.shape[0] != int(lengths.sum()) + 16 * lengths.shape[0]:
        raise ValueError(f"frame_records: out holds {out.shape[0]} bytes, not the frames' size")
    kernel: Callable[..., None] = kernels["frame"]
    kernel(
        data,
        np.ascontiguousarray(starts, np.int64),
        np.ascontiguousarray(lengths, np.int64),
        np.ascontiguousarray(length_crcs, np.uint32),
        np.ascontiguousarray(data_crcs, np.uint32),
        out,
    )
    return True


def can_fill_frames(lengths: I64) -> bool:
    """Whether :func:`fill_frames` would frame records of these lengths (checked before
    laying them out, so that a caller that cannot use it skips the copy)."""
    kernels = _kernels()
    if kernels is None or lengths.shape[0] == 0 or kernels["fill"] is None:
        return False
    return int(lengths.sum()) <= CRC_MAX_MEAN_SPAN * int(lengths.shape[0])


def fill_frames(buf: U8, lengths: I64) -> bool:
    """Fills in the headers and footers of framed records whose data is in place.

    ``buf`` (writable) holds, back to back, record j's 12 header bytes, its
    ``lengths[j]`` data bytes and its 4 footer bytes: the framed stream with only the
    data written (``bytearray(16).join`` lays it out in one copy). One compiled pass
    writes every length, length CRC and data CRC: no per-record call, no second copy
    of the data. False (``buf`` untouched) when the kernels are disabled, the CPU has
    no CRC32C instruction, or the records are long enough that the ``crc32c`` package
    is faster.

    Raises:
        ValueError: ``buf`` is not exactly the framed size of ``lengths``.
    """
    kernels = _kernels()
    if kernels is None or lengths.shape[0] == 0:
        return False
    kernel: Callable[..., None] | None = kernels["fill"]
    if kernel is None or int(lengths.min()) < 0:
        return False
    total = int(lengths.sum())
    if buf.shape[0] != total + 16 * lengths.shape[0]:
        raise ValueError(f"fill_frames: buf holds {buf.shape[0]} bytes, not the frames' size")
    if total > CRC_MAX_MEAN_SPAN * lengths.shape[0]:
        return False
    base, words = _aligned_words(buf)
    kernel(buf, words, base, np.ascontiguousarray(lengths, np.int64))
    return True


def dense_examples(
    buf: U8,
    starts: I64,
    ends: I64,
    *,
    first: int,
    total: int,
    plan: tuple[I64, I64, npt.NDArray[np.int8], I64, I64, U8, npt.NDArray[np.uint64]],
    table_hash: npt.NDArray[np.uint64],
    keys: U8,
    defaults: I64,
    ints: I64,
    floats: npt.NDArray[np.uint32],
) -> npt.NDArray[np.bool_] | None:
    """Decodes fixed-size int64 / float32 features of the Examples at ``buf[starts:ends]``
    (records ``first``.. of a batch of ``total``) into ``ints`` / ``floats``
    (``tfrecord_engine.example.dense`` lays them out); returns per record whether it
    was left to the exact path. None when the kernels are disabled or a span lies
    outside ``buf``.
    """
    kernels = _kernels()
    if kernels is None:
        return None
    if first < 0 or first + starts.shape[0] > total:
        raise ValueError(f"dense_examples: records {first}.. of {total} do not fit")
    buf = np.ascontiguousarray(buf).reshape(-1)
    if not _in_bounds(buf, starts, ends):
        return None
    kernel: Callable[..., None] = kernels["dense"]
    fallback = np.empty(starts.shape[0], np.bool_)
    kernel(
        buf,
        np.ascontiguousarray(starts, np.int64),
        np.ascontiguousarray(ends, np.int64),
        first,
        total,
        plan,
        table_hash,
        keys,
        defaults,
        ints,
        floats,
        fallback,
    )
    return fallback


def key_hashes(keys: list[bytes]) -> tuple[npt.NDArray[np.uint64], I64] | None:
    """The hash and the filter mark (the hash's top 12 bits) :func:`dense_examples`
    computes of each key, or None when the kernels are disabled.
    """
    kernels = _kernels()
    if kernels is None:
        return None
    hashes = np.empty(len(keys), np.uint64)
    for j, key in enumerate(keys):
        hashes[j] = kernels["hash"](np.frombuffer(key, np.uint8), 0, len(key))
    return hashes, (hashes >> np.uint64(52)).astype(np.int64)
