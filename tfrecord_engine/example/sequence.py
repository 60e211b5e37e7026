"""``parse_sequence_example`` / ``parse_single_sequence_example`` with TensorFlow's semantics.

Context features (``FixedLenFeature``, ``VarLenFeature``, ``RaggedFeature``, and the
engine's own ``RawFeature``) come out as in :func:`~tfrecord_engine.parse_example`.
Sequence features (``FixedLenSequenceFeature``, ``VarLenFeature``, ``RaggedFeature``)
gain a step dimension:

- ``FixedLenSequenceFeature`` -> ``[batch, max_steps, *shape]`` padded with 0/b"", and its
  step counts in the third dict (``lengths``);
- ``VarLenFeature`` -> :class:`SparseValue` with indices ``[N, 3]`` (record, step, pos);
- ``RaggedFeature`` -> :class:`RaggedValue` ``[batch, steps, values]``.

TensorFlow's SequenceExample parser differs from its Example parser, and so does this one:
a map entry must be key then value; an empty ``Feature`` in the context is a present
feature with no values (an error for a ``FixedLenFeature`` of non-zero size), not a
missing one; an empty ``Feature`` as a step is a step with no values.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ExampleParseError, InvalidArgumentError, MalformedExampleError
from .names import example_name_list, named_errors
from .parse import Row, assemble_fixed, assemble_ragged, assemble_raw_rows, assemble_varlen
from .ragged import batched_ragged
from .records import (
    KIND_OF,
    TF_NAME,
    Request,
    add_request,
    concat_values,
    list_failure,
    object_array,
    tensor_value,
    to_records,
)
from .specs import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RawFeature,
    UniformRowLength,
    VarLenFeature,
    as_feature_specs,
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

__all__ = ["parse_sequence_example", "parse_single_sequence_example"]

Steps = list[RawValues]
SeqRow = dict[str, "Steps | None"]
Result3 = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]


def _empty(kind: int) -> RawValues:
    if kind == KIND_BYTES:
        return []
    if kind == KIND_FLOAT:
        return np.zeros(0, dtype=np.float32)
    return np.zeros(0, dtype=np.int64)


def _plan(
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
    buf: bytes, span: tuple[int, int], kind: int, req: Request, *, where: str, index: int
) -> RawValues:
    """Decodes one Feature; a malformed list fails with TensorFlow's text for ``where``.

    TensorFlow's SequenceExample parser reports a list it cannot read as a type mismatch.
    """
    try:
        return decode_feature(buf, span, kind, strict=True)
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
                else _decode_or_fail(buf, span, kind, req, where=where, index=index)
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
    values, step_lengths, nsteps = _flatten_steps(key, kind, seqs)
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
    record_col = np.repeat(np.repeat(np.arange(len(seqs), dtype=np.int64), nsteps), step_lengths)
    shape = np.array([len(seqs), int(nsteps.max(initial=0)), max_len], dtype=np.int64)
    return SparseValue(np.stack([record_col, step_col, pos], axis=1), values, shape)


def _ragged_steps(name: str, spec: RaggedFeature, seqs: list[SeqRow], single: bool) -> RaggedValue:
    dtype = np.int64 if spec.row_splits_dtype == "int64" else np.int32

    def steps_ragged(key: str, kind: int) -> tuple[RaggedValue, npt.NDArray[Any]]:
        values, step_lengths, nsteps = _flatten_steps(key, kind, seqs)
        step_splits = np.concatenate([[0], np.cumsum(step_lengths)]).astype(dtype)
        record_splits = np.concatenate([[0], np.cumsum(nsteps)]).astype(dtype)
        return RaggedValue(values, step_splits), record_splits

    rt, outer = steps_ragged(spec.value_key or name, KIND_OF[spec.dtype])
    parts = {
        p.key: steps_ragged(p.key, KIND_OF["int64"])[0]
        for p in spec.partitions
        if not isinstance(p, UniformRowLength)
    }
    inner = batched_ragged(name, spec, rt, parts)
    return inner if single else RaggedValue(inner, outer)


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


def _parse(
    records: list[bytes],
    context: Mapping[str, FeatureSpec],
    sequence: Mapping[str, FeatureSpec],
    single: bool,
) -> Result3:
    ctx_req, seq_req = _plan(context, sequence)
    rows, seqs = _decode_all(records, ctx_req, seq_req)
    ctx_out: dict[str, Any] = {}
    for name, spec in context.items():
        if isinstance(spec, FixedLenFeature):
            with _unnamed_missing():
                ctx_out[name] = assemble_fixed(name, spec, rows, single)
        elif isinstance(spec, RawFeature):
            with _unnamed_missing():
                ctx_out[name] = assemble_raw_rows(name, spec, rows, single)
        elif isinstance(spec, VarLenFeature):
            ctx_out[name] = assemble_varlen(name, KIND_OF[spec.dtype], rows, single)
        else:
            assert isinstance(spec, RaggedFeature)
            ctx_out[name] = assemble_ragged(name, spec, rows, single)
    seq_out: dict[str, Any] = {}
    lengths: dict[str, Any] = {}
    for name, spec in sequence.items():
        if isinstance(spec, FixedLenSequenceFeature):
            seq_out[name], lengths[name] = _dense_steps(name, spec, seqs, single)
        elif isinstance(spec, VarLenFeature):
            seq_out[name] = _sparse_steps(name, KIND_OF[spec.dtype], seqs, single)
        else:
            assert isinstance(spec, RaggedFeature)
            seq_out[name] = _ragged_steps(name, spec, seqs, single)
    return ctx_out, seq_out, lengths


def parse_sequence_example(
    serialized: Any,
    context_features: Mapping[str, FeatureSpec] | None = None,
    sequence_features: Mapping[str, FeatureSpec] | None = None,
    example_names: Any = None,
    name: object = None,
) -> Result3:
    """Parses a batch of serialized SequenceExamples like ``tf.io.parse_sequence_example``.

    Args:
        serialized: a list, tuple or 1-D array of serialized SequenceExamples (a single
            ``bytes`` is parsed without a batch dimension, as TensorFlow does).
        context_features: key -> ``FixedLenFeature``/``VarLenFeature``/``RaggedFeature``/
            ``RawFeature``.
        sequence_features: key -> ``FixedLenSequenceFeature``/``VarLenFeature``/
            ``RaggedFeature``. Both may hold ``tf.io``'s own spec objects (converted by
            duck typing, see :func:`~.specs.as_feature_specs`).
        example_names: one name per record (or ``None``): an error about a record
            names it instead of ``<unknown>``, as in TensorFlow.
        name: TensorFlow's op name; accepted and unused.

    Returns:
        ``(context, feature_lists, lengths)``; ``lengths`` holds the step counts of each
        ``FixedLenSequenceFeature``.

    Raises:
        ExampleParseError: a record does not match the specs.
        MalformedExampleError: a record is not a valid SequenceExample.
        InvalidArgumentError: the specs are invalid.

    Example:
        >>> from tfrecord_engine.example.encode import encode_sequence_example
        >>> from tfrecord_engine.example.specs import FixedLenSequenceFeature
        >>> data = [encode_sequence_example({}, {"s": [[1], [2]]})]
        >>> spec = {"s": FixedLenSequenceFeature([], "int64")}
        >>> ctx, lists, lengths = parse_sequence_example(data, None, spec)
        >>> lists["s"].tolist(), lengths["s"].tolist()
        ([[1, 2]], [2])
    """
    del name  # TensorFlow's op name
    context = dict(as_feature_specs(context_features or {}))
    sequence = dict(as_feature_specs(sequence_features or {}))
    serialized, example_names = tensor_value(serialized), tensor_value(example_names)
    if isinstance(serialized, (bytes, bytearray, memoryview)):
        with named_errors(None, example_names):
            return _parse([bytes(serialized)], context, sequence, single=True)
    records = to_records(serialized)
    with named_errors(example_name_list(example_names, len(records))):
        return _parse(records, context, sequence, single=False)


def parse_single_sequence_example(
    serialized: Any,
    context_features: Mapping[str, FeatureSpec] | None = None,
    sequence_features: Mapping[str, FeatureSpec] | None = None,
    example_name: Any = None,
    name: object = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Parses one SequenceExample like ``tf.io.parse_single_sequence_example``.

    ``example_name`` names the record in error texts (instead of ``<unknown>``), as in
    TensorFlow; ``name`` (TensorFlow's op name) is accepted and unused. The specs may
    be ``tf.io``'s own objects.

    Returns:
        ``(context, feature_lists)`` without a batch dimension.

    Example:
        >>> from tfrecord_engine.example.encode import encode_sequence_example
        >>> from tfrecord_engine.example.specs import VarLenFeature
        >>> data = encode_sequence_example({"id": 3}, {"t": [[1, 2], [3]]})
        >>> ctx, lists = parse_single_sequence_example(data, None, {"t": VarLenFeature("int64")})
        >>> lists["t"].dense_shape.tolist()
        [2, 2]
    """
    serialized, example_name = tensor_value(serialized), tensor_value(example_name)
    if not isinstance(serialized, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(f"serialized must be bytes, got {type(serialized).__name__}")
    del name  # TensorFlow's op name
    context = dict(as_feature_specs(context_features or {}))
    sequence = dict(as_feature_specs(sequence_features or {}))
    with named_errors(None, example_name):
        ctx_out, lists, _ = _parse([bytes(serialized)], context, sequence, True)
    return ctx_out, lists
