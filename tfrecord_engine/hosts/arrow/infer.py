"""An Arrow schema inferred from a sample of records, with the rules of ``tfr schema``.

The statistics are those of ``tfr schema`` and ``tfe.infer_features`` (types, value
counts and presence per key, from one batched parse per sample:
:mod:`tfrecord_engine.example.infer_records`); they become column types with table
semantics:

- one value in every record that holds the key: a plain column;
- always ``L >= 2`` values: ``fixed_size_list<L>``; otherwise a ``list``;
- every column is nullable: a record without the key reads as a null (also a key
  missing from the sample but present later is not an error: it is not a column);
- bytes: ``string`` when every sampled value is printable UTF-8 text, else ``binary``;
- a SequenceExample's feature lists: ``list<list<T>>`` (steps of values).

A key with conflicting types, or seen only as empty Features (no type), has no column
type: asking for it raises, naming it (leave it out with ``columns=``, or pass a schema).
Keys come sorted (writers order them differently from process to process).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError
from ...example import lockstep
from ...example.batch import join_records
from ...example.decode import decode_sequence_example
from ...example.infer import FeatureStats, SchemaStats, is_text
from ...example.infer_records import add_records

__all__ = ["DEFAULT_SAMPLE", "Inferred", "infer_schema"]

#: Records read (from the start, in file order) to infer a schema.
DEFAULT_SAMPLE: Final = 1000

_LEAF = {"int64": pa.int64(), "float": pa.float32(), "bytes": pa.binary()}


class Inferred:
    """An inferred schema, and the keys that have none.

    Attributes:
        schema: the columns that have a type (sorted by key).
        sequence: whether the sample held SequenceExamples.
        unknown: key -> why it has no column type.
        records: the records sampled.
    """

    def __init__(self, schema: Any, sequence: bool, unknown: dict[str, str], records: int) -> None:
        self.schema = schema
        self.sequence = sequence
        self.unknown = unknown
        self.records = records

    def select(self, columns: Sequence[str] | None) -> Any:
        """The schema of ``columns`` (all typed columns when ``None``).

        Raises:
            InvalidArgumentError: a column without a type, or one not in the sample.
        """
        if columns is None:
            return self.schema
        out = []
        for c in columns:
            if c in self.unknown:
                raise InvalidArgumentError(
                    f"column {c!r}: {self.unknown[c]}: pass a schema that says its type"
                )
            if self.schema.get_field_index(c) < 0:
                raise InvalidArgumentError(
                    f"column {c!r} is in none of the {self.records} sampled records "
                    f"(keys: {self.schema.names[:20]}): pass a schema to read it"
                )
            out.append(self.schema.field(c))
        return pa.schema(out)


def _texts(records: list[bytes], keys: list[str]) -> dict[str, bool]:
    """Per bytes key of Examples: whether every sampled value is printable UTF-8."""
    if not keys or not records:
        return {}
    buf, starts, ends = join_records(records)
    table = lockstep.walk_examples(buf, starts, ends, [k.encode() for k in keys])
    out = {}
    data = buf.tobytes()
    for i, key in enumerate(keys):
        sel = np.flatnonzero((table.key_id == i) & (table.kind == lockstep.KIND_BYTES))
        vs, ve, _, ok = lockstep.bytes_values(buf, table.list_start[sel], table.list_end[sel])
        out[key] = bool(ok.all()) and all(
            is_text(data[a:b]) for a, b in zip(vs.tolist(), ve.tolist(), strict=True)
        )
    return out


def _why_not(s: FeatureStats) -> str | None:
    if not s.types:
        return "only empty Features in the sample (no values): the type is unknown"
    if len(s.types) != 1:
        kinds = ", ".join(f"{t} in {n}" for t, n in sorted(s.types.items()))
        return f"conflicting types in the sample ({kinds})"
    return None


def _context_type(s: FeatureStats, text: bool) -> Any:
    (t,) = s.types
    leaf = pa.string() if t == "bytes" and text else _LEAF[t]
    lo, hi = s.min_len or 0, s.max_len or 0
    if lo == hi == 1:
        return leaf
    if lo == hi and lo >= 2:
        return pa.list_(leaf, lo)
    return pa.list_(leaf)


def infer_schema(records: list[bytes], kind: str = "auto", where: str = "sample") -> Inferred:
    """The schema of ``records`` (Examples, or SequenceExamples: ``kind`` ``"auto"``,
    ``"example"``, ``"sequence"``).

    Raises:
        MalformedExampleError: a sampled record is not a valid (Sequence)Example (the
            message names it, by ``where`` and its position).
    """
    stats = SchemaStats()
    wheres = [f"{where} record {i}" for i in range(len(records))]
    add_records(stats, records, wheres, kind)  # type: ignore[arg-type]
    if stats.sequence:
        texts, list_texts = _sequence_texts(records)
    else:
        bytes_keys = [k for k, s in stats.features.items() if s.types.keys() == {"bytes"}]
        texts, list_texts = _texts(records, bytes_keys), {}
    fields = []
    unknown: dict[str, str] = {}
    for key in sorted(stats.features):
        s = stats.features[key]
        why = _why_not(s)
        if why is not None:
            unknown[key] = why
            continue
        fields.append(pa.field(key, _context_type(s, texts.get(key, False))))
    for key in sorted(stats.lists):
        s = stats.lists[key]
        why = _why_not(s)
        if why is not None:
            unknown[key] = why
            continue
        (t,) = s.types
        leaf = pa.string() if t == "bytes" and list_texts.get(key, False) else _LEAF[t]
        fields.append(pa.field(key, pa.list_(pa.list_(leaf))))
    return Inferred(pa.schema(fields), stats.sequence, unknown, stats.records)


def _sequence_texts(records: list[bytes]) -> tuple[dict[str, bool], dict[str, bool]]:
    """Per bytes key of SequenceExamples (context, lists): every value is text."""
    ctx: dict[str, bool] = {}
    lists: dict[str, bool] = {}
    for record in records:
        context, steps = decode_sequence_example(record)
        for key, values in context.items():
            if values.dtype == object:
                ctx[key] = ctx.get(key, True) and all(map(is_text, values.tolist()))
        for key, got in steps.items():
            for values in got:
                if values.dtype == object and len(values):
                    lists[key] = lists.get(key, True) and all(map(is_text, values.tolist()))
    return ctx, lists
