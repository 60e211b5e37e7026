"""The record-shape matrix: every access pattern on every record shape, each row a same-run ratio.

    python -m benchmarks.bench_shapes            # 20,000 records per shape (make bench)
    python -m benchmarks.bench_shapes --quick    # a few hundred records, one run: a smoke test

Shapes (:mod:`benchmarks.shapes`): image classification, detection, NLP tokens, mixed,
SequenceExample, RaggedFeature, tabular, wide; each written as several files whose
record counts, value sizes and feature orders differ from file to file and record to
record. Each shape runs in two child processes, one with TensorFlow imported (the rows
against TensorFlow) and one without (the rows against the per-record protobuf
``Dataset`` and under PyTorch's ``DataLoader``: forked loader workers and TensorFlow's
thread pools do not mix). Every row times ours and its anchor alternately in one
process on the same files (:func:`benchmarks.common.compare`: best of
``TFE_BENCH_REPEATS`` runs, 3 by default, after one untimed round), and reports the
ratio of the best runs, the ratio of the medians, and the peak RSS growth of each side
during its runs (the kernel's own peak, reset before each run; loader workers and
decode processes included).

Rows (ours / anchor; a ratio above 1 means ours is faster, except where noted):

- parsed batches of 256 and 4,096, sequential and shuffled: ``RecordDataset(paths,
  features).batches(B, shuffle)`` (the defaults: one process, a read-ahead thread) /
  ``tf.data.TFRecordDataset(paths)[.shuffle(10000)].batch(B).map(parse, AUTOTUNE)
  .prefetch(AUTOTUNE)`` read as numpy;
- random ``ds.__getitems__`` of 8, 64, 1,024 indices and ``ds[i]`` / the same calls on
  :class:`benchmarks.shape_baselines.ProtobufDataset`;
- ``DataLoader(ds, batch_size=256, shuffle=True)`` with default collate, workers 0 and 2 /
  the protobuf dataset in the same loader (its collate: ``default_collate``, variable
  lengths padded: :func:`~benchmarks.shape_baselines.padding_collate`);
- ``tfrecord_engine.torch.RecordIterableDataset(ds, 256, shuffle=True)`` in
  ``DataLoader(batch_size=None)`` / the protobuf dataset's loader, workers 0;
- the tf.data bridge ``to_tf_dataset(ds, 256)``, sequential and shuffled / TensorFlow's
  ``TFRecordDataset [-> shuffle(10000)] -> batch -> map(parse) -> prefetch``, both
  iterated in a Python loop that touches each batch (as a training loop consumes them);
- raw random batches of 1,024 (``raw_ds[list of 1,024]`` over a permutation) /
  TensorFlow's sequential raw read (``TFRecordDataset(paths).batch(1024)``, as numpy);
- the first shuffled epoch of a new dataset / an in-order epoch of a new dataset
  (batches of 256; ratio: shuffled speed over in-order speed);
- sequential / shuffled, ours, batches of 256 and 4,096 (sequential speed over shuffled).

SequenceExample: ``RecordDataset(paths, context_features=, sequence_features=)`` where
it exists; before, its rows read a raw dataset and parse each batch with
``tfe.parse_sequence_example`` (the label says so), and the bridge rows are left out
(the bridge takes parsed datasets).

``--shapes clips multilabel pose steps`` runs the same rows on four shapes written after
the matrix was tuned (:mod:`benchmarks.survey_shapes`); the default is the matrix.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from benchmarks.shapes import SHAPES, Shape, data_bytes, write_shape
from benchmarks.survey_shapes import ALL_SHAPES, SURVEY_SHAPES

#: Targets of the matrix (ratio ours/anchor at least this), by row kind.
TARGETS: dict[str, float] = {
    "parsed": 3.0,
    "getitems64": 3.0,
    "item": 1.5,
    "loader": 1.5,
    "torch": 1.5,
    "bridge": 1.5,
    "raw": 2.0,
    "first_epoch": 0.9,
    "seq_vs_shuffled": 1.0,
}
#: Detection's parsed-batch target (each record's 8-24 KiB image is copied into a bytes
#: object: see the memcpy bound of the files printed below the matrix).
DETECTION_PARSED = 2.5
FULL_RECORDS = 20_000
QUICK_RECORDS = 320


@dataclass
class Row:
    """One row of the matrix: ours against its anchor, as measured in one child process."""

    shape: str
    access: str
    kind: str
    ours: str
    anchor: str
    ours_rps: float
    anchor_rps: float
    ratio: float
    ratio_median: float
    ours_peak_mb: float
    anchor_peak_mb: float
    target: float | None = None
    path: str = ""

    @property
    def met(self) -> bool | None:
        return None if self.target is None else self.ratio >= self.target


def native_sequence() -> bool:
    """Whether ``RecordDataset`` parses SequenceExamples itself (``sequence_features=``)."""
    import tfrecord_engine as tfe

    return "sequence_features" in inspect.signature(tfe.RecordDataset).parameters


def target_of(shape: str, kind: str) -> float | None:
    if kind == "parsed" and shape == "detection":
        return DETECTION_PARSED
    return TARGETS.get(kind)


def explain(ds: Any, batch_size: int = 256) -> str:
    """The decode path the engine picks for ``ds``'s batches and its per-call reads
    (``ds.explain_decode``): its tier names only, the per-feature notes left out."""
    if ds.features is None or not hasattr(ds, "explain_decode"):
        return ""
    said = ds.explain_decode(batch_size)
    per_call = said.per_call.split(" (", 1)[0]
    return f"{said.tier}; per call: {per_call}"


# ---- the child processes -----------------------------------------------------------------


def _run_group(group: str, shape: Shape, paths: list[str], quick: bool) -> list[Row]:
    from benchmarks import shape_cases

    run = shape_cases.tf_rows if group == "tf" else shape_cases.torch_rows
    return run(shape, paths, quick)


def _child(argv: list[str]) -> None:
    shape = ALL_SHAPES[argv[0]]
    group, records, quick = argv[1], int(argv[2]), argv[3] == "quick"
    paths = write_shape(shape, records)
    rows = _run_group(group, shape, paths, quick)
    print("ROWS " + json.dumps([asdict(r) for r in rows]), flush=True)


def run_shape(shape: Shape, group: str, records: int, quick: bool) -> list[Row]:
    """One group of one shape's rows, in a child process; its stderr passes through."""
    cmd = [sys.executable, "-m", "benchmarks.bench_shapes", "--child", shape.name, group]
    cmd += [str(records), "quick" if quick else "full"]
    env = dict(os.environ)
    if group == "torch":
        # No TensorFlow thread pools in this process: little to wait for between runs.
        env.setdefault("TFE_BENCH_SETTLE", "0.1")
    if quick:
        env.setdefault("TFE_BENCH_REPEATS", "1")
        env.setdefault("TFE_BENCH_SETTLE", "0")
    done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("ROWS ")]
    if done.returncode or not lines:
        raise RuntimeError(
            f"{shape.name} ({group} rows): the child exited with {done.returncode}; "
            f"its output:\n{done.stdout[-2000:]}"
        )
    return [Row(**r) for r in json.loads(lines[-1][5:])]


