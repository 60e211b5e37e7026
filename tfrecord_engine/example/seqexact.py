"""The exact per-record SequenceExample decoder, and the assemblers both decoders share.

Each record is split into its context Features and FeatureLists (:mod:`.wire`), the
requested keys decoded one by one with TensorFlow's checks and error texts; the outputs
are then assembled per spec (:func:`assemble_context`, :func:`sparse_steps`,
:func:`ragged_steps`), the same functions the batch decoder (:mod:`.seqbatch`) uses.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ExampleParseError, InvalidArgumentError, MalformedExampleError
from . import assemble
from .assemble import ColumnOf
from .columns import from_rows
from .parse import Row
from .ragged import batched_ragged
from .raw import assemble_raw
from .records import (
    KIND_OF,
    TF_NAME,
    Request,
    add_request,
    concat_values,
    list_failure,
    object_array,
)
from .specs import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RawFeature,
    UniformRowLength,
    VarLenFeature,
)
from .values import RaggedValue, SparseValue
from .wire import (
    KIND_BYTES,
    KIND_FLOAT,
    KIND_NONE,
    NOT_A_STEP,
    RawValues,
    Span,
    decode_feature,
    feature_kind,
    feature_list_steps,
    sequence_example_maps,
)

__all__ = [
    "Result3",
    "StepsOf",
    "assemble_context",
    "parse_records",
    "plan",
    "ragged_steps",
    "sparse_steps",
]

Steps = list[RawValues]
SeqRow = dict[str, "Steps | None"]
Result3 = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]
#: ``(key, kind) -> (values, value count of each step, step count of each record)``.
StepsOf = Callable[
    [str, int], tuple[npt.NDArray[Any], npt.NDArray[np.int64], npt.NDArray[np.int64]]
]


def _empty(kind: int) -> RawValues:
    if kind == KIND_BYTES:
        return []
    if kind == KIND_FLOAT:
        return np.zeros(0, dtype=np.float32)
    return np.zeros(0, dtype=np.int64)


def plan(
    context: Mapping[str, FeatureSpec], sequence: Mapping[str, FeatureSpec]
) -> tuple[dict[str, Request], dict[str, Request]]:
    if not context and not sequence:
        raise InvalidArgumentError(
            "Both `context_features` and `sequence_features` argument are None, but at "
            "least one should have values."
        )
    ctx: dict[str, Request] = {}
    for name, spec in context.items():
        if isinstance(spec, FixedLenFeature):
            add_request(ctx, name, spec.dtype, "dense")
        elif isinstance(spec, RawFeature):
            add_request(ctx, name, "string", "dense")
        elif isinstance(spec, VarLenFeature):
            add_request(ctx, name, spec.dtype, "sparse")
        elif isinstance(spec, RaggedFeature):
            _ragged_requests(ctx, name, spec)
        else:
            raise InvalidArgumentError(
                f"Unsupported {type(spec).__name__} {spec!r} for key {name!r}"
            )
    seq: dict[str, Request] = {}
    for name, spec in sequence.items():
        if isinstance(spec, FixedLenSequenceFeature):
            if spec.default_value is not None:
                raise InvalidArgumentError(
                    f"Value feature_list.dense_defaults[{name}] must be None"
                )
            add_request(seq, name, spec.dtype, "dense")
        elif isinstance(spec, VarLenFeature):
            add_request(seq, name, spec.dtype, "sparse")
        elif isinstance(spec, RaggedFeature):
            _ragged_requests(seq, name, spec)
        else:
            raise InvalidArgumentError(
                f"Unsupported {type(spec).__name__} {spec!r} for key {name!r}"
            )
    return ctx, seq


def _ragged_requests(requests: dict[str, Request], name: str, spec: RaggedFeature) -> None:
    add_request(requests, spec.value_key or name, spec.dtype, "ragged")
    for part in spec.partitions:
        if not isinstance(part, UniformRowLength):
            add_request(requests, part.key, "int64", "ragged")


def _kind_or_fail(buf: bytes, span: tuple[int, int], req: Request, where: str, index: int) -> int:
    kind = feature_kind(buf, span)
    if kind not in (KIND_NONE, req.kind):
        raise ExampleParseError(_mismatch(where, req), key=req.key, index=index)
    return kind


def _mismatch(where: str, req: Request) -> str:
    return f"Name: <unknown>, {where}.  Data types don't match. Expected type: {TF_NAME[req.kind]}"


def _decode_or_fail(
    buf: bytes,
    span: tuple[int, int],
    kind: int,
    req: Request,
    *,
    where: str,
    index: int,
    step: bool = False,
) -> RawValues:
    """Decodes one Feature (``step``: a FeatureList's, which must hold its list alone);
    a malformed list fails with TensorFlow's text for ``where``.

    TensorFlow's SequenceExample parser reports a list it cannot read as a type mismatch.
    """
    try:
        return decode_feature(buf, span, kind, strict=True, whole=step)
    except MalformedExampleError as exc:
        raise MalformedExampleError(
            f"{_mismatch(where, req)} ({list_failure(exc)})",
            offset=exc.offset,
            key=req.key,
            index=index,
        ) from None


def _steps_or_fail(buf: bytes, span: tuple[int, int], req: Request) -> Iterator[Span]:
    """The steps of a FeatureList; a malformed one fails as TensorFlow words it."""
    step = 0
    try:
        for found in feature_list_steps(buf, span):
            yield found
            step += 1
    except MalformedExampleError as exc:
        reason = list_failure(exc)
        if reason.startswith(NOT_A_STEP):
            message = f"Error in sequence feature {req.key} in example <unknown>"
        else:  # a step overrunning its FeatureList: reported as that step's type
            message = _mismatch(f"Feature list: {req.key}, Index: {step}", req)
        raise MalformedExampleError(
            f"{message} ({reason})", offset=exc.offset, key=req.key
        ) from None


def _decode_record(
    buf: bytes, ctx_req: Mapping[str, Request], seq_req: Mapping[str, Request], index: int
) -> tuple[Row, SeqRow]:
    ctx_map, list_map = sequence_example_maps(buf)
    row: Row = {}
    for key, req in ctx_req.items():
        span = ctx_map.get(req.raw_key)
        if span is None:
            row[key] = None
            continue
        kind = _kind_or_fail(buf, span, req, f"Context feature: {key}", index)
        if kind == KIND_NONE:
            # Present but empty: no values (not missing) for a dense context feature.
            row[key] = _empty(req.kind) if req.role == "dense" else None
        else:
            row[key] = _decode_or_fail(
                buf, span, kind, req, where=f"Context feature: {key}", index=index
            )
    seq: SeqRow = {}
    for key, req in seq_req.items():
        list_span = list_map.get(req.raw_key)
        if list_span is None:
            seq[key] = None
            continue
        steps: Steps = []
        for step, span in enumerate(_steps_or_fail(buf, list_span, req)):
            # TensorFlow's "Index" here is the step, not the record.
            where = f"Feature list: {key}, Index: {step}"
            kind = _kind_or_fail(buf, span, req, where, index)
            steps.append(
                _empty(req.kind)
                if kind == KIND_NONE
                else _decode_or_fail(buf, span, kind, req, where=where, index=index, step=True)
            )
        seq[key] = steps
    return row, seq


def _decode_all(
    records: Sequence[bytes], ctx_req: Mapping[str, Request], seq_req: Mapping[str, Request]
) -> tuple[list[Row], list[SeqRow]]:
    rows: list[Row] = []
    seqs: list[SeqRow] = []
    for i, buf in enumerate(records):
        try:
            row, seq = _decode_record(buf, ctx_req, seq_req, i)
        except MalformedExampleError as exc:
            raise MalformedExampleError(
                f"{exc} (record {i})", offset=exc.offset, key=exc.key, index=i
            ) from None
        rows.append(row)
        seqs.append(seq)
    return rows, seqs


def _dense_steps(
    name: str, spec: FixedLenSequenceFeature, seqs: list[SeqRow], single: bool
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
    stride = math.prod(spec.shape)
    per_record: list[Steps] = []
    for i, seq in enumerate(seqs):
        steps = seq[name]
        if steps is None:
            if not spec.allow_missing:
                raise ExampleParseError(
                    f"Name: <unknown>, Feature list '{name}' is required but could not be "
                    "found.  Did you mean to include it in feature_list_dense_missing_assumed_"
                    "empty or feature_list_dense_defaults?",
                    key=name,
                    index=i,
                )
            steps = []
        for j, step in enumerate(steps):
            if len(step) != stride:
                raise ExampleParseError(
                    f"Name: <unknown>, Key: {name}, Index: {i}.  Number of values != expected.  "
                    f"values size: {len(step)} but output shape: "
                    f"[{','.join(str(d) for d in spec.shape)}] (step {j})",
                    key=name,
                    index=i,
                )
        per_record.append(steps)
    lengths = np.array([len(s) for s in per_record], dtype=np.int64)
    max_steps = int(lengths.max(initial=0))
    kind = KIND_OF[spec.dtype]
    pad: Any = b"" if kind == KIND_BYTES else 0
    dtype: Any = object if kind == KIND_BYTES else concat_values([], kind).dtype
    out = np.full((len(seqs), max_steps * stride), pad, dtype=dtype)
    for i, steps in enumerate(per_record):
        if steps and stride:
            flat = concat_values(steps, kind)
            out[i, : flat.size] = flat
    out = out.reshape((len(seqs), max_steps, *spec.shape))
    return (out[0] if single else out), lengths


def _flatten_steps(
    key: str, kind: int, seqs: list[SeqRow]
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """All values, per-step value counts and per-record step counts of one key."""
    all_steps: list[RawValues] = []
    steps_per_record = []
    for seq in seqs:
        steps = seq[key] or []
        steps_per_record.append(len(steps))
        all_steps.extend(steps)
    values = concat_values([s for s in all_steps if len(s)], kind)
    if kind == KIND_BYTES and values.dtype != object:
        values = object_array(list(values))
    step_lengths = np.array([len(s) for s in all_steps], dtype=np.int64)
    return values, step_lengths, np.array(steps_per_record, dtype=np.int64)


def _sparse_steps(key: str, kind: int, seqs: list[SeqRow], single: bool) -> SparseValue:
    return sparse_steps(*_flatten_steps(key, kind, seqs), single)


def sparse_steps(
    values: npt.NDArray[Any],
    step_lengths: npt.NDArray[np.int64],
    nsteps: npt.NDArray[np.int64],
    single: bool,
) -> SparseValue:
    """A sequence VarLenFeature's output from all its values, the value count of each
    step and the step count of each record."""
    pos = np.arange(values.size, dtype=np.int64) - np.repeat(
        np.cumsum(step_lengths) - step_lengths, step_lengths
    )
    step_in_record = np.arange(step_lengths.size, dtype=np.int64) - np.repeat(
        np.cumsum(nsteps) - nsteps, nsteps
    )
    step_col = np.repeat(step_in_record, step_lengths)
    max_len = int(step_lengths.max(initial=0))
    if single:
        shape = np.array([int(nsteps[0]), max_len], dtype=np.int64)
        return SparseValue(np.stack([step_col, pos], axis=1), values, shape)
    n = nsteps.shape[0]
    record_col = np.repeat(np.repeat(np.arange(n, dtype=np.int64), nsteps), step_lengths)
    shape = np.array([n, int(nsteps.max(initial=0)), max_len], dtype=np.int64)
    return SparseValue(np.stack([record_col, step_col, pos], axis=1), values, shape)


def ragged_steps(name: str, spec: RaggedFeature, flat: StepsOf, single: bool) -> RaggedValue:
    """A sequence RaggedFeature's output; ``flat(key, kind)`` gives a key's values, the
    value count of each step and the step count of each record."""
    dtype = np.int64 if spec.row_splits_dtype == "int64" else np.int32

    def steps_ragged(key: str, kind: int) -> tuple[RaggedValue, npt.NDArray[Any]]:
        values, step_lengths, nsteps = flat(key, kind)
        if kind == KIND_BYTES and values.dtype != object:
            values = object_array(list(values))
        step_splits = np.concatenate([[0], np.cumsum(step_lengths)]).astype(dtype)
        record_splits = np.concatenate([[0], np.cumsum(nsteps)]).astype(dtype)
        return RaggedValue(values, step_splits), record_splits

    rt, outer = steps_ragged(spec.value_key or name, KIND_OF[spec.dtype])
    parts = {}
    for p in spec.partitions:
        if isinstance(p, UniformRowLength):
            continue
        parts[p.key], steps = steps_ragged(p.key, KIND_OF["int64"])
        if spec.validate and not single and not np.array_equal(steps, outer):
            # (TensorFlow's parse_sequence_example checks that each record has as many
            # steps of a partition as of the values; its single parse does not.)
            raise ExampleParseError(
                f"Feature {name}: values and partitions are not aligned", key=name
            )
    inner = batched_ragged(name, spec, rt, parts)
    return inner if single else RaggedValue(inner, outer)


def assemble_context(
    context: Mapping[str, FeatureSpec], column: ColumnOf, single: bool
) -> dict[str, Any]:
    """The context features' outputs from their columns (both decoders share this)."""
    out: dict[str, Any] = {}
    for name, spec in context.items():
        if isinstance(spec, FixedLenFeature):
            with _unnamed_missing():
                out[name] = assemble.fixed(name, spec, column(name), single)
        elif isinstance(spec, RawFeature):
            with _unnamed_missing():
                out[name] = assemble_raw(name, spec, column(name), single)
        elif isinstance(spec, VarLenFeature):
            out[name] = assemble.varlen(column(name), KIND_OF[spec.dtype], single)
        else:
            assert isinstance(spec, RaggedFeature)
            out[name] = assemble.ragged(name, spec, column, single)
    return out


@contextlib.contextmanager
def _unnamed_missing() -> Iterator[None]:
    # ParseSequenceExample names no record when a required context feature is missing
    # ("Feature: c (data type: int64) is required but could not be found."), where
    # ParseExample says "Name: <unknown>, Feature: c ...".
    try:
        yield
    except ExampleParseError as exc:
        text = str(exc)
        if text.startswith(_UNNAMED) and "is required but could not be found" in text:
            exc.args = (text[len(_UNNAMED) :], *exc.args[1:])
        raise


_UNNAMED = "Name: <unknown>, "


def parse_records(
    records: list[bytes],
    context: Mapping[str, FeatureSpec],
    sequence: Mapping[str, FeatureSpec],
    single: bool,
) -> Result3:
    """The exact per-record path: ``(context, feature_lists, lengths)`` of ``records``."""
    ctx_req, seq_req = plan(context, sequence)
    rows, seqs = _decode_all(records, ctx_req, seq_req)
    ctx_out = assemble_context(context, lambda key: from_rows(rows, key, ctx_req[key].kind), single)
    seq_out: dict[str, Any] = {}
    lengths: dict[str, Any] = {}
    for name, spec in sequence.items():
        if isinstance(spec, FixedLenSequenceFeature):
            seq_out[name], lengths[name] = _dense_steps(name, spec, seqs, single)
        elif isinstance(spec, VarLenFeature):
            seq_out[name] = _sparse_steps(name, KIND_OF[spec.dtype], seqs, single)
        else:
            assert isinstance(spec, RaggedFeature)
            seq_out[name] = ragged_steps(
                name, spec, lambda key, kind: _flatten_steps(key, kind, seqs), single
            )
    return ctx_out, seq_out, lengths
