"""Loading the compiled kernels: when, where, and whether they may be trusted.

What :mod:`tfrecord_engine.kernels` (its package module) calls to reach the compiled
loops: :func:`_kernels` returns them once loaded (never waiting: the first call starts
the load in a background thread, and the numpy paths serve until it is done);
:func:`_load` loads them in the calling thread. The loader thread loads numba's cached
code, or has a detached builder process (:mod:`.warm`) fill the cache first; it is
kept clear of forks and of the interpreter's exit (numba's and LLVM's locks and native
code). :func:`_compile` picks each kernel (the CRC by the CPU's instructions) and
:func:`_self_test` checks every one on known answers before any is used.
"""

from __future__ import annotations

import atexit
import os
import platform
import threading
import time
from typing import Any, Final

import numpy as np
import numpy.typing as npt

U8 = npt.NDArray[np.uint8]

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
    _load_buffer_twins(kernels)
    return kernels


#: Kernels whose first argument is their output (a writable buffer only): no twin.
_WRITES_FIRST = frozenset({"fill"})


def _load_buffer_twins(found: dict[str, Any]) -> None:
    """Loads each kernel's code for the other kind of record buffer too: the self-tests
    call them on ``bytes`` (read-only) buffers or on writable ones, and numba makes one
    variant per kind; the epochs' buffers (a file's copy, a gather) are writable,
    ``ds[i]``'s records read-only. Loaded here, in the loading thread of the first
    process, the variants are inherited by the processes it forks (DataLoader workers,
    started afresh every epoch), which otherwise loaded them from numba's cache at
    their first batch (measured: 33 ms of each worker's first batch of 256 records,
    10-14 ms with them inherited). Kernels that write into their first argument
    (:data:`_WRITES_FIRST`) have no read-only variant. Only a warm-up: a variant that
    fails for any reason is left to numba at its first call, as before, and the
    kernels load as they would without it. (A new install's builder process compiles
    the twins too: ~7.6 s more of its ~20 s, once per machine.)"""
    from numba.core import types  # noqa: PLC0415 - numba is loaded by now

    seen: set[int] = set()
    for name, kernel in found.items():
        signatures = getattr(kernel, "signatures", None)
        if not signatures or id(kernel) in seen or name in _WRITES_FIRST:
            continue
        seen.add(id(kernel))
        for sig in list(signatures):
            first = sig[0] if sig else None
            if not isinstance(first, types.Array):
                continue
            twin = (first.copy(readonly=first.mutable), *sig[1:])
            if twin not in kernel.signatures:
                try:
                    kernel.compile(twin)
                except Exception:  # noqa: BLE001 - optional: numba decides at the call
                    continue


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
