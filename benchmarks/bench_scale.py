"""Scale-out hosts: our Beam and Ray readers against the engines' own, on the same files.

Run: ``python -m benchmarks.bench_scale [--files 100] [--records 2000] [--big-mb 256]
[--workers 2] [--mode multi_threading] [--no-ray]`` (needs the ``beam`` and ``ray``
extras, TensorFlow for Ray's reader, and one of ``google-crc32c``/``crcmod`` for Beam's:
``pip install google-crc32c``). Timed runs per case: ``TFE_BENCH_REPEATS`` (default 3),
after one untimed round; best and median reported.

One run writes the files once, into a temporary folder, and every case reads the same
files, alternating:

- **Beam, many small files**: ``tfrecord_engine.beam.ReadTFRecords`` vs Beam's
  ``beam.io.ReadFromTFRecord``, each followed by ``Count.Globally()``, on the
  DirectRunner with the same options for both (``--direct_num_workers``,
  ``--direct_running_mode``). The files have no sidecar index: ours builds each file's
  index in the untimed round and saves it in the index cache, as a first read does, and
  loads it from there in the timed runs (the cache is a folder of the run's temporary
  folder, ``TFE_INDEX_CACHE``, unless that variable is set).
- **Beam, one big file**: the same, plus how the work was cut: the restrictions (pieces)
  our splittable DoFn processed (its ``pieces`` Beam counter, split residuals included),
  the bundles and distinct workers (process, thread) that ran the step fused after each
  reader (counted by Beam counters in an untimed run), and the pieces Beam's source
  splits the file into (``split()`` of the source ``ReadFromTFRecord`` reads: one, as
  it is not splittable).
- **Reshard** (when ``tfrecord_engine.beam.Reshard`` exists): the many small files
  rewritten as 8 shards, a seeded global permutation, against the nearest thing Beam
  has, ``ReadFromTFRecord | Reshuffle | WriteToTFRecord(num_shards=8)`` (a random
  order that no seed reproduces).
- **Ray**: ``tfrecord_engine.ray.read_tfrecords(..., features=...)`` vs
  ``ray.data.read_tfrecords`` into parsed columns (``materialize()``), rows/s; then one
  byte of a record's **data CRC** is flipped in a copy of a shard (the data stays
  intact): ours raises ``CorruptedRecordError``, Ray's returns every row (it checks no
  CRC).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import tfrecord_engine as tfe

from .common import Measurement, compare, repeats, table

#: Reshard's output shards, and those of the Beam pipeline it is compared with.
RESHARD_SHARDS = 8


def write_files(folder: Path, files: int, records: int, size: int, seed: int) -> list[str]:
    """``files`` files of ``records`` random records of ``size`` bytes, without indexes."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    paths = []
    for f in range(files):
        path = folder / f"train-{f:05d}-of-{files:05d}.tfrecord"
        block = rng.integers(0, 256, (records, size), dtype=np.uint8)
        with tfe.TFRecordWriter(path, durable=False) as w:
            w.write_many(row.tobytes() for row in block)
        paths.append(str(path))
    return paths


def _need_beam_crc() -> None:
    """Beam's TFRecord code needs one of these for its CRCs (it fails at run time)."""
    import importlib.util

    if not any(importlib.util.find_spec(m) for m in ("google_crc32c", "crcmod", "snappy")):
        raise SystemExit(
            "Beam's ReadFromTFRecord needs google-crc32c, crcmod or python-snappy: "
            "pip install google-crc32c"
        )


