"""Index build, batched random access and shuffled epochs, side by side with peers.

Run: ``python -m benchmarks.bench_index [--records 70000] [--dir bench-data]``.

One run writes the files once (70,000 MNIST-like ~850-byte records, label-sorted, with
our writer; the ArrayRecord copy holds the same records) and prints one table:

- index build: ``tfe.Index.build`` vs the ``tfrecord`` package's ``tfrecord2idx`` on the
  same file, for equal-size records and for varying sizes (no equal-stride fast path);
- batched random access: 1,024 random indices per call, CRCs verified, vs ArrayRecord's
  batched ``read(indices)`` (``group_size:1``, its random-access setting);
- a shuffled epoch vs a sequential one;
- the locality-aware shuffle: order quality vs the I/O requests it saves.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from tfrecord_engine.data.sampler import BlockShuffle, epoch_order
from tfrecord_engine.data.source import FetcherRecords

RECORD_SIZE = 850
BATCH = 1024


def _records(n: int, rng: np.random.Generator, vary: bool) -> tuple[list[bytes], np.ndarray]:
    """MNIST-like payloads: a label byte, then sparse "ink" (~19% non-zero bytes)."""
    labels = np.sort(rng.integers(0, 10, n))
    sizes = rng.integers(RECORD_SIZE - 60, RECORD_SIZE + 60, n) if vary else np.full(n, RECORD_SIZE)
    width = RECORD_SIZE + 60
    ink = rng.integers(1, 256, (n, width), dtype=np.uint8) * (rng.random((n, width)) < 0.19)
    pixels = ink.astype(np.uint8)
    return [
        bytes([int(lab)]) + pixels[i, : int(s) - 1].tobytes()
        for i, (lab, s) in enumerate(zip(labels, sizes, strict=True))
    ], labels


def _race(fns: dict[str, Callable[[], object]], repeat: int = 7) -> dict[str, float]:
    """Best time of each function, run round-robin so load changes hit all alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def _row(name: str, ours: str, peer: str, ratio: str) -> None:
    print(f"| {name:<52} | {ours:>16} | {peer:>16} | {ratio:>8} |")


def bench_build(path: str, vary_path: str) -> None:
    from tfrecord.tools.tfrecord2idx import create_index

    for label, p in (("equal-size records", path), ("varying-size records", vary_path)):
        t = _race(
            {
                "ours": lambda p=p: tfe.Index.build(p),  # type: ignore[misc]
                "peer": lambda p=p: create_index(p, p + ".tfindex"),  # type: ignore[misc]
            }
        )
        ours, peer = t["ours"], t["peer"]
        n = len(tfe.Index.build(p))
        _row(
            f"index build, {label} (records/s)",
            f"{n / ours:,.0f}",
            f"{n / peer:,.0f}",
            f"{peer / ours:.1f}x",
        )
        ours_text = tfe.Index.build(p).to_text()
        with open(p + ".tfindex") as f:
            assert f.read() == ours_text, "tfrecord2idx and our text export disagree"


def bench_random_access(path: str, records: list[bytes], workdir: str, calls: int) -> None:
    from array_record.python.array_record_module import ArrayRecordReader, ArrayRecordWriter

    ar_path = os.path.join(workdir, "mnist.array_record")
    if not os.path.exists(ar_path):
        w = ArrayRecordWriter(ar_path, "group_size:1")
        for r in records:
            w.write(r)
        w.close()
    n = len(records)
    rng = np.random.default_rng(1)
    picks = [rng.integers(0, n, BATCH) for _ in range(calls)]
    ds = tfe.RecordDataset(path)
    assert ds[picks[0]] == [records[i] for i in picks[0]]

    def ours() -> None:
        for p in picks:
            ds[p]

    readers = {
        "random-access options": ArrayRecordReader(
            ar_path, "readahead_buffer_size:0,max_parallelism:0"
        ),
        "default options": ArrayRecordReader(ar_path),
    }
    lists = [p.tolist() for p in picks]
    fns: dict[str, Callable[[], object]] = {"ours": ours}
    for label, reader in readers.items():
        assert reader.read(lists[0]) == [records[i] for i in lists[0]]

        def peer(reader: Any = reader) -> None:
            for p in lists:
                reader.read(p)

        fns[label] = peer
    t = _race(fns)
    total = calls * BATCH
    for label in readers:
        _row(
            f"random access 1024/call, CRC (rec/s); AR {label}",
            f"{total / t['ours']:,.0f}",
            f"{total / t[label]:,.0f}",
            f"{t[label] / t['ours']:.1f}x",
        )


