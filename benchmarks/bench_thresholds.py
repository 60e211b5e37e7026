"""Two tuned thresholds checked on record shapes the matrix does not have (held out).

    python -m benchmarks.bench_thresholds
    python -m benchmarks.bench_thresholds --shapes captioned --rounds 3
    python -m benchmarks.bench_thresholds --rows walk --no-random-holds

``epochs.STRING_HEAVY_BYTES`` (an epoch prepares its chunks on one read-ahead thread,
not two, for records of 4 KiB or more with a string feature kept and nothing else but
scalars) and ``access_methods.SAMPLES_WALK_MIN`` / ``SAMPLES_WALK_MIN_HELD``
(``__getitems__`` of that many records or more are cut from one batch decode instead
of decoded record by record; the second where random reads slice whole-file copies)
were first set from the matrix's own shapes (``benchmarks.shapes``). This runs both
choices of each on shapes written for this check only (:data:`HELD_OUT`), alternating
in one process, and says which one the rule takes:

- parsed ``batches(256)`` in order and shuffled, one read-ahead thread against two;
- ``__getitems__`` of 8 to 96 random records, record by record against the batch
  decode.

``--shapes image,detection`` runs the same on the matrix's shapes (the ones the
thresholds were set on); ``--shapes clicks,product`` on a third set
(:data:`THIRD_SET`), written after the held-out shapes had been used to set the
per-record floors.

Prints µs per record, best of ``--rounds`` rounds of best-of-3 (lower is faster).
"""

from __future__ import annotations

import argparse

import numpy as np

import tfrecord_engine as tfe
from benchmarks.common import best_seconds, patched
from benchmarks.shapes import SHAPES, Record, Shape, write_shape
from tfrecord_engine.data import access_methods, epochs

RECORDS = 20_000
_JPEG = b"\xff\xd8\xff\xe0"


def _captioned(rng: np.random.Generator, lo: float, hi: float) -> Record:
    """An image of 3-6 KiB with its caption's text and token ids (records of ~3.5-7 KB:
    both sides of the 4 KiB threshold)."""
    size = 3072 + int(3072 * (lo + (hi - lo) * rng.random()))
    words = int(rng.integers(5, 61))
    return {
        "image": _JPEG + rng.integers(0, 256, size - 4, dtype=np.uint8).tobytes(),
        "caption": b" ".join(b"w%d" % w for w in rng.integers(0, 9000, words)),
        "caption_ids": rng.integers(0, 30_000, words),
        "label": int(rng.integers(0, 80)),
    }


def _audio(rng: np.random.Generator, lo: float, hi: float) -> Record:
    """A clip of 0.5-2.5 K float32 samples with a speaker name and a word count."""
    n = 500 + int(2000 * (lo + (hi - lo) * rng.random()))
    return {
        "samples": rng.standard_normal(n).astype(np.float32),
        "speaker": b"speaker-%04d" % rng.integers(0, 5000),
        "words": int(rng.integers(0, 40)),
    }


def _clicks(rng: np.random.Generator, lo: float, hi: float) -> Record:
    """A recommender's log line: 5-200 item ids with their dwell times, a user id, a
    country code, a device name, a label (~0.1-2 KB)."""
    n = 5 + int(195 * (lo + (hi - lo) * rng.random()))
    return {
        "user": int(rng.integers(0, 1 << 40)),
        "items": rng.integers(0, 5_000_000, n),
        "dwell": rng.exponential(3.0, n).astype(np.float32),
        "country": bytes(rng.choice(list(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"), 2).tolist()),
        "device": b"device-%d" % rng.integers(0, 300),
        "clicked": int(rng.integers(0, 2)),
    }


def _product(rng: np.random.Generator, lo: float, hi: float) -> Record:
    """A shop's product: a title, a description of 0.2-2 KB, a 1-4 KiB thumbnail, 1-8
    category ids, a price and a rating (~1.5-6 KB)."""
    share = lo + (hi - lo) * rng.random()
    return {
        "title": b"t" * int(rng.integers(20, 201)),
        "description": rng.integers(32, 127, 200 + int(1800 * share), np.uint8).tobytes(),
        "thumbnail": _JPEG + rng.integers(0, 256, 1020 + int(3072 * share), np.uint8).tobytes(),
        "categories": rng.integers(0, 20_000, int(rng.integers(1, 9))),
        "price": np.float32(rng.exponential(30.0)),
        "rating": np.float32(rng.uniform(1, 5)),
    }


def _fixed(dtype: str) -> tfe.FixedLenFeature:
    return tfe.FixedLenFeature([], dtype)


#: Shapes of this check only, not in ``benchmarks.shapes.SHAPES`` (held out of the first
#: tuning; both thresholds have since been set on them too: see :data:`THIRD_SET`).
HELD_OUT: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape(
            "captioned",
            "captioned image (3-6 KiB image, caption text and token ids, label)",
            _captioned,
            {
                "image": _fixed("string"),
                "caption": _fixed("string"),
                "caption_ids": tfe.VarLenFeature("int64"),
                "label": _fixed("int64"),
            },
        ),
        Shape(
            "audio",
            "audio clip (0.5-2.5 K float32 samples, speaker name, word count)",
            _audio,
            {
                "samples": tfe.VarLenFeature("float32"),
                "speaker": _fixed("string"),
                "words": _fixed("int64"),
            },
            count_key="words",
        ),
    )
}


#: A third set, written after the per-record floors were set on the first two (which
#: had been used for tuning by then): the check of ``SAMPLES_WALK_MIN[_HELD]`` = 64/96.
THIRD_SET: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape(
            "clicks",
            "recommender log (5-200 item ids and dwell times, user, country, device, label)",
            _clicks,
            {
                "user": _fixed("int64"),
                "items": tfe.VarLenFeature("int64"),
                "dwell": tfe.VarLenFeature("float32"),
                "country": _fixed("string"),
                "device": _fixed("string"),
                "clicked": _fixed("int64"),
            },
            count_key="clicked",
        ),
        Shape(
            "product",
            "product (title, 0.2-2 KB description, 1-4 KiB thumbnail, 1-8 categories, price)",
            _product,
            {
                "title": _fixed("string"),
                "description": _fixed("string"),
                "thumbnail": _fixed("string"),
                "categories": tfe.VarLenFeature("int64"),
                "price": _fixed("float32"),
                "rating": _fixed("float32"),
            },
            count_key="price",
        ),
    )
}


