"""Hypothesis strategies for batches of SequenceExamples as writers produce them.

:func:`sequence_batches` draws context and sequence specs and a batch of records that
match them, written the canonical way (packed numeric lists, map entries key then
value): the shape the batch decoder (``example.seqbatch``) takes whole. Step counts
vary from 0 to ~70, feature lists may be missing (where the spec allows it) or empty,
steps of VarLen/ragged lists may be empty. With ``faults=True`` one record may carry
one fault: a step or context feature of the wrong kind, a step or context feature
with the wrong value count, a required feature list or context feature missing, an
empty context Feature, or its lists written unpacked (valid, but off the canonical
shape).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from ..example.specs import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    VarLenFeature,
)
from .examples import KINDS, FeatureValues, feature_values, serialize_sequence_example

__all__ = ["FAULTS", "SequenceBatch", "sequence_batches"]

#: What ``faults=True`` may do to one record.
FAULTS = (
    "step_kind",
    "step_count",
    "missing_list",
    "context_kind",
    "context_count",
    "missing_context",
    "empty_context",
    "unpacked",
)


@dataclass(frozen=True)
class SequenceBatch:
    """Specs, serialized records, and the fault drawn (None: all valid and canonical)."""

    context_features: dict[str, FeatureSpec]
    sequence_features: dict[str, FeatureSpec]
    records: list[bytes]
    fault: str | None


def _other(draw: st.DrawFn, dtype: str) -> str:
    return draw(st.sampled_from([k for k in KINDS if k != dtype]))


@st.composite
def _specs(draw: st.DrawFn) -> tuple[dict[str, FeatureSpec], dict[str, FeatureSpec]]:
    ctx: dict[str, FeatureSpec] = {}
    for name in draw(st.lists(st.sampled_from(["label", "id", "score"]), max_size=3, unique=True)):
        dtype = draw(st.sampled_from(KINDS))
        which = draw(st.sampled_from(["fixed", "varlen", "ragged"]))
        if which == "fixed":
            ctx[name] = FixedLenFeature(draw(st.sampled_from([[], [1], [3]])), dtype)
        elif which == "varlen":
            ctx[name] = VarLenFeature(dtype)
        else:
            ctx[name] = RaggedFeature(dtype)
    seq: dict[str, FeatureSpec] = {}
    names = draw(
        st.lists(st.sampled_from(["frames", "tokens", "mask"]), min_size=1, max_size=3, unique=True)
    )
    for name in names:
        dtype = draw(st.sampled_from(KINDS))
        which = draw(st.sampled_from(["dense", "dense", "varlen", "ragged"]))
        if which == "dense":
            shape = draw(st.sampled_from([[], [1], [3], [2, 2], [32]]))
            seq[name] = FixedLenSequenceFeature(shape, dtype, allow_missing=draw(st.booleans()))
        elif which == "varlen":
            seq[name] = VarLenFeature(dtype)
        else:
            seq[name] = RaggedFeature(dtype)
    return ctx, seq


def _size(spec: FeatureSpec, draw: st.DrawFn) -> int:
    if isinstance(spec, (FixedLenFeature, FixedLenSequenceFeature)):
        return math.prod(spec.shape)
    return draw(st.integers(0, 4))


def _feature(draw: st.DrawFn, dtype: str, n: int) -> FeatureValues:
    return (dtype, draw(feature_values(dtype, min_size=n, max_size=n)))


@st.composite
def sequence_batches(
    draw: st.DrawFn, *, max_batch: int = 6, max_steps: int = 70, faults: bool = False
) -> SequenceBatch:
    """Specs and a batch of SequenceExamples written as writers write them."""
    ctx, seq = draw(_specs())
    n = draw(st.integers(1, max_batch))
    fault = draw(st.sampled_from((None, *FAULTS))) if faults else None
    victim = draw(st.integers(0, n - 1))
    step_counts = st.one_of(st.integers(0, 3), st.integers(0, max_steps))
    records = []
    for r in range(n):
        here = fault if r == victim else None
        context: list[tuple[str, Any]] = []
        for name, spec in ctx.items():
            if here == "missing_context" and isinstance(spec, FixedLenFeature):
                continue
            dtype = spec.dtype
            size = _size(spec, draw)
            if here == "context_kind":
                dtype = _other(draw, dtype)
            elif here == "context_count" and isinstance(spec, FixedLenFeature):
                size += 1
            context.append((name, None if here == "empty_context" else _feature(draw, dtype, size)))
        lists: list[tuple[str, list[FeatureValues]]] = []
        for name, spec in seq.items():
            allowed = not isinstance(spec, FixedLenSequenceFeature) or spec.allow_missing
            if here == "missing_list" and not allowed:
                continue
            if allowed and draw(st.integers(0, 5)) == 0:
                continue  # a missing feature list, where the spec allows it
            steps: list[FeatureValues] = []
            for _ in range(draw(step_counts)):
                dtype, size = spec.dtype, _size(spec, draw)
                if not isinstance(spec, FixedLenSequenceFeature) and draw(st.integers(0, 7)) == 0:
                    steps.append(None)  # an empty Feature: a step with no values
                    continue
                steps.append(_feature(draw, dtype, size))
            if here in ("step_kind", "step_count"):
                bad_dtype = _other(draw, spec.dtype) if here == "step_kind" else spec.dtype
                steps.append(_feature(draw, bad_dtype, _size(spec, draw) + (here == "step_count")))
            lists.append((name, steps))
        records.append(
            serialize_sequence_example(
                draw(st.permutations(context)),
                draw(st.permutations(lists)),
                packed=here != "unpacked",
            )
        )
    return SequenceBatch(ctx, seq, records, fault)