# ---- the tables ------------------------------------------------------------------------------


def _cell(row: Row) -> str:
    miss = " ✗" if row.met is False else ""
    return f"{row.ratio:.2f} / {row.ratio_median:.2f}{miss}"


def matrix(rows: list[Row], shapes: list[str]) -> str:
    """The matrix: one line per access pattern, one column per shape, cells best / median."""
    accesses: list[tuple[str, str]] = []
    for r in rows:
        if (r.access, r.kind) not in accesses:
            accesses.append((r.access, r.kind))
    cells = {(r.access, r.shape): r for r in rows}
    lines = [
        "| access (ours / anchor) | target | " + " | ".join(shapes) + " |",
        "|---|---:|" + "---:|" * len(shapes),
    ]
    for access, kind in accesses:
        targets = {t for s in shapes if (t := target_of(s, kind)) is not None}
        target = "/".join(f"{t:g}x" for t in sorted(targets, reverse=True)) or "-"
        line = [cells.get((access, s)) for s in shapes]
        lines.append(
            f"| {access} | {target} | " + " | ".join(_cell(c) if c else "n/a" for c in line) + " |"
        )
    return "\n".join(lines)


def details(rows: list[Row]) -> str:
    """Every row with its rates and peak memory."""
    lines = [
        "| shape | access | ours | ours rec/s | ours peak MB | anchor | anchor rec/s "
        "| anchor peak MB | ratio best / median | target |",
        "|---|---|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        target = "-" if r.target is None else f"{r.target:g}x {'met' if r.met else 'MISSED'}"
        path = f" (path: {r.path})" if r.path else ""
        lines.append(
            f"| {r.shape} | {r.access} | {r.ours}{path} | {r.ours_rps:,.0f} | "
            f"{r.ours_peak_mb:.0f} | {r.anchor} | {r.anchor_rps:,.0f} | {r.anchor_peak_mb:.0f} "
            f"| {r.ratio:.2f}x / {r.ratio_median:.2f}x | {target} |"
        )
    return "\n".join(lines)


def memcpy_bounds(shapes: list[Shape], records: int) -> str:
    """Per shape: the file bytes per record, and one ``memcpy`` of all files (best of 5):
    the rate no decoder that copies each record's bytes once can pass."""
    lines = [
        "| shape | file bytes / record | memcpy of the files GB/s | bound rec/s |",
        "|---|---:|---:|---:|",
    ]
    for shape in shapes:
        paths = write_shape(shape, records)
        blob = np.concatenate([np.fromfile(p, np.uint8) for p in paths])
        out = np.empty_like(blob)
        best = min(_timed(functools.partial(np.copyto, out, blob)) for _ in range(5))
        per = blob.nbytes / records
        lines.append(
            f"| {shape.name} | {per:,.0f} | {blob.nbytes / best / 1e9:.1f} "
            f"| {records / best:,.0f} |"
        )
    return "\n".join(lines)


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(quick: bool = False, names: list[str] | None = None) -> tuple[str, list[Row]]:
    """Writes the data, runs every shape's rows in child processes; returns Markdown + rows."""
    records = QUICK_RECORDS if quick else FULL_RECORDS
    shapes = [ALL_SHAPES[n] for n in (names or list(SHAPES))]
    rows: list[Row] = []
    for shape in shapes:
        write_shape(shape, records)
        print(f"{shape.name}: {data_bytes(write_shape(shape, records)) / 1e6:.0f} MB", flush=True)
        for group in ("tf", "torch"):
            rows += run_shape(shape, group, records, quick)
    sequence = (
        "native `RecordDataset(..., sequence_features=)`"
        if native_sequence()
        else "raw `RecordDataset` + `tfe.parse_sequence_example` per batch"
    )
    text = "\n".join(
        [
            f"### Record-shape matrix ({records:,} records per shape, {os.cpu_count()} cores)",
            "",
            "Cells: ratio of the best runs / ratio of the medians (ours over the anchor); "
            f"✗ marks a missed target. SequenceExample rows: {sequence}.",
            "",
            matrix(rows, [s.name for s in shapes]),
            "",
            "#### Every row, with peak memory (RSS growth during the runs)",
            "",
            details(rows),
            "",
            "#### The memcpy bound of each shape's files",
            "",
            memcpy_bounds(shapes, records),
        ]
    )
    return text, rows


def main(argv: list[str] | None = None) -> int:
    """Prints the matrix; ``--json PATH`` also writes every row."""
    args_list = sys.argv[1:] if argv is None else argv
    if args_list[:1] == ["--child"]:
        _child(args_list[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few records, one timed run")
    parser.add_argument(
        "--shapes",
        nargs="*",
        choices=list(ALL_SHAPES),
        help=f"default: the matrix's; also the survey's ({', '.join(SURVEY_SHAPES)})",
    )
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(args_list)
    text, rows = run(args.quick, args.shapes)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(r) for r in rows], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
