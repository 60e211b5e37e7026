"""Ray Data: ``tfrecord_engine.ray.read_tfrecords`` vs ``ray.data.read_tfrecords``.

Run: ``python -m benchmarks.bench_ray [--shards 20] [--records 5000] [--cpus 2]``
(needs the ``ray`` and ``tf`` extras: Ray's reader imports TensorFlow).

One run writes the shards once (small Examples: an id, a label, a float pair and a short
name; ~70 bytes each) and reads the same files with both readers on one local Ray
instance, alternating, best of ``TFE_BENCH_REPEATS`` (default 3) runs each:

- ``count()``: ours answers from the indexes; Ray's reads and parses every record;
- a full read into parsed columns (``materialize()``), ours with ``features=`` (every
  CRC checked) vs Ray's (TensorFlow's ``Example`` parser per record, no CRC check);
- ours raw (one ``record`` column of bytes).

Finally one shard is damaged (one data byte flipped) and read by both: ours raises
``CorruptedRecordError``; Ray's reports whatever it does (it checks no CRC).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import tfrecord_engine as tfe

from .common import repeats

SPEC: dict[str, Any] = {
    "id": tfe.FixedLenFeature([], "int64"),
    "label": tfe.FixedLenFeature([], "int64"),
    "xy": tfe.FixedLenFeature([2], "float32"),
    "name": tfe.FixedLenFeature([], "string"),
}


def write_shards(folder: Path, shards: int, records: int) -> list[str]:
    """``shards`` files of ``records`` small Examples each, without sidecar indexes."""
    paths = []
    for s in range(shards):
        path = folder / f"train-{s:05d}-of-{shards:05d}.tfrecords"
        with tfe.TFRecordWriter(path, durable=False) as w:
            w.write_many(
                tfe.encode_example(
                    {
                        "id": s * records + i,
                        "label": i % 10,
                        "xy": np.array([i, -i], np.float32),
                        "name": b"n%d" % i,
                    }
                )
                for i in range(records)
            )
        paths.append(str(path))
    return paths


def best(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Best wall time of each function, run round-robin."""
    out = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            out[name] = min(out[name], time.perf_counter() - t)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=20)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--cpus", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import ray

    from tfrecord_engine import ray as tr

    root = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    try:
        paths = write_shards(root, args.shards, args.records)
        n = args.shards * args.records
        size = sum(os.path.getsize(p) for p in paths)
        # Ray's reader would take our sidecars for data: each reader gets the file list.
        index_root = root / "ours"
        index_root.mkdir()
        ours_paths = []
        for p in paths:
            q = index_root / os.path.basename(p)
            os.link(p, q)
            ours_paths.append(str(q))
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        t = time.perf_counter()
        tr.count(ours_paths)  # builds and saves the indexes once, as a first read would
        index_s = time.perf_counter() - t

        def ours_count() -> None:
            assert tr.read_tfrecords(ours_paths).count() == n

        def theirs_count() -> None:
            assert ray.data.read_tfrecords(paths).count() == n

        def ours_parsed() -> None:
            assert tr.read_tfrecords(ours_paths, features=SPEC).materialize().count() == n

        def theirs_parsed() -> None:
            assert ray.data.read_tfrecords(paths).materialize().count() == n

        def ours_raw() -> None:
            assert tr.read_tfrecords(ours_paths).materialize().count() == n

        r = repeats(3)
        times = best(
            {
                "ours count": ours_count,
                "ray count": theirs_count,
                "ours parsed": ours_parsed,
                "ray parsed": theirs_parsed,
                "ours raw": ours_raw,
            },
            r,
        )
        print(
            f"{args.shards} shards x {args.records} records ({size / 1e6:.1f} MB), "
            f"{args.cpus} Ray CPUs, best of {r}; our indexes built once in {index_s:.2f} s"
        )
        print(f"{'case':<14}{'seconds':>10}{'records/s':>14}")
        for name, s in times.items():
            print(f"{name:<14}{s:>10.3f}{n / s:>14,.0f}")
        print(f"count: ours {times['ray count'] / times['ours count']:.1f}x faster than Ray's")
        print(
            f"parsed read: ours {times['ray parsed'] / times['ours parsed']:.1f}x faster than Ray's"
        )
        damaged_check(root, paths[0], tr, ray)
        ray.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def damaged_check(root: Path, path: str, tr: Any, ray: Any) -> None:
    """One data byte flipped: what each reader does."""
    bad = root / "bad"
    bad.mkdir()
    copy = bad / "bad.tfrecords"
    shutil.copyfile(path, copy)
    idx = tfe.Index.build(copy)
    # The last byte of record 100 (a digit of its name): the Example still parses.
    offset = int(idx.offsets[100]) + 12 + int(idx.lengths[100]) - 1
    with open(copy, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0x01]))
    try:
        tr.read_tfrecords([str(copy)], features=SPEC).materialize()
        ours = "read it without complaint (WRONG)"
    except tfe.CorruptedRecordError as err:
        ours = f"raised CorruptedRecordError (record {err.record_index}, offset {err.offset})"
    try:
        rows = ray.data.read_tfrecords([str(copy)]).materialize().count()
        theirs = f"returned {rows} rows, no error: no CRC checked"
    except Exception as err:  # noqa: BLE001 - reporting whatever Ray raises
        theirs = f"raised {type(err).__name__}"
    print(f"damaged shard: ours {ours}; Ray's {theirs}")


if __name__ == "__main__":
    main()
