"""The record shapes of the shape matrix (``benchmarks.bench_shapes``): generators and specs.

Every shape is written as several files (``FILES``) whose record counts, value sizes and
feature orders differ: each file draws its lengths from its own sub-range of the shape's
range, writes its features in its own order, and a quarter of its records use an order
of their own. A decoder tuned to one layout meets many here.

Records are serialized with the engine's encoder (``tfe.encode_example`` /
``tfe.encode_sequence_example``), which writes map entries in the mapping's iteration
order: the order of the dict built here is the order in the bytes (TensorFlow's own
serializer would sort nothing either; ``check_orders`` verifies the files really vary).
Files are cached under ``DATA_DIR/shapes-<version>/<shape>-<records>/`` with their
indexes (written by ``TFRecordWriter(index=True)``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from benchmarks.common import DATA_DIR

_VERSION = "v1"
#: Files per shape.
FILES = 4
#: Share of records written in an order of their own (the rest in their file's order).
OWN_ORDER = 0.25

Values = dict[str, Any]
#: One record's values: an Example's features, or a SequenceExample's (context, lists).
Record = Values | tuple[Values, Values]
#: ``make(rng, lo, hi)``: one record; ``lo``/``hi`` (fractions of the shape's length
#: ranges, set per file) narrow every variable length to that file's sub-range.
Maker = Callable[[np.random.Generator, float, float], Record]


@dataclass(frozen=True)
class Shape:
    """One record shape: how to make its records and the spec that parses them."""

    name: str
    title: str
    make: Maker
    #: The spec of an Example shape; the context spec of a SequenceExample shape.
    features: Mapping[str, Any]
    #: A SequenceExample shape's sequence spec (``None``: an Example shape).
    sequence_features: Mapping[str, Any] | None = None
    #: The feature whose first dimension counts a batch's records.
    count_key: str = "label"
    notes: str = ""
    #: Keys a per-record baseline decodes, with how (see bench_shapes' protobuf Dataset).
    kinds: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_sequence(self) -> bool:
        return self.sequence_features is not None


def _length(rng: np.random.Generator, low: int, high: int, lo: float, hi: float) -> int:
    """A length in ``[low, high]``, drawn from the file's sub-range ``[lo, hi]`` of it."""
    a = low + round((high - low) * lo)
    b = low + round((high - low) * hi)
    return int(rng.integers(a, max(a, b) + 1))


def _blob(rng: np.random.Generator, size: int, magic: bytes = b"") -> bytes:
    return magic + rng.integers(0, 256, size=max(0, size - len(magic)), dtype=np.uint8).tobytes()


_JPEG = b"\xff\xd8\xff\xe0"


def _image(rng: np.random.Generator, lo: float, hi: float) -> Record:
    return {
        "image/encoded": _blob(rng, _length(rng, 2 << 10, 12 << 10, lo, hi), _JPEG),
        "image/class/label": int(rng.integers(0, 1000)),
    }


def _detection(rng: np.random.Generator, lo: float, hi: float) -> Record:
    boxes = _length(rng, 1, 20, lo, hi)
    corners = np.sort(rng.random((2, boxes, 2), dtype=np.float32), axis=0)
    height, width = (int(v) for v in rng.integers(240, 1025, size=2))
    return {
        "image/encoded": _blob(rng, _length(rng, 8 << 10, 24 << 10, lo, hi), _JPEG),
        "image/height": height,
        "image/width": width,
        "image/object/bbox/xmin": corners[0, :, 0],
        "image/object/bbox/ymin": corners[0, :, 1],
        "image/object/bbox/xmax": corners[1, :, 0],
        "image/object/bbox/ymax": corners[1, :, 1],
        "image/object/class/label": rng.integers(1, 91, size=boxes),
        "image/filename": b"%012d.jpg" % rng.integers(0, 10**12),
    }


def _tokens(rng: np.random.Generator, lo: float, hi: float) -> Record:
    # Ids of a 50k vocabulary: varints of 1 to 3 bytes, as real token ids.
    return {
        "input_ids": rng.integers(0, 50_000, size=_length(rng, 16, 512, lo, hi)),
        "label": int(rng.integers(0, 2)),
    }


def _mixed(rng: np.random.Generator, lo: float, hi: float) -> Record:
    caption = rng.integers(97, 123, size=_length(rng, 8, 400, lo, hi), dtype=np.uint8)
    return {
        "id": int(rng.integers(0, 2**62)),
        "label": int(rng.integers(0, 100)),
        "embedding": rng.standard_normal(16).astype(np.float32),
        "caption": caption.tobytes(),
        "thumbnail": _blob(rng, 3 << 10),
    }


