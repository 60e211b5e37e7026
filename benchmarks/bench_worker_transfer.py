"""How batches cross from ``DataLoader`` workers: one block a batch, or one a tensor.

A worker hands each tensor of a batch to the main process as a shared-memory block of
its own; the engine cuts a batch's numbers (and its ``bytes``) from one block in a
worker (``tfrecord_engine.data.formats.joint_torch``, see docs/workers.md). Two
measurements, each alternating the two ways in one process::

    python -m benchmarks.bench_worker_transfer                      # both parts
    python -m benchmarks.bench_worker_transfer --tensors 2,20,200 --shapes ""
    python -m benchmarks.bench_worker_transfer --shapes detection,wide --epochs 6

- ``--tensors``: a toy dataset whose items are already batches of K ``int64[64]``
  tensors (``DataLoader(batch_size=None, num_workers=2)``, 300 batches): separate
  tensors, or views of one block. Prints microseconds a batch.
- ``--shapes``: the matrix's record shapes (``benchmarks.shapes``, 20,000 records):
  ``DataLoader(ds, batch_size=64, shuffle=True, num_workers=2)`` with the default
  collate, the engine as it is ("block") and with the hand-over as before ("tensors":
  plain dict samples, each tensor its own block), against the protobuf map-style
  ``Dataset`` (``benchmarks.shape_baselines``) under the same loader, each dataset first
  read once in this process (as the matrix's earlier rows do: the workers inherit its
  files' copies). Prints each epoch's best and median ms and the ratios to the baseline
  (best / median).

Workers are forked (Linux's default), so the "before" patches reach them.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Iterator
from typing import Any

from benchmarks.common import patched
from benchmarks.shape_baselines import ProtobufDataset, padding_collate
from benchmarks.shape_cases import ours_for
from benchmarks.shapes import SHAPES, write_shape

RECORDS = 20_000
BATCHES = 300
WORKERS = 2


class _Batches:
    """A map-style dataset whose items are dicts of ``k`` ``int64[64]`` tensors."""

    def __init__(self, k: int, joint: bool) -> None:
        self.k, self.joint = k, joint

    def __len__(self) -> int:
        return BATCHES

    def __getitem__(self, i: int) -> dict[str, Any]:
        import torch

        if self.joint:
            block = torch.empty(self.k * 64, dtype=torch.int64)
            return {f"f{j}": block[j * 64 : (j + 1) * 64] for j in range(self.k)}
        return {f"f{j}": torch.arange(64) for j in range(self.k)}


def _epoch(loader: Any) -> float:
    start = time.perf_counter()
    for _ in loader:
        pass
    return time.perf_counter() - start


def tensors(counts: list[int], epochs: int) -> list[str]:
    """One line per tensor count: microseconds a batch, separate tensors and one block."""
    from torch.utils.data import DataLoader

    lines = []
    for k in counts:
        best = {}
        for joint in (False, True):
            data: Any = _Batches(k, joint)  # (a map-style Dataset by protocol)
            loader: Any = DataLoader(data, batch_size=None, num_workers=WORKERS)
            best[joint] = min(_epoch(loader) for _ in range(epochs)) / BATCHES * 1e6
        lines.append(
            f"{k:4d} tensors a batch: separate {best[False]:8.0f} us, one block "
            f"{best[True]:7.0f} us ({best[False] / best[True]:.1f}x)"
        )
    return lines


@contextlib.contextmanager
def _per_tensor() -> Iterator[None]:
    """The hand-over before 2026-11-29: plain dict samples in workers (each of their
    tensors its own block) and the torch host's batches converted tensor by tensor."""
    from tfrecord_engine.data import formats, output_methods
    from tfrecord_engine.hosts.torch import tensors as host

    with (
        patched(output_methods, "worker_samples", lambda samples: samples),
        patched(formats, "in_loader_worker", lambda: False),
        patched(host, "in_loader_worker", lambda: False),
    ):
        yield


def shape(name: str, epochs: int) -> str:
    """One line for shape ``name``: ms an epoch each way, and the ratios."""
    from torch.utils.data import DataLoader

    spec = SHAPES[name]
    paths = write_shape(spec, RECORDS)
    ds = ours_for(spec, paths).ds
    base = ProtobufDataset(paths, spec)
    kwargs: dict[str, Any] = {"batch_size": 64, "shuffle": True, "num_workers": WORKERS}
    mine: Any = DataLoader(ds, **kwargs)  # type: ignore[arg-type]
    theirs: Any = DataLoader(base, collate_fn=padding_collate, **kwargs)  # type: ignore[arg-type]
    times: dict[str, list[float]] = {"block": [], "tensors": [], "protobuf": []}
    # As in the matrix: each dataset used in this process first (its files' copies made
    # here, which the forked workers inherit; the kernels loaded), then one untimed epoch.
    for warm in (ds, base):
        data: Any = warm  # (map-style Datasets by protocol)
        warm_loader: Any = DataLoader(data, batch_size=64, shuffle=True, collate_fn=list)
        _epoch(warm_loader)
    _epoch(mine)
    _epoch(theirs)
    for _ in range(epochs):
        times["block"].append(_epoch(mine))
        with _per_tensor():
            times["tensors"].append(_epoch(mine))
        times["protobuf"].append(_epoch(theirs))
    best = {k: min(v) * 1e3 for k, v in times.items()}
    mid = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    cells = [f"{k} {best[k]:.0f} / {mid[k]:.0f} ms" for k in times]
    ratios = [
        f"{k} {best['protobuf'] / best[k]:.2f}x / {mid['protobuf'] / mid[k]:.2f}x"
        for k in ("block", "tensors")
    ]
    return f"{name}: {', '.join(cells)}; over protobuf: {', '.join(ratios)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensors", default="2,20,200", help="tensor counts ('' skips)")
    parser.add_argument(
        "--shapes", default="image,detection,mixed,ragged,tabular,wide", help="('' skips)"
    )
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args(argv)
    counts = [int(k) for k in args.tensors.split(",") if k]
    for line in tensors(counts, args.epochs) if counts else []:
        print(line, flush=True)
    for name in [s for s in args.shapes.split(",") if s]:
        print(shape(name, args.epochs), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
