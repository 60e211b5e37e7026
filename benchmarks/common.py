"""Shared benchmark helpers: data directory, best-of-N alternating timing, peak RSS, tables.

Every comparison runs ours and TensorFlow's in the same process on the same files,
alternating, and keeps the best of several runs.
"""

from __future__ import annotations

import gc
import os
import resource
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from tfrecord_engine import kernels

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

T = TypeVar("T")

DATA_DIR = Path(os.environ.get("TFE_BENCH_DATA", "bench-data"))

# Warm figures: the compiled kernels load in a background thread on first use (numpy
# paths serve meanwhile); wait for them so a timed run does not mix the two.
# (bench_coldstart measures the start itself, in fresh interpreters.)
kernels.wait()


@contextmanager
def patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    """``owner.name`` is ``value`` inside (a module's constant, a class's method): the
    A/B tools' "before" side."""
    before = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, before)


def best_seconds(fn: Callable[[], object], runs: int = 3) -> float:
    """The fastest of ``runs`` calls of ``fn``, in seconds (wall clock)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def timed_with_faults(fn: Callable[[], T]) -> tuple[T, float, int]:
    """``fn()``'s result, its wall-clock seconds and this process's minor page faults
    during it (memory the kernel maps in on first touch; TensorFlow's threads included)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    return result, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def repeats(default: int) -> int:
    """Timed runs per case: ``TFE_BENCH_REPEATS`` when set, else ``default``."""
    return int(os.environ.get("TFE_BENCH_REPEATS", str(default)))


REPEATS = repeats(3)
#: Pause before each timed run: TensorFlow's thread pools keep spinning for a while after
#: its pipeline ends, which slows whatever runs next in the process (measured: our
#: reader at 2.9-3.8 GB/s right after a TensorFlow run, 4.7-5.2 GB/s on its own).
SETTLE_S = float(os.environ.get("TFE_BENCH_SETTLE", "0.5"))

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _statm_rss(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (FileNotFoundError, ProcessLookupError):
        return 0  # a child that just exited


def _task_children(task: Path) -> list[str]:
    try:
        return (task / "children").read_text().split()
    except FileNotFoundError:
        return []  # a thread that just exited


def _children() -> list[str]:
    return [pid for task in Path("/proc/self/task").iterdir() for pid in _task_children(task)]


def rss_bytes() -> int:
    """Resident set size of this process plus its child processes (decode workers).

    Pages shared between them (the mapped data files, shared memory) count once per
    process, so with workers this overstates the memory actually used.
    """
    return _statm_rss("self") + sum(_statm_rss(pid) for pid in _children())


def _hwm_bytes(pid: str) -> int:
    """Peak RSS of a process since start or its last :func:`_reset_hwm` (VmHWM)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass  # a child that just exited
    return 0


def _reset_hwm(pid: str) -> bool:
    """Resets a process's VmHWM to its current RSS (Linux ``clear_refs`` 5)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


@contextmanager
def peak_rss(interval: float = 0.02) -> Iterator[list[int]]:
    """Yields a one-element list that holds, afterwards, the peak RSS growth in bytes.

    Where Linux lets us reset the kernel's own peak (VmHWM, via ``clear_refs``), no
    sampling at all: reset before, read after, for this process and its children (the
    decode workers; the sum of their peaks, an upper bound of the joint peak). A
    sampling thread would cost what it measures: polling /proc every few milliseconds
    takes the GIL away from the Python side of the pipeline being timed (measured: 35%
    of our decoder's throughput at a 2 ms interval, nothing of TensorFlow's C++
    threads). Elsewhere, a thread samples every ``interval`` seconds.
    """
    base = rss_bytes()
    result = [0]
    if all(_reset_hwm(pid) for pid in ["self", *_children()]):
        try:
            yield result
        finally:
            peak = sum(_hwm_bytes(pid) for pid in ["self", *_children()])
            result[0] = max(0, peak - base)
        return
    stop = threading.Event()

    def sample() -> None:
        peak = base
        while not stop.is_set():
            peak = max(peak, rss_bytes())
            time.sleep(interval)
        result[0] = max(peak, rss_bytes()) - base

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        yield result
    finally:
        stop.set()
        t.join()


@dataclass
class Measurement:
    """Best time of several runs of one case, with the work it did."""

    name: str
    seconds: float
    records: int
    nbytes: int
    peak_rss: int = 0
    runs: list[float] = field(default_factory=list)

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def gb_per_s(self) -> float:
        return self.nbytes / self.seconds / 1e9

    @property
    def median_seconds(self) -> float:
        """The median of every timed run (the best is :attr:`seconds`)."""
        return float(statistics.median(self.runs)) if self.runs else self.seconds


def compare(
    cases: Sequence[tuple[str, Callable[[], tuple[int, int]]]],
    repeats: int = REPEATS,
    *,
    warmup: int = 0,
) -> list[Measurement]:
    """Runs each case ``repeats`` times, alternating between cases; keeps each one's best.

    A case returns ``(records, payload_bytes)`` processed, which must be the same on
    every run (checked). ``warmup`` untimed rounds of every case go first (one-time
    costs such as tracing a ``tf.function`` or starting worker processes).
    """
    for _ in range(warmup):
        for _, fn in cases:
            fn()
    results: dict[str, Measurement] = {}
    for _ in range(repeats):
        for name, fn in cases:
            gc.collect()
            time.sleep(SETTLE_S)
            with peak_rss() as peak:
                t0 = time.perf_counter()
                records, nbytes = fn()
                dt = time.perf_counter() - t0
            m = results.get(name)
            if m is None:
                results[name] = Measurement(name, dt, records, nbytes, peak[0], [dt])
                continue
            if (records, nbytes) != (m.records, m.nbytes):
                raise RuntimeError(
                    f"{name}: processed {records} records this run, {m.records} before"
                )
            m.runs.append(dt)
            m.peak_rss = max(m.peak_rss, peak[0])
            m.seconds = min(m.seconds, dt)
    return [results[name] for name, _ in cases]


def _gbs(m: Measurement) -> str:
    # Parsed pipelines do not count payload bytes: no GB/s to show.
    return f"{m.gb_per_s:.2f}" if m.nbytes else "-"


def table(title: str, rows: Sequence[tuple[str, Measurement, Measurement | None]]) -> str:
    """Formats ``(case, ours, anchor)`` rows as a Markdown table: the ratio of the best runs
    (the headline figure) and the ratio of the medians (how steady it was).
    """
    lines = [
        f"### {title}",
        "",
        "| case | ours rec/s | ours GB/s | anchor | anchor rec/s | anchor GB/s | ratio "
        "| ratio of medians | ours peak RSS MB |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for case, ours, anchor in rows:
        if anchor is None:
            a_name, a_rps, a_gbs, ratio, medians = "-", "-", "-", "-", "-"
        else:
            a_name = anchor.name
            a_rps = f"{anchor.records_per_s:,.0f}"
            a_gbs = _gbs(anchor)
            ratio = f"{anchor.seconds / ours.seconds:.2f}x"
            medians = f"{anchor.median_seconds / ours.median_seconds:.2f}x"
        lines.append(
            f"| {case} | {ours.records_per_s:,.0f} | {_gbs(ours)} | {a_name} | {a_rps} | "
            f"{a_gbs} | {ratio} | {medians} | {ours.peak_rss / 1e6:.0f} |"
        )
    return "\n".join(lines)


def tfrecord_package() -> Any:
    """The ``tfrecord`` package, importable in a process that also imports TensorFlow.

    Both register ``tensorflow.Example`` and its fields in protobuf's default pool, from
    two copies of the same ``example.proto``, and the second registration fails
    ("duplicate symbol 'tensorflow.BytesList'") whichever comes first. The package's own
    ``tfrecord.example_pb2`` holds the same messages, so it is replaced by TensorFlow's
    (``example_pb2`` and ``feature_pb2``) before the package loads (benchmarks only: the
    package's code is unchanged).
    """
    import importlib
    import sys
    import types

    if "tfrecord" not in sys.modules:
        from tensorflow.core.example import example_pb2, feature_pb2

        shim = types.ModuleType("tfrecord.example_pb2")
        for module in (feature_pb2, example_pb2):
            shim.__dict__.update({k: v for k, v in vars(module).items() if k[0] != "_"})
        sys.modules.setdefault("tfrecord.example_pb2", shim)
    return importlib.import_module("tfrecord")


def proto_parse() -> Callable[[bytes], dict[str, Any]]:
    """Protobuf's ``Example.FromString`` into the three features of the MNIST-like
    records as numpy (the parse step of the ArrayRecord and Grain peers)."""
    from tensorflow.core.example.example_pb2 import Example

    from_string = Example.FromString

    def parse(record: bytes) -> dict[str, Any]:
        f = from_string(record).features.feature
        return {
            "index": np.int64(f["index"].int64_list.value[0]),
            "label": np.int64(f["label"].int64_list.value[0]),
            "image": f["image"].bytes_list.value[0],
        }

    return parse
