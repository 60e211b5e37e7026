"""Batches of SequenceExamples as Arrow record batches: context columns and list columns.

A context feature is a column as in an Example (a plain value, a fixed-size list, a
list). A feature list is a list of its steps: ``list<list<T>>`` (steps of any length),
or ``list<fixed_size_list<T, k>>`` (steps of exactly ``k`` values). With ``tfe`` specs:
``FixedLenSequenceFeature(shape)`` is steps of that shape (unpadded: the list's length is
the record's step count), ``VarLenFeature``/``RaggedFeature`` steps of any length.

The messages are split per record (the feature maps and each list's steps, by the
exact wire decoder, with TensorFlow's strict SequenceExample rules); the values of all
features and steps of the batch are then decoded together, bytes as spans of the
buffer (:mod:`.spans`). An error for ``tfe`` specs is TensorFlow's, from
``tfe.parse_sequence_example``; for an Arrow schema it names the column and record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import ExampleParseError, InvalidArgumentError, MalformedExampleError
from ...example import lockstep
from ...example.records import TF_NAME
from ...example.sequence import parse_sequence_example
from ...example.specs import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    VarLenFeature,
    as_feature_specs,
)
from ...example.wire import (
    KIND_BYTES,
    KIND_FLOAT,
    KIND_INT64,
    KIND_NONE,
    decode_feature,
    feature_kind,
    feature_list_steps,
    sequence_example_maps,
)
from .build import Violation, build
from .decode import records_of
from .plan import ColumnPlan, plan_of
from .spans import Spans
from .walk import KeyValues

__all__ = ["ListPlan", "SequenceBatches", "sequence_plans"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
_LEAF = {KIND_INT64: pa.int64(), KIND_FLOAT: pa.float32(), KIND_BYTES: pa.binary()}
_KIND = {"int64": KIND_INT64, "float32": KIND_FLOAT, "string": KIND_BYTES}


@dataclass(frozen=True)
class ListPlan:
    """A feature list column: its steps are rows of ``step`` (a plan over the values of
    each step); ``missing`` says what a record without the list gives."""

    name: str
    key: str
    arrow_type: Any
    step: ColumnPlan
    missing: str


def _is_list_of_lists(t: Any) -> bool:
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return False
    inner = t.value_type
    return bool(
        pa.types.is_list(inner)
        or pa.types.is_large_list(inner)
        or pa.types.is_fixed_size_list(inner)
    )


def _list_from_field(f: Any) -> ListPlan:
    inner_field = pa.field(f.name, f.type.value_type, nullable=False)
    (step,) = plan_of(pa.schema([inner_field]))
    assert isinstance(step, ColumnPlan)
    return ListPlan(f.name, f.name, f.type, step, "null" if f.nullable else "error")


def _list_from_spec(name: str, spec: Any) -> ListPlan:
    if isinstance(spec, FixedLenSequenceFeature):
        kind = _KIND[spec.dtype]
        step_type: Any = _LEAF[kind]
        for d in reversed(spec.shape):
            step_type = pa.list_(step_type, d)
        step = ColumnPlan(
            name, name, kind, step_type, _LEAF[kind], spec.shape, False, "error", spec=spec
        )
        missing = "empty" if spec.allow_missing else "error"  # TensorFlow's rule
        return ListPlan(name, name, pa.list_(step_type), step, missing)
    if isinstance(spec, VarLenFeature) or (isinstance(spec, RaggedFeature) and not spec.partitions):
        kind = _KIND[spec.dtype]
        key = (spec.value_key or name) if isinstance(spec, RaggedFeature) else name
        step = ColumnPlan(
            name, key, kind, pa.list_(_LEAF[kind]), _LEAF[kind], (), True, "empty", spec=spec
        )
        return ListPlan(name, key, pa.list_(step.arrow_type), step, "empty")
    raise InvalidArgumentError(
        f"sequence feature {name!r}: {type(spec).__name__} is not read as Arrow (use "
        "FixedLenSequenceFeature, VarLenFeature or RaggedFeature without partitions)"
    )


def sequence_plans(
    context: Any, sequence: Mapping[str, Any] | None, columns: list[str] | None
) -> tuple[list[ColumnPlan], list[ListPlan], list[str]]:
    """``(context plans, list plans, column order)`` of an Arrow schema (``context``; list
    of list fields are feature lists) or of ``tfe`` specs (``context`` and ``sequence``)."""
    if isinstance(context, pa.Schema):
        fields = {f.name: f for f in context}
        names = list(fields) if columns is None else columns
        flat = pa.schema([fields[c] for c in names if not _is_list_of_lists(fields[c].type)])
        lists = [_list_from_field(fields[c]) for c in names if _is_list_of_lists(fields[c].type)]
        ctx = [p for p in plan_of(flat) if isinstance(p, ColumnPlan)] if len(flat) else []
        return ctx, lists, names
    ctx_specs = as_feature_specs(dict(context or {}))
    seq_specs = as_feature_specs(dict(sequence or {}))
    both = [*ctx_specs, *seq_specs]
    names = both if columns is None else columns
    unknown = [c for c in names if c not in ctx_specs and c not in seq_specs]
    if unknown:
        raise InvalidArgumentError(f"columns {unknown} are not among the features {both}")
    plans = (
        plan_of({c: ctx_specs[c] for c in names if c in ctx_specs})
        if any(c in ctx_specs for c in names)
        else []
    )
    ctx_plans = []
    for p in plans:
        if not isinstance(p, ColumnPlan) or (
            p.spec is not None
            and not isinstance(p.spec, (FixedLenFeature, VarLenFeature, RaggedFeature))
        ):
            raise InvalidArgumentError(
                f"context feature {p.name!r}: only FixedLenFeature, VarLenFeature and "
                "RaggedFeature without partitions are read as Arrow from SequenceExamples"
            )
        ctx_plans.append(p)
    lists = [_list_from_spec(c, seq_specs[c]) for c in names if c in seq_specs]
    return ctx_plans, lists, names


class _Found:
    """Per requested key, the Feature spans met in the batch, in record (and step) order."""

    def __init__(self) -> None:
        self.owner: list[int] = []  # record (context) or step (lists) of each Feature
        self.spans: list[tuple[int, int]] = []


class SequenceBatches:
    """Decodes batches of SequenceExamples into record batches (see the module)."""

    def __init__(
        self,
        context: list[ColumnPlan],
        lists: list[ListPlan],
        names: list[str],
        fields: dict[str, Any] | None = None,
    ) -> None:
        self.context = context
        self.lists = lists
        self.names = names
        given = fields or {}
        types = {p.name: p.arrow_type for p in context} | {p.name: p.arrow_type for p in lists}
        self.schema = pa.schema(
            [given.get(n) or pa.field(n, types[n], nullable=False) for n in names]
        )
        self._ctx_keys = {p.key: p.kind for p in context}
        self._list_keys = {p.key: p.step.kind for p in lists}
        self._tf = any(p.spec is not None for p in context) or any(
            p.step.spec is not None for p in lists
        )

    def decode(self, buf: U8, starts: I64, ends: I64) -> pa.RecordBatch:
        """The record batch of the SequenceExamples ``buf[starts[i]:ends[i]]``.

        Raises:
            ExampleParseError / MalformedExampleError: a record breaks the specs or the
                schema (``index``: its position in the batch).
        """
        try:
            return self._decode(buf, starts, ends)
        except (Violation, _Wrong) as exc:
            self._exact(buf, starts, ends)
            column, record, reason = exc.args
            raise ExampleParseError(
                f"column {column!r}: {reason}", key=column, index=record
            ) from None
        except ExampleParseError:
            self._exact(buf, starts, ends)
            raise

    def _decode(self, buf: U8, starts: I64, ends: I64) -> pa.RecordBatch:
        n = int(starts.shape[0])
        ctx = {k: _Found() for k in self._ctx_keys}
        steps = {k: _Found() for k in self._list_keys}
        step_counts = {k: np.zeros(n, np.int64) for k in self._list_keys}
        has_list = {k: np.zeros(n, np.bool_) for k in self._list_keys}
        seen = dict.fromkeys(self._list_keys, 0)  # steps met so far, per key
        data = buf.tobytes()
        for i, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
            record = data[a:b]
            try:
                context, lists = sequence_example_maps(record)
                for raw, (s, e) in context.items():
                    found = ctx.get(raw.decode("utf-8", "surrogateescape"))
                    if found is not None:
                        found.owner.append(i)
                        found.spans.append((a + s, a + e))
                for raw, span in lists.items():
                    key = raw.decode("utf-8", "surrogateescape")
                    found = steps.get(key)
                    if found is None:
                        continue
                    has_list[key][i] = True
                    for s, e in feature_list_steps(record, span):
                        found.owner.append(seen[key])
                        found.spans.append((a + s, a + e))
                        seen[key] += 1
                        step_counts[key][i] += 1
            except MalformedExampleError as exc:
                raise MalformedExampleError(str(exc), offset=exc.offset, index=i) from None
        columns: dict[str, Any] = {}
        for p in self.context:
            kv = _values(buf, data, ctx[p.key], kind=p.kind, n=n, key=p.key, records=True)
            columns[p.name] = build(p, kv)
        for lp in self.lists:
            counts = step_counts[lp.key]
            total = int(counts.sum())
            try:
                kv = _values(
                    buf, data, steps[lp.key], kind=lp.step.kind, n=total, key=lp.key, records=False
                )
                inner = build(lp.step, kv)
            except (Violation, _Wrong) as exc:
                raise _in_record(exc, counts) from None
            columns[lp.name] = _outer(lp, inner, counts, has_list[lp.key])
        return pa.RecordBatch.from_arrays([columns[c] for c in self.names], schema=self.schema)

    def _exact(self, buf: U8, starts: I64, ends: I64) -> None:
        """For ``tfe`` specs: raises TensorFlow's error for the batch (the exact path)."""
        if self._tf:
            ctx = {p.name: p.spec for p in self.context}
            seq = {p.name: p.step.spec for p in self.lists}
            parse_sequence_example(records_of(buf, starts, ends), ctx, seq)


