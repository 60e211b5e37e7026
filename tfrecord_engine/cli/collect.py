"""Feeding ``tfr schema``'s statistics a batch of records at a time.

Examples are split into their features without decoding values (the wire-level map
``tfe.parse_example`` itself uses, so the statistics describe what parsing will see),
and the value counts of every key come from one batched ``RaggedFeature`` parse: numpy
work per batch, not a Python decode per record. Records with feature lists
(SequenceExamples) and anything the batch path does not take go through the per-record
decoder instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from ..errors import ParseError
from ..example import RaggedFeature, RaggedValue, parse_example
from ..example.wire import (
    KIND_BYTES,
    KIND_FLOAT,
    KIND_INT64,
    KIND_NONE,
    feature_kind,
    sequence_example_maps,
)
from .infer import FeatureStats, SchemaStats
from .render import Kind, decode_record

__all__ = ["add_records"]

_TYPES: Final = {KIND_INT64: "int64", KIND_FLOAT: "float", KIND_BYTES: "bytes"}
_DTYPES: Final = {KIND_INT64: "int64", KIND_FLOAT: "float32", KIND_BYTES: "string"}


def _one_by_one(
    stats: SchemaStats, records: Sequence[bytes], wheres: Sequence[str], kind: Kind
) -> None:
    for record, where in zip(records, wheres, strict=True):
        decoded = decode_record(record, kind, where=where)
        stats.add(decoded.features, decoded.lists)


def add_records(
    stats: SchemaStats, records: Sequence[bytes], wheres: Sequence[str], kind: Kind
) -> None:
    """Adds a batch of records to ``stats``; ``wheres`` name each record for errors."""
    if kind == "sequence":
        _one_by_one(stats, records, wheres, kind)
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
        _one_by_one(stats, records, wheres, kind)
        return
    parsed = _lengths([records[i] for i in plain], seen)
    if parsed is None:
        _one_by_one(stats, records, wheres, kind)
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
    _one_by_one(stats, [records[i] for i in sequences], [wheres[i] for i in sequences], kind)


Arrays = dict[str, npt.NDArray[np.int64]]


def _lengths(
    records: list[bytes], seen: dict[str, tuple[list[int], list[int]]]
) -> tuple[Arrays, Arrays, dict[str, list[bytes]]] | None:
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
    out: Arrays = {}
    sizes: Arrays = {}
    values: dict[str, list[bytes]] = {}
    for key, value in parsed.items():
        assert isinstance(value, RaggedValue)
        out[key] = np.diff(value.row_splits).astype(np.int64)
        if spec[key].dtype == "string":
            flat = np.asarray(value.values).tolist()
            sizes[key] = np.fromiter(map(len, flat), np.int64, len(flat))
            values[key] = flat
    return out, sizes, values
