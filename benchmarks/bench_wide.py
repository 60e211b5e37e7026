"""Wide records: ``tfe.parse_example`` vs ``tf.io.parse_example`` on the same records, one run.

Two files written by TensorFlow (:mod:`benchmarks.data`):

- 200 scalar features, int64 (varints of 1 to 10 bytes) and float32 mixed, all selected;
- 1,000 scalar features (int64, float32, short strings), of which the spec selects one.

Rows: records already in memory, parsed in batches of 256 and 4,096 (``tfe.parse_example``
on lists of bytes vs ``tf.io.parse_example`` on the same batches as string tensors, made
before timing), and the file read in batches of 256 (``RecordDataset(path,
features=spec).batches(256)`` in one process vs ``TFRecordDataset.batch(256).map(
tf.io.parse_example)``). Ratios are TensorFlow's time over ours: best of the runs and of
the medians, both from one run.
Run: ``python -m benchmarks.bench_wide`` (``TFE_BENCH_REPEATS`` runs per case).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tfrecord_engine as tfe
from benchmarks.bench_pipeline import _count, _tf_to_numpy
from benchmarks.common import Measurement, compare, repeats, table
from benchmarks.data import WIDE_SCALARS, WIDE_SELECT_FROM, wide_kinds, wide_scalars, wide_select

REPEATS = repeats(5)
Case = tuple[str, Callable[[], tuple[int, int]]]


def _specs(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    import tensorflow as tf

    if name == "scalars":
        kinds = wide_kinds(WIDE_SCALARS, 17)
        ours = {f"f{j:04d}": tfe.FixedLenFeature([], k) for j, k in enumerate(kinds)}
    else:
        kinds = wide_kinds(WIDE_SELECT_FROM, 19)
        j = kinds.index("int64", WIDE_SELECT_FROM // 2)
        ours = {f"f{j:04d}": tfe.FixedLenFeature([], "int64")}
    theirs = {
        k: tf.io.FixedLenFeature([], tf.int64 if v.dtype == "int64" else tf.float32)
        for k, v in ours.items()
    }
    return ours, theirs


def _memory_cases(records: list[bytes], name: str, batch: int) -> list[Case]:
    import tensorflow as tf

    ours_spec, tf_spec = _specs(name)
    batches = [records[i : i + batch] for i in range(0, len(records), batch)]
    tensors = [tf.constant(b) for b in batches]

    def ours() -> tuple[int, int]:
        return sum(len(next(iter(tfe.parse_example(b, ours_spec).values()))) for b in batches), 0

    def theirs() -> tuple[int, int]:
        n = 0
        for t in tensors:
            n += int(next(iter(tf.io.parse_example(t, tf_spec).values())).shape[0])
        return n, 0

    # Sanity: both sides parse the same values.
    want = tf.io.parse_example(tensors[0], tf_spec)
    got = tfe.parse_example(batches[0], ours_spec)
    for key, value in want.items():
        assert got[key].tolist() == value.numpy().tolist(), key
    return [("tfe.parse_example", ours), ("tf.io.parse_example", theirs)]


def _file_cases(path: str, name: str, batch: int) -> list[Case]:
    import tensorflow as tf

    ours_spec, tf_spec = _specs(name)
    ds = tfe.RecordDataset(path, features=ours_spec)

    def ours() -> tuple[int, int]:
        return sum(_count(b) for b in ds.batches(batch)), 0

    def theirs() -> tuple[int, int]:
        pipe = (
            tf.data.TFRecordDataset(path)
            .batch(batch)
            .map(lambda b: tf.io.parse_example(b, tf_spec), num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )
        return sum(_count(_tf_to_numpy(b)) for b in pipe), 0

    return [("RecordDataset.batches", ours), ("tf.data parse_example", theirs)]


def run() -> str:
    """Runs the wide-record benchmarks; returns a Markdown table."""
    rows: list[tuple[str, Measurement, Measurement | None]] = []
    for label, path, name in (
        ("200 scalars (int64 of 1-10 byte varints, float32)", wide_scalars(), "scalars"),
        ("1 of 1,000 features selected", wide_select(), "select"),
    ):
        records = list(tfe.read_records(path))
        for batch in (256, 4096):
            ours, theirs = compare(_memory_cases(records, name, batch), REPEATS, warmup=1)
            rows.append((f"{label}, in memory, batches of {batch}", ours, theirs))
        del records
        ours, theirs = compare(_file_cases(path, name, 256), REPEATS, warmup=1)
        rows.append((f"{label}, file, batches of 256", ours, theirs))
    return table(f"Wide records (best of {REPEATS} runs; ratio = TF time / ours)", rows)


if __name__ == "__main__":
    print(run())
