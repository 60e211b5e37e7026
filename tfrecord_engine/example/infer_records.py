"""Feeding schema statistics (``tfr schema``, ``tfe.infer_features``) a batch of records
at a time.

Examples are split into their features without decoding values (the wire-level map
``tfe.parse_example`` itself uses, so the statistics describe what parsing will see),
and the value counts of every key come from one batched ``RaggedFeature`` parse: numpy
work per batch, not a Python decode per record. Records with feature lists
(SequenceExamples) and anything the batch path does not take go through the per-record
decoder instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from ..errors import MalformedExampleError, ParseError
from .batch import parse_example
from .decode import decode_example, decode_sequence_example
from .infer import FeatureStats, SchemaStats
from .specs import RaggedFeature
from .values import RaggedValue
from .wire import (
    KIND_BYTES,
    KIND_FLOAT,
    KIND_INT64,
    KIND_NONE,
    feature_kind,
    sequence_example_maps,
)

__all__ = ["Decode", "Kind", "add_records", "decode_any"]

#: How records are read: as Examples, SequenceExamples, or whichever each one is.
Kind = Literal["example", "sequence", "auto"]
Arrays = dict[str, npt.NDArray[Any]]
#: One record decoded: ``(features or context, feature lists or None)``.
Decode = Callable[[bytes, Kind, str], "tuple[Arrays, Mapping[str, list[npt.NDArray[Any]]] | None]"]


def decode_any(
    record: bytes, kind: Kind, where: str
) -> tuple[Arrays, Mapping[str, list[npt.NDArray[Any]]] | None]:
    """``record`` decoded as ``kind`` (``auto``: a SequenceExample when it has feature
    lists, else an Example); ``where`` names it in the error.

    Raises:
        MalformedExampleError: not a valid (Sequence)Example.
    """
    try:
        if kind == "example":
            return decode_example(record), None
        context, lists = decode_sequence_example(record)
    except MalformedExampleError as exc:
        raise MalformedExampleError(
            f"{where}: not a tf.train.Example or SequenceExample ({exc})", offset=exc.offset
        ) from exc
    return context, (lists if kind == "sequence" or lists else None)


_TYPES: Final = {KIND_INT64: "int64", KIND_FLOAT: "float", KIND_BYTES: "bytes"}
_DTYPES: Final = {KIND_INT64: "int64", KIND_FLOAT: "float32", KIND_BYTES: "string"}


def _one_by_one(
    stats: SchemaStats,
    records: Sequence[bytes],
    wheres: Sequence[str],
    kind: Kind,
    decode: Decode,
) -> None:
    for record, where in zip(records, wheres, strict=True):
        features, lists = decode(record, kind, where)
        stats.add(features, lists)


def add_records(
    stats: SchemaStats,
    records: Sequence[bytes],
    wheres: Sequence[str],
    kind: Kind,
    decode: Decode = decode_any,
) -> None:
    """Adds a batch of records to ``stats``; ``wheres`` name each record for errors.

    ``decode`` reads the records the batch path does not take (SequenceExamples,
    malformed records: its error names the record).
    """
    if kind == "sequence":
        _one_by_one(stats, records, wheres, kind, decode)
        return
    # key -> (positions in the batch, feature kinds) of the records that hold it
    seen: dict[str, tuple[list[int], list[int]]] = {}
    plain: list[int] = []  # batch positions of Examples
    sequences: list[int] = []
    try:
        for i, record in enumerate(records):
            context, lists = sequence_example_maps(record)
            if lists and kind == "auto":
                sequences.append(i)
                continue
            plain.append(i)
            for raw_key, span in context.items():
                k = feature_kind(record, span)
                if k != KIND_NONE:  # a Feature with no list is missing, as in parsing
                    rows, kinds = seen.setdefault(
                        raw_key.decode("utf-8", "surrogateescape"), ([], [])
                    )
                    rows.append(len(plain) - 1)
                    kinds.append(k)
    except ParseError:
        # A malformed record: the per-record path raises the error that names it.
        _one_by_one(stats, records, wheres, kind, decode)
        return
    parsed = _lengths([records[i] for i in plain], seen)
    if parsed is None:
        _one_by_one(stats, records, wheres, kind, decode)
        return
    lengths, sizes, values = parsed
    stats.records += len(plain)
    for key, (rows, kinds) in seen.items():
        feature = stats.features.setdefault(key, FeatureStats())
        counts = lengths.get(key)
        if counts is not None:
            feature.add_many(_TYPES[kinds[0]], counts[np.asarray(rows, dtype=np.int64)])
            if key in sizes:
                feature.add_sizes(sizes[key])
                feature.add_formats(values[key])
            continue
        for k in kinds:  # conflicting kinds in this batch: types only
            feature.add_many(_TYPES[k], None)
    _one_by_one(
        stats, [records[i] for i in sequences], [wheres[i] for i in sequences], kind, decode
    )


Lengths = dict[str, npt.NDArray[np.int64]]


def _lengths(
    records: list[bytes], seen: dict[str, tuple[list[int], list[int]]]
) -> tuple[Lengths, Lengths, dict[str, list[bytes]]] | None:
    """Value counts per record of every key with one kind in the batch, the byte size
    of every bytes value, and the bytes values themselves (None: failed)."""
    spec = {
        key: RaggedFeature(_DTYPES[kinds[0]])
        for key, (_, kinds) in seen.items()
        if len(set(kinds)) == 1
    }
    if not spec or not records:
        return {}, {}, {}
    try:
        parsed = parse_example(records, spec)
    except ParseError:
        return None
    out: Lengths = {}
    sizes: Lengths = {}
    values: dict[str, list[bytes]] = {}
    for key, value in parsed.items():
        assert isinstance(value, RaggedValue)
        out[key] = np.diff(value.row_splits).astype(np.int64)
        if spec[key].dtype == "string":
            flat = np.asarray(value.values).tolist()
            sizes[key] = np.fromiter(map(len, flat), np.int64, len(flat))
            values[key] = flat
    return out, sizes, values