def _sequence(rng: np.random.Generator, lo: float, hi: float) -> Record:
    steps = _length(rng, 5, 60, lo, hi)
    return (
        {"label": int(rng.integers(0, 400)), "clip_id": int(rng.integers(0, 2**40))},
        {"frames": rng.standard_normal((steps, 32)).astype(np.float32)},
    )


def _ragged(rng: np.random.Generator, lo: float, hi: float) -> Record:
    words = _length(rng, 3, 40, lo, hi)
    word_lengths = rng.integers(1, 13, size=words)
    tags = [b"tag%d" % t for t in rng.integers(0, 200, size=int(rng.integers(0, 6)))]
    return {
        "chars": rng.integers(0, 300, size=int(word_lengths.sum())),
        "word_lengths": word_lengths,
        "tags": np.array(tags, dtype="S") if tags else np.zeros(0, dtype="S1"),
        "label": int(rng.integers(0, 20)),
    }


def _tabular(rng: np.random.Generator, lo: float, hi: float) -> Record:
    # Categorical ids of varied magnitudes: varints of 1 to 6 bytes.
    bits = rng.integers(1, 40, size=16)
    return {
        "x": rng.standard_normal(64).astype(np.float32),
        "ids": rng.integers(0, 2**40, size=16) % (np.int64(1) << bits),
        "weight": float(rng.random()),
        "label": int(rng.integers(0, 2)),
    }


WIDE_COUNT = 200
_WIDE_KINDS = [
    ("int64", "float32", "string")[k] for k in np.random.default_rng(5).integers(0, 3, WIDE_COUNT)
]


def _wide(rng: np.random.Generator, lo: float, hi: float) -> Record:
    ints = rng.integers(0, 2**40, size=WIDE_COUNT) >> rng.integers(0, 40, size=WIDE_COUNT)
    floats = rng.standard_normal(WIDE_COUNT).astype(np.float32)
    out: Values = {}
    for j, kind in enumerate(_WIDE_KINDS):
        if kind == "int64":
            out[f"f{j:03d}"] = int(ints[j])
        elif kind == "float32":
            out[f"f{j:03d}"] = float(floats[j])
        else:
            out[f"f{j:03d}"] = b"v%d" % ints[j]
    out["label"] = int(rng.integers(0, 2))
    return out


def _fixed(dtype: str, shape: tuple[int, ...] = ()) -> tfe.FixedLenFeature:
    return tfe.FixedLenFeature(list(shape), dtype)


_BOX = ("xmin", "ymin", "xmax", "ymax")

SHAPES: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape(
            "image",
            "image classification (2-12 KiB encoded image + label)",
            _image,
            {"image/encoded": _fixed("string"), "image/class/label": _fixed("int64")},
            count_key="image/class/label",
        ),
        Shape(
            "detection",
            "detection (8-24 KiB image, height, width, 1-20 boxes, filename)",
            _detection,
            {
                "image/encoded": _fixed("string"),
                "image/height": _fixed("int64"),
                "image/width": _fixed("int64"),
                **{f"image/object/bbox/{c}": tfe.VarLenFeature("float32") for c in _BOX},
                "image/object/class/label": tfe.VarLenFeature("int64"),
                "image/filename": _fixed("string"),
            },
            count_key="image/height",
        ),
        Shape(
            "tokens",
            "NLP tokens (16-512 int64 ids, VarLenFeature, + label)",
            _tokens,
            {"input_ids": tfe.VarLenFeature("int64"), "label": _fixed("int64")},
        ),
        Shape(
            "mixed",
            "mixed (id, label, float[16], caption 8-400 B, 3 KiB RawFeature)",
            _mixed,
            {
                "id": _fixed("int64"),
                "label": _fixed("int64"),
                "embedding": _fixed("float32", (16,)),
                "caption": _fixed("string"),
                "thumbnail": tfe.RawFeature([3 << 10], "uint8"),
            },
        ),
        Shape(
            "sequence",
            "SequenceExample (context label + id, 5-60 frames of float32[32])",
            _sequence,
            {"label": _fixed("int64"), "clip_id": _fixed("int64")},
            sequence_features={"frames": tfe.FixedLenSequenceFeature([32], "float32")},
        ),
        Shape(
            "ragged",
            "RaggedFeature (3-40 words of 1-12 char ids, RowLengths; 0-5 string tags)",
            _ragged,
            {
                "chars": tfe.RaggedFeature(
                    "int64", partitions=[tfe.RaggedFeature.RowLengths("word_lengths")]
                ),
                "tags": tfe.RaggedFeature("string"),
                "label": _fixed("int64"),
            },
        ),
        Shape(
            "tabular",
            "tabular (float[64], int64[16] of 1-6 byte varints, weight, label)",
            _tabular,
            {
                "x": _fixed("float32", (64,)),
                "ids": _fixed("int64", (16,)),
                "weight": _fixed("float32"),
                "label": _fixed("int64"),
            },
        ),
        Shape(
            "wide",
            f"wide ({WIDE_COUNT} scalar features: int64, float32, short strings)",
            _wide,
            {
                **{f"f{j:03d}": _fixed(kind) for j, kind in enumerate(_WIDE_KINDS)},
                "label": _fixed("int64"),
            },
        ),
    )
}