class _Wrong(Exception):
    """Internal: ``(column, record, reason)`` of a Feature of the wrong kind."""


def _in_record(exc: Exception, steps: I64) -> _Wrong:
    """An error about step ``j`` of a batch's lists, as one about its record."""
    column, step, reason = exc.args
    ends = np.cumsum(steps)
    record = int(np.searchsorted(ends, step, side="right"))
    first = int(ends[record] - steps[record])
    return _Wrong(column, record, f"step {step - first}: {reason}")


def _outer(lp: ListPlan, inner: Any, counts: I64, present: npt.NDArray[np.bool_]) -> Any:
    absent = ~present
    mask = None
    if absent.any() and lp.missing == "error":
        raise Violation(lp.name, int(np.argmax(absent)), "the feature list is missing")
    if absent.any() and lp.missing == "null":
        mask = pa.array(absent)
    storage = lp.arrow_type
    large = pa.types.is_large_list(storage)
    offsets = np.zeros(counts.shape[0] + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    cls = pa.LargeListArray if large else pa.ListArray
    return cls.from_arrays(
        pa.array(offsets if large else offsets.astype(np.int32)), inner, type=storage, mask=mask
    )


def _values(
    buf: U8, data: bytes, found: _Found, *, kind: int, n: int, key: str, records: bool
) -> KeyValues:
    """The values of the Features ``found`` (owned by ``n`` records or steps); ``data``
    is ``buf`` as bytes."""
    owner = np.asarray(found.owner, np.int64)
    counts = np.zeros(n, np.int64)
    present = np.zeros(n, np.bool_) if records else np.ones(n, np.bool_)
    spans: list[tuple[int, int]] = []
    numbers: list[Any] = []
    keep: list[int] = []
    for j, (s, e) in enumerate(found.spans):
        k = KIND_NONE if s == e else feature_kind(data, (s, e))
        if k == KIND_NONE:
            if records:
                present[owner[j]] = True  # TensorFlow: an empty context Feature is present
            continue
        if k != kind:
            raise _Wrong(
                key,
                int(owner[j]),
                f"holds {TF_NAME[k]} values, the column reads {TF_NAME[kind]}",
            )
        if records:
            present[owner[j]] = True
        keep.append(j)
        if kind == KIND_BYTES:
            spans.append(_list_span(data, s, e))
        else:
            got = decode_feature(data, (s, e), kind, strict=True)
            numbers.append(np.asarray(got, np.int64 if kind == KIND_INT64 else np.float32))
            counts[owner[j]] = len(got)
    if kind == KIND_BYTES:
        ls = np.array([a for a, _ in spans], np.int64)
        le = np.array([b for _, b in spans], np.int64)
        vs, ve, per, ok = lockstep.bytes_values(buf, ls, le)
        if not ok.all():
            j = keep[int(np.argmin(ok))]
            raise MalformedExampleError(
                f"a BytesList of feature {key!r} is malformed", offset=int(found.spans[j][0])
            )
        counts[owner[keep]] = per
        values: npt.NDArray[Any] | Spans = Spans(buf, vs, ve)
    elif numbers:
        values = np.concatenate(numbers)
    else:
        values = np.zeros(0, np.int64 if kind == KIND_INT64 else np.float32)
    return KeyValues(kind, values, counts, present)


def _list_span(mv: bytes, s: int, e: int) -> tuple[int, int]:
    """The BytesList payload inside the Feature at ``[s, e)``."""
    pos = s + 1
    length = 0
    shift = 0
    while pos < e:
        byte = mv[pos]
        pos += 1
        length |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
    return pos, min(pos + length, e)