def shape_named(name: str) -> Shape:
    """A shape of this check (held out, third set) or of the matrix, by name."""
    for table in (HELD_OUT, THIRD_SET, SHAPES):
        if name in table:
            return table[name]
    raise SystemExit(f"no shape {name!r}: {', '.join([*HELD_OUT, *THIRD_SET, *SHAPES])}")


def _threads_rows(ds: tfe.RecordDataset, shape: Shape, rounds: int) -> list[str]:
    """Parsed batches(256), in order and shuffled, on one read-ahead thread and on two."""
    n = len(ds)
    record_bytes = ds._opened().record_bytes
    chosen = epochs.read_ahead_threads(2, ds.features or {}, record_bytes, frozenset())
    rows = []
    for shuffle in (False, True):

        def epoch(shuffle: bool = shuffle) -> None:
            got = sum(len(b[shape.count_key]) for b in ds.batches(256, shuffle=shuffle))
            if got != n:
                raise RuntimeError(f"{shape.name}: {got} records, expected {n}")

        times: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(rounds + 1):  # (the first round untimed)
            for threads in (1, 2):
                # One thread: READ_AHEAD_THREADS = 1; two: no record counts as heavy.
                patch = (
                    patched(epochs, "READ_AHEAD_THREADS", 1)
                    if threads == 1
                    else patched(epochs, "STRING_HEAVY_BYTES", 1 << 62)
                )
                with patch:
                    times[threads].append(best_seconds(epoch) / n * 1e6)
        one, two = min(times[1][1:]), min(times[2][1:])
        order = "shuffled" if shuffle else "in order"
        rows.append(
            f"| {shape.name} | batches(256), {order} ({record_bytes:,.0f} B a record) "
            f"| 1 thread {one:.2f} | 2 threads {two:.2f} | the rule: {chosen} "
            f"| {'right' if (one <= two) == (chosen == 1) else 'wrong'} |"
        )
    return rows


def _walk_rows(ds: tfe.RecordDataset, shape: Shape, rounds: int) -> list[str]:
    """``__getitems__(k)``: record by record against the batch decode, per size."""
    n = len(ds)
    rng = np.random.default_rng(2)
    rows = []
    for size in (8, 16, 24, 32, 48, 64, 80, 96, 128):
        lists = [rng.integers(0, n, size).tolist() for _ in range(max(8, 2048 // size))]

        def calls(lists: list[list[int]] = lists) -> None:
            for k in lists:
                ds.__getitems__(k)

        times: dict[str, list[float]] = {"record by record": [], "batch decode": []}
        for _ in range(rounds + 1):
            for label, floor in (("record by record", 1 << 30), ("batch decode", 0)):
                with (
                    patched(access_methods, "SAMPLES_WALK_MIN", floor),
                    patched(access_methods, "SAMPLES_WALK_MIN_HELD", floor),
                ):
                    times[label].append(best_seconds(calls) / (len(lists) * size) * 1e6)
        single = min(times["record by record"][1:])
        walk = min(times["batch decode"][1:])
        walks = ds._walk_beats_single(size)
        rows.append(
            f"| {shape.name} | `__getitems__({size})` | record by record {single:.2f} "
            f"| batch decode {walk:.2f} | the rule: {'batch' if walks else 'records'} "
            f"| {'right' if (walk <= single) == walks else 'wrong'} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shapes", default=",".join(HELD_OUT), help="held-out shapes, or the matrix's"
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--rows", choices=("all", "threads", "walk"), default="all", help="which checks to run"
    )
    parser.add_argument(
        "--no-random-holds",
        action="store_true",
        help="random reads go to the files (the SAMPLES_WALK_MIN side of the rule)",
    )
    args = parser.parse_args()
    print("| shape | access | µs a record | µs a record | rule | rule's choice |")
    print("|---|---|---:|---:|---|---|")
    for name in args.shapes.split(","):
        shape = shape_named(name)
        ds = tfe.RecordDataset(
            write_shape(shape, RECORDS),
            features=shape.features,
            random_holds=not args.no_random_holds,
        )
        rows = []
        if args.rows in ("all", "threads"):
            rows += _threads_rows(ds, shape, args.rounds)
        if args.rows in ("all", "walk"):
            rows += _walk_rows(ds, shape, args.rounds)
        for row in rows:
            print(row, flush=True)


if __name__ == "__main__":
    main()
