"""Hypothesis strategies for Examples, SequenceExamples and matching feature specs.

The serializers here are written independently of :mod:`tfrecord_engine.example.encode`
(and can emit what it never does: unpacked lists, empty ``Feature`` messages, duplicate
keys, concatenated Examples, unknown fields), so tests can check the encoder and the
parsers against them.

The main strategy, :func:`parse_cases`, draws feature specs of all five types plus a batch
of records that mostly match them, and sometimes do not (wrong type, wrong count, missing,
empty ``Feature``), to compare :func:`tfrecord_engine.parse_example` with TensorFlow on the
same bytes, errors included.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from ..example.specs import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RowLengths,
    RowLimits,
    RowSplits,
    RowStarts,
    SparseFeature,
    UniformRowLength,
    ValueRowIds,
    VarLenFeature,
)
from .list_encodings import GARBAGE, mixed_lists
from .wirebytes import field as _ld
from .wirebytes import varint as _varint

__all__ = [
    "Entry",
    "FeatureValues",
    "ParseCase",
    "SequenceCase",
    "feature_values",
    "parse_cases",
    "raw_features",
    "sequence_cases",
    "serialize_example",
    "serialize_feature",
    "serialize_sequence_example",
]

KINDS = ("int64", "float32", "string")
FeatureValues = tuple[str, list[Any]] | None
"""``(dtype, values)`` for a Feature, or ``None`` for an empty Feature (no list at all)."""
Entry = tuple[str, "FeatureValues | bytes"]
"""A map entry: key and feature; ``bytes`` is a Feature serialized already, kept as is."""


def serialize_feature(feature: FeatureValues, *, packed: bool = True) -> bytes:
    """Serializes one ``Feature``; ``packed=False`` writes numbers unpacked."""
    if feature is None:
        return b""
    dtype, values = feature
    if dtype == "string":
        return _ld(0x0A, b"".join(_ld(0x0A, v) for v in values))
    if dtype == "int64":
        if packed:
            body = _ld(0x0A, b"".join(_varint(v) for v in values)) if values else b""
        else:
            body = b"".join(b"\x08" + _varint(v) for v in values)
        return _ld(0x1A, body)
    raw = [struct.pack("<f", v) for v in values]
    body = (
        (_ld(0x0A, b"".join(raw)) if values else b"")
        if packed
        else b"".join(b"\x0d" + r for r in raw)
    )
    return _ld(0x12, body)


def _entry(key: str, value: bytes, *, value_first: bool = False) -> bytes:
    k = _ld(0x0A, key.encode("utf-8"))
    v = _ld(0x12, value)
    return _ld(0x0A, v + k if value_first else k + v)


def _feature_bytes(feature: FeatureValues | bytes, packed: bool) -> bytes:
    return feature if isinstance(feature, bytes) else serialize_feature(feature, packed=packed)


def serialize_example(
    entries: Sequence[Entry],
    *,
    packed: bool = True,
    split_at: int | None = None,
    unknown_field: bool = False,
) -> bytes:
    """Serializes an Example from ``(key, feature)`` entries, in order (duplicates allowed).

    ``split_at`` writes the entries as two concatenated Examples; ``unknown_field`` adds a
    top-level field TensorFlow must skip.
    """
    parts = [_entry(k, _feature_bytes(f, packed)) for k, f in entries]
    cut = len(parts) if split_at is None else split_at
    out = _ld(0x0A, b"".join(parts[:cut]))
    if split_at is not None:
        out += _ld(0x0A, b"".join(parts[cut:]))
    if unknown_field:
        out = b"\x10\x2a" + out + b"\x1a\x02hi"
    return out


def serialize_sequence_example(
    context: Sequence[Entry],
    feature_lists: Sequence[tuple[str, Sequence[FeatureValues | bytes]]],
    *,
    packed: bool = True,
) -> bytes:
    """Serializes a SequenceExample from context entries and per-key feature steps."""
    ctx = b"".join(_entry(k, _feature_bytes(f, packed)) for k, f in context)
    lists = b"".join(
        _entry(k, b"".join(_ld(0x0A, _feature_bytes(f, packed)) for f in steps))
        for k, steps in feature_lists
    )
    return _ld(0x0A, ctx) + _ld(0x12, lists)


def _f32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def feature_values(
    dtype: str, *, min_size: int = 0, max_size: int = 4
) -> st.SearchStrategy[list[Any]]:
    """Values of one feature: int64 (full range), float32-exact floats, or bytes."""
    if dtype == "int64":
        element: st.SearchStrategy[Any] = st.one_of(
            st.integers(-3, 300), st.integers(-(1 << 63), (1 << 63) - 1)
        )
    elif dtype == "float32":
        element = st.floats(width=32, allow_nan=False).map(_f32)
    else:
        element = st.binary(max_size=6)
    return st.lists(element, min_size=min_size, max_size=max_size)


@st.composite
def raw_features(draw: st.DrawFn) -> FeatureValues:
    """A Feature of any kind (or an empty Feature)."""
    if draw(st.integers(0, 9)) == 0:
        return None
    dtype = draw(st.sampled_from(KINDS))
    return (dtype, draw(feature_values(dtype)))


@dataclass(frozen=True)
class ParseCase:
    """Specs plus serialized records; ``single`` says to parse records[0] alone."""

    features: dict[str, FeatureSpec]
    records: list[bytes]
    single: bool


_Mode = str  # "ok" | "missing" | "empty" | "type" | "count"


def _other(dtype: str, draw: st.DrawFn) -> str:
    return draw(st.sampled_from([k for k in KINDS if k != dtype]))


@st.composite
def _spec(draw: st.DrawFn, name: str) -> FeatureSpec:
    dtype = draw(st.sampled_from(KINDS))
    which = draw(st.sampled_from(["fixed", "varlen", "seq", "sparse", "ragged"]))
    if which == "fixed":
        # No zero-size float shapes: TensorFlow 2.21's batch parser segfaults on them when
        # the record holds unpacked floats (tests/example/test_parse.py pins our error).
        low = 1 if dtype == "float32" else 0
        shape = draw(st.lists(st.integers(low, 3), max_size=2))
        default = None
        if draw(st.booleans()):
            default = draw(
                feature_values(dtype, min_size=math.prod(shape), max_size=math.prod(shape))
            )
        return FixedLenFeature(shape, dtype, default_value=default)
    if which == "varlen":
        return VarLenFeature(dtype)
    if which == "seq":
        shape = draw(st.lists(st.integers(1, 3), max_size=2))
        pad = draw(st.none() | feature_values(dtype, min_size=1, max_size=1).map(lambda v: v[0]))
        return FixedLenSequenceFeature(shape, dtype, allow_missing=True, default_value=pad)
    if which == "sparse":
        ndim = draw(st.integers(1, 2))
        return SparseFeature(
            [f"{name}_i{d}" for d in range(ndim)],
            f"{name}_v",
            dtype,
            draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)),
            already_sorted=draw(st.booleans()),
        )
    return _ragged_spec(draw, name, dtype)


def _ragged_spec(draw: st.DrawFn, name: str, dtype: str) -> RaggedFeature:
    kinds = st.sampled_from(["splits", "lengths", "starts", "limits", "rowids", "uniform"])
    parts: list[Any] = []
    for j, kind in enumerate(draw(st.lists(kinds, max_size=2))):
        key = f"{name}_p{j}"
        parts.append(
            {
                "splits": RowSplits,
                "lengths": RowLengths,
                "starts": RowStarts,
                "limits": RowLimits,
                "rowids": ValueRowIds,
            }[kind](key)
            if kind != "uniform"
            else UniformRowLength(draw(st.integers(1, 3)))
        )
    return RaggedFeature(
        dtype,
        value_key=draw(st.sampled_from([None, f"{name}_v"])),
        partitions=parts,
        row_splits_dtype=draw(st.sampled_from(["int32", "int64"])),
        validate=draw(st.booleans()),
    )


def _values(draw: st.DrawFn, dtype: str, n: int) -> list[Any]:
    return draw(feature_values(dtype, min_size=n, max_size=n))


def _mismatch(draw: st.DrawFn, dtype: str, n: int, mode: _Mode) -> FeatureValues | str:
    """The feature for ``mode``; the string "skip" means: leave the key out."""
    if mode == "missing":
        return "skip"
    if mode == "empty":
        return None
    if mode == "type":
        other = _other(dtype, draw)
        return (other, _values(draw, other, n))
    if mode == "count":
        return (dtype, _values(draw, dtype, draw(st.integers(0, 5).filter(lambda m: m != n))))
    return (dtype, _values(draw, dtype, n))


def _ragged_entries(
    draw: st.DrawFn, name: str, spec: RaggedFeature
) -> list[tuple[str, FeatureValues]]:
    count = draw(st.integers(0, 3))
    out: list[tuple[str, FeatureValues]] = []
    for part in spec.partitions:
        if isinstance(part, UniformRowLength):
            lengths = [part.length] * count
        else:
            lengths = draw(st.lists(st.integers(0, 3), min_size=count, max_size=count))
            if isinstance(part, ValueRowIds) and lengths and lengths[-1] == 0:
                lengths[-1] = 1
            splits = [0]
            for n in lengths:
                splits.append(splits[-1] + n)
            data = {
                RowSplits: splits,
                RowLengths: lengths,
                RowStarts: splits[:-1],
                RowLimits: splits[1:],
                ValueRowIds: [i for i, n in enumerate(lengths) for _ in range(n)],
            }[type(part)]
            out.append((part.key, ("int64", data)))
        count = sum(lengths)
    mode = draw(
        st.sampled_from(
            ["ok"] * 6 + ["type"] + (["missing", "empty"] if not spec.partitions else [])
        )
    )
    feat = _mismatch(draw, spec.dtype, count, mode)
    if feat != "skip":
        out.append((spec.value_key or name, feat))  # type: ignore[arg-type]
    return out


def _record_entries(
    draw: st.DrawFn, features: dict[str, FeatureSpec]
) -> list[tuple[str, FeatureValues]]:
    modes = st.sampled_from(["ok"] * 12 + ["missing", "empty", "type", "count"])
    entries: list[tuple[str, FeatureValues]] = []
    for name, spec in features.items():
        mode = draw(modes)
        feat: FeatureValues | str
        if isinstance(spec, FixedLenFeature):
            feat = _mismatch(draw, spec.dtype, math.prod(spec.shape), mode)
        elif isinstance(spec, FixedLenSequenceFeature):
            stride = math.prod(spec.shape)
            feat = _mismatch(draw, spec.dtype, stride * draw(st.integers(0, 3)), mode)
            if mode == "count":
                feat = (
                    (spec.dtype, _values(draw, spec.dtype, stride * draw(st.integers(0, 2)) + 1))
                    if stride > 1
                    else feat
                )
        elif isinstance(spec, VarLenFeature):
            feat = _mismatch(
                draw, spec.dtype, draw(st.integers(0, 4)), "ok" if mode == "count" else mode
            )
        elif isinstance(spec, SparseFeature):
            n = draw(st.integers(0, 3))
            for key, size in zip(spec.index_key, spec.size, strict=False):
                idx = draw(st.lists(st.integers(0, size - 1), min_size=n, max_size=n))
                entries.append((key, ("int64", idx)))
            feat = _mismatch(draw, spec.dtype, n, mode)
            if feat != "skip":
                entries.append((spec.value_key, feat))  # type: ignore[arg-type]
            continue
        else:
            assert isinstance(spec, RaggedFeature)
            entries.extend(_ragged_entries(draw, name, spec))
            continue
        if feat != "skip":
            entries.append((name, feat))  # type: ignore[arg-type]
    return entries


@st.composite
def parse_cases(
    draw: st.DrawFn,
    *,
    max_features: int = 3,
    max_batch: int = 4,
    canonical: bool = False,
    mixed: bool = False,
) -> ParseCase:
    """Specs of all five types and a batch of mostly-matching serialized Examples.

    With ``canonical=True`` every record has the shape the lockstep decoder takes (one
    Example, packed lists, no duplicate keys or unknown fields) while the key order
    still differs from record to record, so a batch exercises the fast path only.
    With ``mixed=True`` some lists mix packed runs, unpacked values and garbage
    (:mod:`.list_encodings`).
    """
    names = draw(
        st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=max_features, unique=True)
    )
    features = {name: draw(_spec(name)) for name in names}
    single = draw(st.booleans())
    records = []
    for _ in range(1 if single else draw(st.integers(1, max_batch))):
        entries = _record_entries(draw, features)
        entries = list(draw(st.permutations(entries)))
        # Decoys: an earlier duplicate of a key (the later entry must win) and noise keys.
        add_decoy = not canonical and draw(st.booleans())
        if entries and add_decoy:
            key = draw(st.sampled_from([k for k, _ in entries]))
            entries.insert(0, (key, draw(raw_features())))
        if draw(st.booleans()):
            entries.append(("zz_noise", draw(raw_features())))
        split = None if canonical else draw(st.none() | st.integers(0, len(entries)))
        records.append(
            serialize_example(
                _mix(draw, entries) if mixed else entries,
                packed=canonical or draw(st.booleans()),
                split_at=split,
                unknown_field=not canonical and draw(st.integers(0, 4)) == 0,
            )
        )
    return ParseCase(features, records, single)


def _mixed_feature(draw: st.DrawFn, feature: FeatureValues | bytes) -> FeatureValues | bytes:
    """Half the time, ``feature`` re-encoded with a drawn mixed encoding."""
    if feature is None or isinstance(feature, bytes) or not draw(st.booleans()):
        return feature
    dtype, values = feature
    if dtype == "string":
        # No packed form: the only mix is garbage after the elements.
        body = b"".join(_ld(0x0A, v) for v in values) + GARBAGE
        return _ld(0x0A, body)
    return _ld(0x1A if dtype == "int64" else 0x12, draw(mixed_lists(dtype, values)).body())


def _mix(draw: st.DrawFn, entries: Sequence[Entry]) -> list[Entry]:
    return [(k, _mixed_feature(draw, f)) for k, f in entries]


@dataclass(frozen=True)
class SequenceCase:
    """Context/sequence specs plus serialized SequenceExamples."""

    context_features: dict[str, FeatureSpec]
    sequence_features: dict[str, FeatureSpec]
    records: list[bytes]
    single: bool


def _ragged_steps(
    draw: st.DrawFn, name: str, spec: RaggedFeature
) -> list[tuple[str, list[FeatureValues]]]:
    """Feature lists for a sequence RaggedFeature: each step partitioned on its own."""
    keys = [spec.value_key or name] + [
        p.key for p in spec.partitions if not isinstance(p, UniformRowLength)
    ]
    steps: dict[str, list[FeatureValues]] = {key: [] for key in keys}
    for _ in range(draw(st.integers(0, 3))):
        present = dict(_ragged_entries(draw, name, spec))
        for key in keys:
            steps[key].append(present.get(key))
    return list(steps.items())


@st.composite
def sequence_cases(draw: st.DrawFn, *, max_batch: int = 3, mixed: bool = False) -> SequenceCase:
    """Specs for ``parse_sequence_example`` and matching (or not) SequenceExamples.

    With ``mixed=True`` some lists (context and steps) mix packed runs, unpacked values
    and garbage (:mod:`.list_encodings`).
    """
    ctx_names = draw(st.lists(st.sampled_from("abc"), max_size=2, unique=True))
    seq_names = draw(st.lists(st.sampled_from("stu"), min_size=1, max_size=2, unique=True))
    ctx: dict[str, FeatureSpec] = {}
    for name in ctx_names:
        dtype = draw(st.sampled_from(KINDS))
        which = draw(st.sampled_from(["fixed", "varlen", "ragged"]))
        if which == "fixed":
            shape = draw(st.lists(st.integers(1, 2), max_size=1))
            default = None
            if draw(st.booleans()):
                default = _values(draw, dtype, math.prod(shape))
            ctx[name] = FixedLenFeature(shape, dtype, default_value=default)
        elif which == "varlen":
            ctx[name] = VarLenFeature(dtype)
        else:
            ctx[name] = _ragged_spec(draw, name, dtype)
    seq: dict[str, FeatureSpec] = {}
    for name in seq_names:
        dtype = draw(st.sampled_from(KINDS))
        which = draw(st.sampled_from(["seq", "varlen", "ragged"]))
        if which == "seq":
            shape = draw(st.lists(st.integers(1, 2), max_size=1))
            seq[name] = FixedLenSequenceFeature(shape, dtype, allow_missing=draw(st.booleans()))
        elif which == "varlen":
            seq[name] = VarLenFeature(dtype)
        else:
            seq[name] = _ragged_spec(draw, name, dtype)
    single = draw(st.booleans())
    records = []
    modes = st.sampled_from(["ok"] * 10 + ["missing", "empty", "type", "count"])
    for _ in range(1 if single else draw(st.integers(1, max_batch))):
        context: list[Entry] = []
        for name, spec in ctx.items():
            if isinstance(spec, RaggedFeature):
                context.extend(_ragged_entries(draw, name, spec))
                continue
            n = (
                math.prod(spec.shape)
                if isinstance(spec, FixedLenFeature)
                else draw(st.integers(0, 3))
            )
            mode = draw(modes)
            if not isinstance(spec, FixedLenFeature) and mode == "count":
                mode = "ok"
            feat = _mismatch(draw, spec.dtype, n, mode)
            if feat != "skip":
                context.append((name, feat))  # type: ignore[arg-type]
        lists: list[tuple[str, list[FeatureValues]]] = []
        for name, spec in seq.items():
            if isinstance(spec, RaggedFeature):
                lists.extend(_ragged_steps(draw, name, spec))
                continue
            mode = draw(modes)
            if mode == "missing":
                continue
            steps: list[FeatureValues] = []
            for _ in range(draw(st.integers(0, 3))):
                n = (
                    math.prod(spec.shape)
                    if isinstance(spec, FixedLenSequenceFeature)
                    else draw(st.integers(0, 3))
                )
                step_mode = mode if draw(st.booleans()) else "ok"
                if not isinstance(spec, FixedLenSequenceFeature) and step_mode == "count":
                    step_mode = "ok"
                feat = _mismatch(draw, spec.dtype, n, step_mode)
                steps.append(None if feat == "skip" else feat)  # type: ignore[arg-type]
            lists.append((name, steps))
        written: Sequence[tuple[str, Sequence[FeatureValues | bytes]]] = lists
        if mixed:
            context = _mix(draw, context)
            written = [(k, [_mixed_feature(draw, f) for f in steps]) for k, steps in lists]
        records.append(
            serialize_sequence_example(
                draw(st.permutations(context)),
                draw(st.permutations(written)),
                packed=draw(st.booleans()),
            )
        )
    return SequenceCase(ctx, seq, records, single)
