"""Per-call random access: ``ds[i]`` and ``ds[list of 64]`` on the MNIST-like file.

What map-style loaders (PyTorch's ``DataLoader`` without batched fetch, Grain's
``MapDataset``) pay per record: one process, random indices, each row the best of
several short rounds (the machine may be shared), as records per second. Measured in
process CPU time, so that other jobs on the machine do not count against a row.
The peer row is protobuf's own ``Example.FromString`` on records already in memory (no
reading): what parsing one record costs at the least in Python.
Run: ``python -m benchmarks.bench_percall``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from benchmarks.data import MNIST_SPEC, mnist_like

SPEC: dict[str, Any] = MNIST_SPEC
BATCH = 64


def rates(
    fn: Callable[[int], object],
    calls: int,
    per_call: int = 1,
    rounds: int = 7,
    round_s: float = 0.25,
) -> list[float]:
    """Records per CPU second of ``fn(k)`` for k = 0, 1, ..., one figure per round.

    A round lasts at least ``round_s`` of CPU time and at least one call.
    """
    fn(0)
    out = []
    k = 0
    for _ in range(rounds):
        start = time.process_time()
        done = 0
        while True:
            fn(k % calls)
            k += 1
            done += 1
            # The clock is read on each of the first 64 calls (slow calls end a round
            # early), then every 64 (not to weigh on fast ones).
            if (done < 64 or done % 64 == 0) and time.process_time() - start > round_s:
                break
        out.append(done * per_call / (time.process_time() - start))
    return out


def rate(fn: Callable[[int], object], calls: int, per_call: int = 1, rounds: int = 7) -> float:
    """Records per CPU second of ``fn(k)`` for k = 0, 1, ..., best of ``rounds``."""
    return max(rates(fn, calls, per_call, rounds))


def rows() -> list[tuple[str, float]]:
    """(what, records per second) for each per-call path."""
    path = mnist_like()
    parsed = tfe.RecordDataset(path, features=SPEC)
    raw = tfe.RecordDataset(path)
    # A spec that is not all scalars: small batches of it paid a batch decode's set-up.
    varlen = tfe.RecordDataset(path, features={**SPEC, "label": tfe.VarLenFeature("int64")})
    n = len(raw)
    rng = np.random.default_rng(0)
    one = rng.integers(0, n, 100_000).tolist()
    lists = [rng.integers(0, n, BATCH).tolist() for _ in range(2_000)]
    eights = [rng.integers(0, n, 8).tolist() for _ in range(2_000)]
    records = raw[one[:10_000]]
    out = [
        ("raw `ds[i]`", rate(lambda k: raw[one[k]], len(one))),
        ("parsed `ds[i]`", rate(lambda k: parsed[one[k]], len(one))),
        ("parsed `ds[list of 64]`", rate(lambda k: parsed[lists[k]], len(lists), BATCH)),
        ("parsed `ds[list of 8]`", rate(lambda k: parsed[eights[k]], len(eights), 8)),
        (
            "parsed `ds.__getitems__(64)` (samples)",
            rate(lambda k: parsed.__getitems__(lists[k]), len(lists), BATCH),
        ),
        (
            "parsed `ds.__getitems__(8)`, label as `VarLenFeature` (samples)",
            rate(lambda k: varlen.__getitems__(eights[k]), len(eights), 8),
        ),
        (
            "`tfe.parse_single_example` (in memory)",
            rate(lambda k: tfe.parse_single_example(records[k], SPEC), len(records)),
        ),
    ]
    try:
        import tensorflow as tf
    except ImportError:  # pragma: no cover - the bench extra installs it
        return out
    from_string = tf.train.Example.FromString
    out.append(
        (
            "protobuf `Example.FromString` (in memory)",
            rate(lambda k: from_string(records[k]), 10_000),
        )
    )
    return out


def main() -> None:
    print("| per call (MNIST-like, 70,000 records, random indices) | records/s |")
    print("|---|---:|")
    for what, per_s in rows():
        print(f"| {what} | {per_s / 1e3:,.0f}k |")


if __name__ == "__main__":
    main()