class _Counted:
    """Runs one Beam pipeline ``read | Count.Globally()`` and returns the count, read
    from a Beam counter (so every running mode reports it back)."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def pipeline(self) -> Any:
        import apache_beam as beam
        from apache_beam.options.pipeline_options import PipelineOptions

        return beam.Pipeline(options=PipelineOptions(**self.options))

    def __call__(self, read: Callable[[], Any], label: str = "count") -> tuple[int, Any]:
        import apache_beam as beam
        from apache_beam.metrics.metric import MetricsFilter

        p = self.pipeline()
        _ = p | read() | beam.combiners.Count.Globally() | beam.Map(_note_count)
        result = p.run()
        result.wait_until_finish()
        got = result.metrics().query(MetricsFilter().with_name("records"))["counters"]
        return int(sum(c.committed for c in got)), result


def _note_count(n: int) -> None:
    from apache_beam.metrics import Metrics

    Metrics.counter("bench_scale", "records").inc(n)


def _worker_probe() -> Any:
    """A DoFn that counts the bundles it runs and the (process, thread) running them."""
    import apache_beam as beam
    from apache_beam.metrics import Metrics

    class Probe(beam.DoFn):  # type: ignore[misc]
        # Counted at a bundle's first element: the runner starts bundles with no
        # element at all on idle workers, which did none of the work.
        def start_bundle(self) -> None:
            self.seen = False

        def process(self, element: Any) -> None:
            del element
            if not self.seen:
                self.seen = True
                Metrics.counter("bench_scale", "bundles").inc()
                worker = f"worker-{os.getpid()}-{threading.get_ident()}"
                Metrics.counter("bench_scale", worker).inc()

    return Probe()


def _cutting(run: _Counted, read: Callable[[], Any]) -> dict[str, int]:
    """Pieces, bundles and workers of one untimed run of ``read | probe``."""
    import apache_beam as beam
    from apache_beam.metrics.metric import MetricsFilter

    p = run.pipeline()
    _ = p | read() | beam.ParDo(_worker_probe())
    result = p.run()
    result.wait_until_finish()
    counters = result.metrics().query(MetricsFilter())["counters"]
    totals: dict[str, int] = {}
    for c in counters:
        totals[c.key.metric.name] = totals.get(c.key.metric.name, 0) + int(c.committed)
    return {
        "pieces": totals.get("pieces", 0),
        "bundles": totals.get("bundles", 0),
        "workers": sum(1 for name in totals if name.startswith("worker-")),
    }


def _beam_cases(args: argparse.Namespace, root: Path) -> None:
    import apache_beam as beam

    from tfrecord_engine import beam as tb

    _need_beam_crc()
    options = {"direct_num_workers": args.workers, "direct_running_mode": args.mode}
    run = _Counted(options)
    r = repeats(3)
    write_files(root / "small", args.files, args.records, args.record_bytes, 1)
    big_records = (args.big_mb << 20) // (args.big_record_bytes + 16)
    big = write_files(root / "big", 1, big_records, args.big_record_bytes, 2)
    small_glob = str(root / "small" / "train-*.tfrecord")
    big_glob = big[0]
    n_small = args.files * args.records

    def case(read: Callable[[], Any], n: int, nbytes: int) -> Callable[[], tuple[int, int]]:
        def fn() -> tuple[int, int]:
            got, _ = run(read)
            if got != n:
                raise RuntimeError(f"read {got} records, expected {n}")
            return got, nbytes

        return fn

    small_bytes = n_small * args.record_bytes
    big_bytes = big_records * args.big_record_bytes
    print(
        f"DirectRunner {options}; many small files: {args.files} x {args.records} records "
        f"of {args.record_bytes} B; one big file: {big_records:,} records of "
        f"{args.big_record_bytes} B ({os.path.getsize(big[0]) / 2**20:.0f} MiB); "
        f"{r} timed runs after one untimed round\n",
        flush=True,
    )
    got = compare(
        [
            ("ReadTFRecords", case(lambda: tb.ReadTFRecords(small_glob), n_small, small_bytes)),
            (
                "ReadFromTFRecord",
                case(lambda: beam.io.ReadFromTFRecord(small_glob), n_small, small_bytes),
            ),
            ("ReadTFRecords big", case(lambda: tb.ReadTFRecords(big_glob), big_records, big_bytes)),
            (
                "ReadFromTFRecord big",
                case(lambda: beam.io.ReadFromTFRecord(big_glob), big_records, big_bytes),
            ),
        ],
        r,
        warmup=1,
    )
    print(
        table(
            "Beam DirectRunner: read | Count.Globally()",
            [
                (f"{args.files} small files", got[0], got[1]),
                ("one big file", got[2], got[3]),
            ],
        )
    )
    print(_runs_line(got))
    ours = _cutting(run, lambda: tb.ReadTFRecords(big_glob))
    theirs = _cutting(run, lambda: beam.io.ReadFromTFRecord(big_glob))
    # The source ReadFromTFRecord wraps (private attribute: Beam has no public way to
    # ask how it splits); Read splits it with this bundle size by default.
    source = beam.io.ReadFromTFRecord(big_glob)._source
    beam_splits = len(list(source.split(desired_bundle_size=tb.DEFAULT_BUNDLE_BYTES)))
    print(
        f"\none big file, how the work was cut (untimed run with a probe step fused after "
        f"the reader): ReadTFRecords {ours['pieces']} pieces (restrictions processed), "
        f"{ours['bundles']} bundles, {ours['workers']} workers; ReadFromTFRecord "
        f"{beam_splits} piece (its source's split()), {theirs['bundles']} bundles, "
        f"{theirs['workers']} workers\n",
        flush=True,
    )
    if hasattr(tb, "Reshard"):
        _reshard_case(args, root, run, small_glob=small_glob, n=n_small, nbytes=small_bytes, r=r)
    else:
        print("tfrecord_engine.beam.Reshard: not in this build, no Reshard row\n")


def _reshard_case(
    args: argparse.Namespace,
    root: Path,
    run: _Counted,
    *,
    small_glob: str,
    n: int,
    nbytes: int,
    r: int,
) -> None:
    import apache_beam as beam

    from tfrecord_engine import beam as tb

    out = root / "resharded"
    written: dict[str, list[int]] = {"Reshard": [], "theirs": []}

    def count_written(side: str) -> tuple[int, int]:
        got = sum(len(tfe.Index.build(p)) for p in out.glob("part-*"))
        written[side].append(got)
        # Every run "processed" the input: what each wrote is checked below, so that a
        # run that lost records is reported rather than stopping the benchmark.
        return n, nbytes

    def fresh() -> None:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()

    def ours() -> tuple[int, int]:
        fresh()
        p = run.pipeline()
        reshard = getattr(tb, "Reshard")  # noqa: B009 - absent before the beamops branch
        _ = p | beam.Create([small_glob]) | reshard(str(out / "part"), RESHARD_SHARDS, seed=0)
        p.run().wait_until_finish()
        return count_written("Reshard")

    def theirs() -> tuple[int, int]:
        fresh()
        p = run.pipeline()
        _ = (
            p
            | beam.io.ReadFromTFRecord(small_glob)
            | beam.Reshuffle()
            | beam.io.WriteToTFRecord(str(out / "part"), num_shards=RESHARD_SHARDS)
        )
        p.run().wait_until_finish()
        return count_written("theirs")

    got = compare(
        [("Reshard", ours), ("ReadFromTFRecord, Reshuffle, WriteToTFRecord", theirs)],
        r,
        warmup=1,
    )
    print(
        table(
            f"Beam DirectRunner: {args.files} small files -> {RESHARD_SHARDS} shards",
            [("reshard (ours: seeded global permutation)", got[0], got[1])],
        )
    )
    print(_runs_line(got))
    for side, counts in written.items():
        lost = [n - c for c in counts]
        print(
            f"records written per run (untimed round first), {side}: "
            + ", ".join(map(str, counts))
            + ("" if not any(lost) else f"  <- LOST {', '.join(map(str, lost))} of {n}")
        )
    print()
    shutil.rmtree(out, ignore_errors=True)


def _runs_line(got: list[Measurement]) -> str:
    return "seconds per run: " + "; ".join(
        f"{m.name} " + ", ".join(f"{s:.2f}" for s in m.runs) for m in got
    )


def _ray_cases(args: argparse.Namespace, root: Path) -> None:
    import ray

    from tfrecord_engine import ray as tr

    from .bench_ray import SPEC, write_shards

    folder = root / "ray"
    folder.mkdir()
    paths = write_shards(folder, args.ray_shards, args.ray_records)
    n = args.ray_shards * args.ray_records
    # Ray's reader would take our index sidecars for data if they were plain files
    # beside the shards; they are in the hidden .tfeidx/ folder, and each reader gets
    # the file list anyway.
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False

        def ours() -> tuple[int, int]:
            return tr.read_tfrecords(paths, features=SPEC).materialize().count(), 0

        def theirs() -> tuple[int, int]:
            return ray.data.read_tfrecords(paths).materialize().count(), 0

        r = repeats(3)
        print(
            f"Ray {ray.__version__}, {args.workers} CPUs: {args.ray_shards} shards x "
            f"{args.ray_records} small Examples, read into parsed columns "
            f"(materialize()); {r} timed runs after one untimed round\n",
            flush=True,
        )
        got = compare([("ours", ours), ("ray.data.read_tfrecords", theirs)], r, warmup=1)
        for m in got:
            if m.records != n:
                raise RuntimeError(f"{m.name} read {m.records} rows, expected {n}")
        print(table("Ray Data: parsed read", [("parsed columns", got[0], got[1])]))
        print(_runs_line(got))
        print(
            f"ratio: {got[1].seconds / got[0].seconds:.1f}x best, "
            f"{statistics.median(got[1].runs) / statistics.median(got[0].runs):.1f}x median"
        )
        crc_check(root, paths[0], tr, ray, SPEC)
    finally:
        ray.shutdown()


def crc_check(root: Path, path: str, tr: Any, ray: Any, spec: Any) -> None:
    """One byte of record 100's data CRC flipped in a copy: what each reader does."""
    bad = root / "bad-crc"
    bad.mkdir()
    copy = bad / "bad.tfrecord"
    shutil.copyfile(path, copy)
    idx = tfe.Index.build(copy)
    # header (length 8 + its CRC 4) + data, then the data's 4-byte masked CRC32C.
    offset = int(idx.offsets[100]) + 12 + int(idx.lengths[100])
    with open(copy, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0x01]))
    try:
        rows = tr.read_tfrecords([str(copy)], features=spec).materialize().count()
        ours = f"returned {rows} rows without complaint (WRONG)"
    except tfe.CorruptedRecordError as err:
        ours = f"raised CorruptedRecordError (record {err.record_index}, offset {err.offset})"
    try:
        rows = ray.data.read_tfrecords([str(copy)]).materialize().count()
        theirs = f"returned all {rows} rows, no error: it checks no CRC"
    except Exception as err:  # noqa: BLE001 - reporting whatever Ray raises
        theirs = f"raised {type(err).__name__}"
    print(f"\none byte of a data CRC flipped (record 100 of a shard): ours {ours}; Ray's {theirs}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--big-mb", type=int, default=256, help="size of the big file, MiB")
    parser.add_argument("--big-record-bytes", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2, help="direct_num_workers, Ray CPUs")
    parser.add_argument(
        "--mode",
        default="multi_threading",
        choices=["in_memory", "multi_threading", "multi_processing"],
        help="direct_running_mode",
    )
    parser.add_argument("--ray-shards", type=int, default=20)
    parser.add_argument("--ray-records", type=int, default=5000)
    parser.add_argument("--no-beam", action="store_true")
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import importlib.util

    missing = [m for m in ("apache_beam", "ray") if importlib.util.find_spec(m) is None]
    if missing:
        # `make bench` installs the [bench] extra only: say so instead of failing it.
        print(
            f"bench_scale not run: {', '.join(missing)} not installed "
            "(pip install '.[beam,ray,tf]' google-crc32c)"
        )
        return
    root = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    # Indexes of these temporary files go to a cache inside the temporary folder (the
    # workers inherit the variable): none is left behind in the user's cache.
    os.environ.setdefault("TFE_INDEX_CACHE", str(root / "index-cache"))
    t = time.perf_counter()
    try:
        if not args.no_beam:
            _beam_cases(args, root)
        if not args.no_ray:
            _ray_cases(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n(whole run {time.perf_counter() - t:.0f} s)")


if __name__ == "__main__":
    main()
