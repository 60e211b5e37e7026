"""SequenceExample parse throughput: ``tfe.parse_sequence_example`` vs TensorFlow's.

Records: 20,000 SequenceExamples, each a context int64 ``label`` and a feature list
``frames`` of 5-60 steps of 32 float32 (``FixedLenSequenceFeature([32], float32)``);
the ``tokens`` variant adds a context bytes ``id`` and a feature list ``tokens`` of
0-8 int64 per step, parsed as a ``VarLenFeature`` (sparse). Both sides parse the same
in-memory batches of 256 serialized records:

- ``tfrecord_engine``: ``parse_sequence_example(batch, context, sequence)``;
- TensorFlow: ``tf.io.parse_sequence_example`` on a ``tf.constant`` of the batch.

The ``file`` rows read a TFRecord file of the same records instead, batches of 256 in
file order (``seq``) and in a shuffled order (``shuf``): ours decodes straight from the
memory-mapped file (``SequenceDecoder.decode`` on the records' spans, as a dataset
does; record CRCs not checked, as TensorFlow does not by default), TensorFlow runs
``TFRecordDataset(path)[.shuffle(n)].batch(256).map(parse_sequence_example)``.

Ours and TensorFlow's run alternately, ``--rounds`` times; the table gives the best
and the median of the rounds and their ratios (higher is faster for us).
Run: ``python -m benchmarks.bench_sequence [--records N] [--batch-size B] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from tfrecord_engine import kernels

FRAMES = {"frames": tfe.FixedLenSequenceFeature([32], "float32")}
CONTEXT = {"label": tfe.FixedLenFeature([], "int64")}
TOKENS_CONTEXT = {**CONTEXT, "id": tfe.FixedLenFeature([], "string")}
TOKENS = {**FRAMES, "tokens": tfe.VarLenFeature("int64")}


def make_records(n: int, *, tokens: bool, seed: int = 0) -> list[bytes]:
    """``n`` serialized SequenceExamples (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        steps = int(rng.integers(5, 61))
        context: dict[str, object] = {"label": int(rng.integers(0, 1000))}
        lists: dict[str, object] = {"frames": rng.standard_normal((steps, 32)).astype(np.float32)}
        if tokens:
            context["id"] = f"clip-{i:06d}".encode()
            lists["tokens"] = [
                rng.integers(0, 50_000, int(rng.integers(0, 9))) for _ in range(steps)
            ]
        out.append(tfe.encode_sequence_example(context, lists))  # type: ignore[arg-type]
    return out


def _tf_specs(tf: Any, specs: dict[str, Any]) -> dict[str, Any]:
    dt = {"int64": tf.int64, "float32": tf.float32, "string": tf.string}
    out = {}
    for key, spec in specs.items():
        if isinstance(spec, tfe.FixedLenSequenceFeature):
            out[key] = tf.io.FixedLenSequenceFeature(list(spec.shape), dt[spec.dtype])
        elif isinstance(spec, tfe.FixedLenFeature):
            out[key] = tf.io.FixedLenFeature(list(spec.shape), dt[spec.dtype])
        else:
            out[key] = tf.io.VarLenFeature(dt[spec.dtype])
    return out


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(records: list[bytes], context: Any, sequence: Any, batch: int, rounds: int) -> str:
    import tensorflow as tf

    batches = [records[i : i + batch] for i in range(0, len(records), batch)]
    tf_batches = [tf.constant(b) for b in batches]
    tf_ctx, tf_seq = _tf_specs(tf, context), _tf_specs(tf, sequence)

    def ours() -> None:
        for b in batches:
            tfe.parse_sequence_example(b, context, sequence)

    def theirs() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for b in tf_batches:
                tf.io.parse_sequence_example(b, tf_ctx, tf_seq)

    return _compare(ours, theirs, len(records), rounds)


def run_file(
    records: list[bytes], context: Any, sequence: Any, batch: int, rounds: int, *, shuffle: bool
) -> str:
    import tensorflow as tf

    from tfrecord_engine.example.seqbatch import SequenceDecoder
    from tfrecord_engine.records.framing import frame

    lengths = np.array([len(r) for r in records], np.int64)
    starts = np.cumsum(lengths + 16) - lengths - 4
    ends = starts + lengths
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "seq.tfrecord")
        with open(path, "wb") as out:
            out.write(b"".join(frame(r) for r in records))
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            held = [np.frombuffer(mm, np.uint8)]  # dropped before the map closes
            order = np.random.default_rng(7).permutation(len(records))
            if not shuffle:
                order = np.arange(len(records))
            decoder = SequenceDecoder(context, sequence)
            tf_ctx, tf_seq = _tf_specs(tf, context), _tf_specs(tf, sequence)

            def ours() -> None:
                for i in range(0, len(order), batch):
                    pick = order[i : i + batch]
                    decoder.decode(held[0], starts[pick], ends[pick])

            def theirs() -> None:
                ds = tf.data.TFRecordDataset(path)
                if shuffle:
                    ds = ds.shuffle(len(records), seed=7)
                ds = ds.batch(batch).map(lambda x: tf.io.parse_sequence_example(x, tf_ctx, tf_seq))
                for _ in ds:
                    pass

            result = _compare(ours, theirs, len(records), rounds)
            assert decoder.stats.exact_batches == 0
            held.clear()
    return result


def _compare(ours: Callable[[], None], theirs: Callable[[], None], n: int, rounds: int) -> str:
    ours()
    theirs()  # warm-up
    t_ours, t_tf = [], []
    for _ in range(rounds):
        t_ours.append(_timed(ours))
        t_tf.append(_timed(theirs))
    best = min(t_tf) / min(t_ours)
    med = statistics.median(t_tf) / statistics.median(t_ours)
    return (
        f"ours {n / min(t_ours):>10,.0f} rec/s (median {n / statistics.median(t_ours):,.0f})  "
        f"TF {n / min(t_tf):>10,.0f} rec/s (median {n / statistics.median(t_tf):,.0f})  "
        f"ratio best {best:.2f}x  median {med:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    kernels.wait()
    b, r = args.batch_size, args.rounds
    frames = make_records(args.records, tokens=False)
    toks = make_records(args.records, tokens=True, seed=1)
    for name, recs, ctx, seq in (
        ("frames", frames, CONTEXT, FRAMES),
        ("tokens", toks, TOKENS_CONTEXT, TOKENS),
    ):
        print(f"{name} memory   :", run(recs, ctx, seq, b, r), flush=True)
        print(f"{name} file seq :", run_file(recs, ctx, seq, b, r, shuffle=False), flush=True)
        print(f"{name} file shuf:", run_file(recs, ctx, seq, b, r, shuffle=True), flush=True)


if __name__ == "__main__":
    main()
