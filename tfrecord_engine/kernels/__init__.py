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
"""

from __future__ import annotations

import atexit
import os
import platform
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

import numpy as np
import numpy.typing as npt

__all__ = [
    "available",
    "can_fill_frames",
    "crc32c_spans",
    "dense_examples",
    "enabled",
    "fill_frames",
    "frame_records",
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

_LOCK = threading.Lock()  # held while loading
_START_LOCK = threading.Lock()  # held while starting the loader thread
_STATE: dict[str, Any] = {}

#: How long a fork or the interpreter's exit waits for a load under way (seconds).
_JOIN_TIMEOUT: Final = 120.0
#: How often the background loader looks whether a builder process is done (seconds).
_POLL: Final = 0.2
#: How long a builder just started may take to show itself (its lock file, seconds).
_BUILDER_GRACE: Final = 30.0
_EXITING = threading.Event()  # set at exit: a loader waiting for a builder gives up
# The loader's phase (``_STATE["phase"]``): "loading" while it runs numba's or LLVM's
# code (importing numba, loading or compiling: a fork or the exit must wait for that),
# "waiting" while it only waits for a builder process. Changes are announced on it.
_PHASE = threading.Condition()
_FORKING = [False]


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


def _wanted() -> bool:
    return os.environ.get("TFE_KERNELS", "1") != "0"


def _kernels() -> dict[str, Any] | None:
    """The loaded kernels, or None (disabled, unavailable, or still loading).

    Never blocks on the load: it starts it in the background on the first call.
    """
    if not _wanted():
        return None
    if "kernels" not in _STATE:
        if "loader" not in _STATE:
            _start()
        return None
    kernels: dict[str, Any] | None = _STATE["kernels"]
    return kernels


def _start() -> None:
    with _START_LOCK:
        if "kernels" in _STATE or "loader" in _STATE:
            return
        loader = threading.Thread(target=_background, name="tfrecord-engine-kernels", daemon=True)
        _STATE["loader"] = loader
        loader.start()


def _load() -> dict[str, Any] | None:
    """Loads the kernels in this thread (or waits for the loader), once per process."""
    with _LOCK:
        if "kernels" not in _STATE:
            _STATE["kernels"] = _compile()
            if _STATE["kernels"] is not None:
                _mark_warm()
        kernels: dict[str, Any] | None = _STATE["kernels"]
        return kernels


def _mark_warm() -> None:
    from . import warm  # noqa: PLC0415 - numba is imported by now

    warm.mark_warm()


def _background() -> None:
    """The loader thread: loads the kernels from numba's cache where it holds them;
    where it does not, starts a builder process (:mod:`.warm`) and loads them once the
    builder is done, unless the process exits (or the builder fails) first."""
    try:
        _set_phase("loading")
        try:
            from . import warm  # noqa: PLC0415 - numba on first use only

            place = warm.locate()
        except (ImportError, OSError):
            place = None  # no numba (or no LLVM): _load finds that out and says None
        if place is None or place.is_warm():
            _load()
            return
        started = warm.start_builder(place)
        if not started and not place.builder_running():
            _load()  # no process could be started: compile here, as a last resort
            return
        # A builder just started takes its lock within moments; one that never does
        # (it could not even import) is given up on after this grace.
        grace = time.monotonic() + (_BUILDER_GRACE if started else 0.0)
        _set_phase("waiting")
        while True:
            with _PHASE:
                if _EXITING.is_set():
                    return  # the numpy paths served this process to its end
                ready = place.is_warm() and not _FORKING[0]
                if ready:
                    _STATE["phase"] = "loading"
                    _PHASE.notify_all()
            if ready:
                _load()
                return
            running = place.builder_running() or time.monotonic() < grace
            if not running and not place.is_warm():
                with _LOCK:  # the builder failed: the numpy paths serve this process
                    _STATE.setdefault("kernels", None)
                return
            _EXITING.wait(_POLL)
    finally:
        _set_phase("done")


def _set_phase(phase: str) -> None:
    with _PHASE:
        if phase == "loading":  # never start numba's code while a fork is under way
            _PHASE.wait_for(lambda: not _FORKING[0])
        _STATE["phase"] = phase
        _PHASE.notify_all()


def _join_loader() -> None:
    """Lets a load under way finish: before a fork (a child must not inherit numba's
    or LLVM's locks held by a thread it does not have) and at exit (LLVM's native code
    must not run while the interpreter and its libraries are torn down). A loader that
    is only waiting for a builder process runs no such code: it is not waited for (at
    exit it stops waiting)."""
    loader = _STATE.get("loader")
    if loader is None or loader is threading.current_thread():
        return
    with _PHASE:
        _PHASE.wait_for(
            lambda: not loader.is_alive() or _STATE.get("phase") != "loading", _JOIN_TIMEOUT
        )
    if _EXITING.is_set():
        loader.join(_JOIN_TIMEOUT)


def _before_fork() -> None:
    with _PHASE:
        _FORKING[0] = True
    _join_loader()


def _after_fork_in_parent() -> None:
    with _PHASE:
        _FORKING[0] = False
        _PHASE.notify_all()


def _forget_loader() -> None:
    """In a forked child: a load the parent had not finished (its wait timed out, or it
    was waiting for a builder) is started again here on first use, rather than waited
    for forever."""
    _FORKING[0] = False
    if "kernels" not in _STATE:
        _STATE.pop("loader", None)
        _STATE.pop("phase", None)


def _at_exit() -> None:
    """At exit: lets a load under way finish, then drops the loaded kernels (whatever
    still runs falls back to the numpy paths). Without that, a script that imported
    PyTorch and died of an uncaught exception printed one "Exception ignored in
    ObjectRef.__del__" traceback per piece of numba's code, as llvmlite met its own
    modules torn down (tests/torch/test_exit.py)."""
    _EXITING.set()
    _join_loader()
    loader = _STATE.get("loader")
    if loader is None or not loader.is_alive():
        _STATE["kernels"] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_forget_loader
    )
atexit.register(_at_exit)


def _has_crc_instruction() -> bool:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    import llvmlite.binding as llvm  # noqa: PLC0415 - only where numba is installed

    return "+sse4.2" in llvm.get_host_cpu_features().flatten().split(",")


def _has_clmul_instruction() -> bool:
    import llvmlite.binding as llvm  # noqa: PLC0415 - only where numba is installed

    return "+pclmul" in llvm.get_host_cpu_features().flatten().split(",")


def _crc_kernel(compiled: Any, errors: tuple[type[Exception], ...]) -> Any:
    """The CRC kernel of a CPU with the CRC32C instruction: spans of 64 bytes or more by
    carry-less folding where the CPU has PCLMULQDQ and the folded kernel gives the
    plain kernel's answers on a probe (every span length 0-300 of random bytes, at
    every alignment), else the CRC instruction alone.
    """
    if not _has_clmul_instruction():
        return compiled.crc_spans
    rng = np.random.default_rng(20_240_229)
    probe = rng.integers(0, 256, 320, dtype=np.uint8)
    starts = np.arange(301, dtype=np.int64) % 16
    ends = starts + np.arange(301, dtype=np.int64)
    base, words = _aligned_words(probe)
    folded, plain = np.zeros(301, np.uint32), np.ones(301, np.uint32)
    try:
        compiled.crc_spans_folded(probe, words, base, starts, ends, folded)
        compiled.crc_spans(probe, words, base, starts, ends, plain)
    except errors:
        return compiled.crc_spans
    return compiled.crc_spans_folded if np.array_equal(folded, plain) else compiled.crc_spans


def _compile() -> dict[str, Any] | None:
    try:
        from . import _numba as compiled  # noqa: PLC0415 - numba on first use only
    except (ImportError, OSError):
        # Not installed, or installed but its LLVM library cannot be loaded (seen under
        # an address-space limit): the numpy paths serve, only slower.
        return None
    kernels = {
        "crc": _crc_kernel(compiled, compiled.CompileErrors) if _has_crc_instruction() else None,
        "fill": compiled.fill_frames if _has_crc_instruction() else None,
        "varints": compiled.varint_runs,
        "match": compiled.match_words_loaded,
        "lengths": compiled.match_lengths,
        "walk": compiled.walk_records,
        "frame": compiled.frame_records,
        "dense": compiled.dense_examples,
        "hash": compiled.key_hash,
        "gather": compiled.gather_spans,
    }
    if not _self_test(kernels, compiled.CompileErrors):
        return None
    from . import _sequence  # noqa: PLC0415 - SequenceExample loops (each None if it failed)

    kernels.update(_sequence.load(compiled.CompileErrors))
    from . import _examples  # noqa: PLC0415 - the walk of Examples (each None if it failed)

    kernels.update(_examples.load(compiled.CompileErrors))
    from . import _single  # noqa: PLC0415 - ds[i]'s one-record walk (None if it failed)

    kernels.update(_single.load(compiled.CompileErrors))
    return kernels


def _self_test(kernels: dict[str, Any], errors: tuple[type[Exception], ...]) -> bool:
    """Compiles (or loads from the cache) each kernel and checks it on known answers."""
    probe = np.frombuffer(b"123456789" + b"\xac\x02\x01", np.uint8)
    try:
        crc = kernels["crc"]
        if crc is not None:
            out = np.zeros(1, np.uint32)
            base, words = _aligned_words(probe)
            crc(probe, words, base, np.array([0]), np.array([9]), out)
            if int(out[0]) != 0xE3069283:  # CRC32C("123456789"), the standard check value
                return False
        values, counts, ok = np.zeros(3, np.int64), np.zeros(1, np.int64), np.zeros(1, np.bool_)
        n = kernels["varints"](probe, np.array([9]), np.array([12]), values, counts, ok)
        matched = np.zeros(2, np.bool_)
        kernels["match"](
            probe,
            np.array([0, 1]),
            np.array([8]),
            np.array([0x0102AC39], np.uint64),  # "9", 0xAC, 0x02, 0x01 at offset 8
            np.array([0xFFFFFFFF], np.uint64),
            matched,
        )
        # 300 (0xAC 0x02) at offset 9 of record 0, read as 299 + delta 1.
        lengths_ok = np.ones(1, np.bool_)
        kernels["lengths"](
            probe,
            np.array([0]),
            np.array([9]),
            np.array([2]),
            np.array([299]),
            np.array([1]),
            lengths_ok,
        )
        walked = np.zeros(4, np.int64)
        # Two records of 0 and 1 bytes, then a length that does not fit.
        framed = np.frombuffer(bytes(16) + b"\x01" + bytes(15) + b"\xff" * 20, np.uint8)
        walk = kernels["walk"](framed, 0, framed.shape[0], 4, 1 << 20, walked)
        gathered = np.zeros(5, np.uint8)
        kernels["gather"](probe, np.array([9, 1]), np.array([12, 3]), gathered)
        framed_out = np.zeros(17, np.uint8)
        kernels["frame"](
            probe,
            np.array([0]),
            np.array([1]),
            np.array([7], np.uint32),
            np.array([9], np.uint32),
            framed_out,
        )
        filled = np.frombuffer(bytearray(12) + b"hello" + bytearray(4), np.uint8)
        if kernels["fill"] is not None:
            base, words = _aligned_words(filled)
            kernels["fill"](filled, words, base, np.array([5]))
        dense_out = np.zeros(3, np.int64)
        dense_fallback = np.ones(2, np.bool_)
        # Example {"x": [5]} (then an empty record, which takes the default 7); the
        # table's one entry is x's hash, looked up by the kernel's own hash function.
        example = np.frombuffer(b"\x0a\x0c\x0a\x0a\x0a\x01x\x12\x05\x1a\x03\x0a\x01\x05", np.uint8)
        dense_out[2] = 7
        h = kernels["hash"](np.frombuffer(b"x", np.uint8), 0, 1)
        marks = np.zeros(4096, np.uint8)
        marks[int(h >> np.uint64(52))] = 1
        table_hash = np.zeros(2, np.uint64)
        table = np.full(2, -1, np.int64)
        table[int(h % np.uint64(2))] = 0
        table_hash[int(h % np.uint64(2))] = h
        kernels["dense"](
            example,
            np.array([0, 14]),
            np.array([14, 14]),
            0,
            2,
            (
                table,
                np.array([0, 1]),
                np.array([3], np.int8),
                np.array([1]),
                np.array([0]),
                marks,
                np.array([ord("x"), 0], np.uint64),
            ),
            table_hash,
            np.frombuffer(b"x", np.uint8),
            np.array([2]),
            dense_out,
            np.zeros(0, np.uint32),
            dense_fallback,
        )
    except errors:
        return False
    if kernels["fill"] is not None and filled.tobytes().hex() != (
        "0500000000000000eab2043e68656c6c6fbb1f1c19"  # framing.frame(b"hello")
    ):
        return False
    if gathered.tobytes() != b"\xac\x02\x0123":
        return False
    if dense_out.tolist() != [5, 7, 7] or dense_fallback.tolist() != [False, False]:
        return False
    if framed_out.tolist() != [1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0x31, 9, 0, 0, 0]:
        return False
    if tuple(walk) != (2, 33) or walked[:2].tolist() != [0, 16]:
        return False
    return bool(
        n == 2
        and values[:2].tolist() == [300, 1]
        and ok[0]
        and matched.tolist() == [True, False]
        and bool(lengths_ok[0])
    )


def _aligned_words(buf: U8) -> tuple[int, npt.NDArray[np.uint64]]:
    """``(base, words)``: ``words[k]`` is the 8 bytes at ``buf[base + 8 * k]``, aligned."""
    base = -buf.ctypes.data % 8
    base = min(base, buf.shape[0])
    count = (buf.shape[0] - base) // 8
    words: npt.NDArray[np.uint64] = buf[base : base + 8 * count].view(np.uint64)
    return base, words


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