def bench_shards(records: list[bytes], workdir: str, calls: int) -> None:
    """The same records as 1,000 shards: a random batch touches ~650 files."""
    shard_dir = os.path.join(workdir, "shards")
    os.makedirs(shard_dir, exist_ok=True)
    per = -(-len(records) // 1000)
    for i in range(0, len(records), per):
        p = os.path.join(shard_dir, f"mnist.tfrecord-{i // per:05d}-of-01000")
        if not os.path.exists(p):
            with tfe.TFRecordWriter(p, index=True) as w:
                w.write_many(records[i : i + per])
    one = tfe.RecordDataset(os.path.join(workdir, "mnist.tfrecord"))
    many = tfe.RecordDataset(os.path.join(shard_dir, "mnist.tfrecord-*"))
    rng = np.random.default_rng(2)
    picks = [rng.integers(0, len(many), BATCH) for _ in range(calls)]
    assert many[picks[0]] == one[picks[0]]

    def run(ds: tfe.RecordDataset) -> Callable[[], None]:
        def go() -> None:
            for p in picks:
                ds[p]

        return go

    t = _race({"many": run(many), "one": run(one)})
    total = calls * BATCH
    _row(
        "random access over 1,000 shards; peer = one file",
        f"{total / t['many']:,.0f}",
        f"{total / t['one']:,.0f}",
        f"{t['one'] / t['many']:.2f}x",
    )


def bench_epochs(path: str) -> None:
    ds = tfe.RecordDataset(path)
    n = len(ds)

    def epoch(shuffle: Any) -> Callable[[], None]:
        def run() -> None:
            for _ in ds.batches(BATCH, shuffle=shuffle, seed=3):
                pass

        return run

    t = _race({"seq": epoch(False), "shuf": epoch(True), "block": epoch(BlockShuffle(256, 16))})
    _row(
        "shuffled epoch (rec/s); peer = sequential epoch",
        f"{n / t['shuf']:,.0f}",
        f"{n / t['seq']:,.0f}",
        f"{t['seq'] / t['shuf']:.2f}x",
    )
    _row(
        "BlockShuffle(256,16) epoch (rec/s); peer = sequential",
        f"{n / t['block']:,.0f}",
        f"{n / t['seq']:,.0f}",
        f"{t['seq'] / t['block']:.2f}x",
    )


def bench_compressed(records: list[bytes], workdir: str) -> None:
    """GZIP with restart points: epochs in each order (one run each: slow ones are slow)."""
    path = os.path.join(workdir, "mnist-gzip.tfrecord")
    with tfe.TFRecordWriter(path, "GZIP", index=True) as w:  # a restart every 256 records
        w.write_many(records)
    ds = tfe.RecordDataset(path, compression="GZIP")
    n = len(ds)
    print()
    print(
        f"GZIP with restart points every 256 records ({os.path.getsize(path) / 2**20:.1f} MiB):\n"
    )
    print("| epoch order | records/s |")
    print("|---|---|")
    for name, mode in (
        ("sequential", False),
        ("BlockShuffle(256, 16)", BlockShuffle(256, 16)),
        ("global shuffle", True),
    ):
        ds.close()  # cold block cache
        t = time.perf_counter()
        got = sum(len(b) for b in ds.batches(BATCH, shuffle=mode, seed=1))
        assert got == n
        print(f"| {name} | {n / (time.perf_counter() - t):,.0f} |")


def bench_locality(path: str, labels: np.ndarray) -> None:
    """Shuffle quality vs I/O requests through a byte-range fetcher (remote storage)."""
    idx = tfe.Index.build(path)
    n = len(idx)
    with open(path, "rb") as f:
        blob = f.read()
    print()
    print(f"Shuffle quality vs I/O ({n:,} label-sorted records, batches of {BATCH}):\n")
    print("| shuffle mode | rank corr. | labels in first 100 | labels per batch (mean) |", end="")
    print(" requests/epoch | MiB fetched |")
    print("|---|---|---|---|---|---|")
    modes: list[tuple[str, Any]] = [
        ("none (sequential)", False),
        ("global (uniform permutation)", True),
        *[
            (f"BlockShuffle({b}, {w})", BlockShuffle(b, w))
            for b, w in ((16, 64), (64, 16), (64, 64), (256, 16), (256, 4))
        ],
    ]
    for name, mode in modes:
        order = epoch_order(n, shuffle=mode, seed=0)
        rho = float(np.corrcoef(np.arange(n), order)[0, 1])
        first = len(set(labels[order[:100]].tolist()))
        per_batch = np.mean(
            [len(set(labels[order[i : i + BATCH]].tolist())) for i in range(0, n, BATCH)]
        )
        if isinstance(mode, BlockShuffle):
            # The buffer: the blocks one batch can span, plus three windows.
            src = FetcherRecords(
                idx,
                lambda o, s: blob[o : o + s],
                block_records=mode.block_size,
                cache_blocks=BATCH // mode.block_size + 3 * mode.window,
            )
        else:
            src = FetcherRecords(idx, lambda o, s: blob[o : o + s])
        for i in range(0, n, BATCH):
            assert len(src.read(order[i : i + BATCH])) == len(order[i : i + BATCH])
        print(
            f"| {name} | {rho:+.4f} | {first} | {per_batch:.1f} | {src.requests:,} | "
            f"{src.bytes_fetched / 2**20:.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=70_000)
    parser.add_argument("--dir", default="bench-data")
    parser.add_argument("--calls", type=int, default=200, help="random-access calls per run")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(0)
    records, labels = _records(args.records, rng, vary=False)
    varied, _ = _records(args.records, rng, vary=True)
    path = os.path.join(args.dir, "mnist.tfrecord")
    vary_path = os.path.join(args.dir, "mnist-varied.tfrecord")
    for p, recs in ((path, records), (vary_path, varied)):
        with tfe.TFRecordWriter(p, index=True) as w:
            w.write_many(recs)
    print(f"{args.records:,} label-sorted records of ~{RECORD_SIZE} bytes", end="")
    print(" (best of 7 round-robin runs)\n")
    _row("benchmark", "ours", "peer", "ratio")
    print(f"|{'-' * 54}|{'-' * 18}|{'-' * 18}|{'-' * 10}|")
    bench_build(path, vary_path)
    bench_random_access(path, records, args.dir, args.calls)
    bench_shards(records, args.dir, args.calls)
    bench_epochs(path)
    bench_locality(path, labels)
    bench_compressed(records, args.dir)


if __name__ == "__main__":
    main()