def _ordered(values: Values, order: list[str]) -> Values:
    return {k: values[k] for k in order}


def _reorder(record: Record, orders: tuple[list[str], list[str]]) -> Record:
    if isinstance(record, tuple):
        return _ordered(record[0], orders[0]), _ordered(record[1], orders[1])
    return _ordered(record, orders[0])


def _keys(record: Record) -> tuple[list[str], list[str]]:
    if isinstance(record, tuple):
        return list(record[0]), list(record[1])
    return list(record), []


def _encode(record: Record) -> bytes:
    if isinstance(record, tuple):
        return tfe.encode_sequence_example(record[0], record[1])
    return tfe.encode_example(record)


def _permuted(
    rng: np.random.Generator, keys: tuple[list[str], list[str]]
) -> tuple[list[str], list[str]]:
    return (
        [keys[0][i] for i in rng.permutation(len(keys[0]))],
        [keys[1][i] for i in rng.permutation(len(keys[1]))],
    )


def file_counts(n: int, files: int, rng: np.random.Generator) -> list[int]:
    """``n`` records split into ``files`` uneven, non-empty parts (in ``[0.5, 1.5]`` x mean)."""
    if n < files:
        raise ValueError(f"{n} records cannot fill {files} files: ask for at least {files}")
    weights = rng.uniform(0.5, 1.5, size=files)
    counts = np.maximum(1, np.floor(weights / weights.sum() * n)).astype(int)
    counts[0] += n - int(counts.sum())
    return [int(c) for c in counts]


def write_shape(shape: Shape, n: int, seed: int = 0) -> list[str]:
    """The files of ``n`` records of ``shape`` (written once, cached); returns their paths."""
    folder = DATA_DIR / f"shapes-{_VERSION}" / f"{shape.name}-{n}"
    done = folder / "DONE"
    paths = [str(folder / f"part-{k}.tfrecord") for k in range(FILES)]
    if done.exists():
        return paths
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, sum(map(ord, shape.name))])
    for path, count in zip(paths, file_counts(n, FILES, rng), strict=True):
        # Each file its own sub-range of every variable length, and its own feature order.
        lo, hi = sorted(rng.uniform(0.0, 1.0, size=2))
        lo, hi = min(lo, 0.3), max(hi, 0.7)
        file_order = _permuted(rng, _keys(shape.make(rng, lo, hi)))
        with tfe.TFRecordWriter(path, index=True) as writer:
            for _ in range(count):
                record = shape.make(rng, lo, hi)
                own = rng.random() < OWN_ORDER
                order = _permuted(rng, _keys(record)) if own else file_order
                writer.write(_encode(_reorder(record, order)))
    done.write_text(f"{n}\n")
    return paths


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def _fields(buf: bytes) -> list[tuple[int, bytes]]:
    """The length-delimited fields of a message, in byte order (others are not used here)."""
    out, pos = [], 0
    while pos < len(buf):
        tag, pos = _varint(buf, pos)
        if tag & 7 != 2:
            raise ValueError(f"unexpected wire type {tag & 7} at byte {pos}")
        size, pos = _varint(buf, pos)
        out.append((tag >> 3, buf[pos : pos + size]))
        pos += size
    return out


def example_key_order(record: bytes) -> list[str]:
    """The feature keys of a serialized Example (or a SequenceExample's context), in byte
    order (read from the wire: a protobuf map does not promise to keep it)."""
    keys = []
    for number, features in _fields(record):
        if number != 1:
            continue
        for _, entry in _fields(features):
            keys += [v.decode() for n, v in _fields(entry) if n == 1]
    return keys


def check_orders(paths: list[str], sample: int = 50) -> int:
    """The number of distinct feature orders among the first ``sample`` records of each file."""
    orders = set()
    for path in paths:
        for record in itertools.islice(tfe.read_records(path), sample):
            orders.add(tuple(example_key_order(record)))
    return len(orders)


def data_bytes(paths: list[str]) -> int:
    """The files' total size in bytes."""
    return sum(Path(p).stat().st_size for p in paths)
