"""Hypothesis strategies for the ``tf.data`` bridge: valid files and batching layouts.

Every record drawn here parses without error against its specs (the bridge's tests are
about order, batching and sharding; parse errors are covered by the parser's tests).
Each record carries its position as an int64 ``"index"`` feature so a test can tell
which records a batch holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..example.encode import encode_example
from ..example.specs import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RowLengths,
    SparseFeature,
    UniformRowLength,
    VarLenFeature,
)

__all__ = ["INDEX_KEY", "BridgeCase", "bridge_cases", "layouts"]

#: The feature holding each record's position in the file.
INDEX_KEY = "index"
_DTYPES = ("int64", "float32", "string")


@dataclass(frozen=True)
class BridgeCase:
    """Specs (``"index"`` included) and serialized Examples that all parse."""

    features: dict[str, FeatureSpec]
    records: list[bytes]


def _array(dtype: str, values: list[Any]) -> Any:
    if dtype == "string":
        return np.array(values, dtype=object).reshape(-1)
    return np.array(values, dtype=np.int64 if dtype == "int64" else np.float32).reshape(-1)


def _values(dtype: str, n: int) -> st.SearchStrategy[list[Any]]:
    element: st.SearchStrategy[Any]
    if dtype == "int64":
        element = st.integers(-(2**63), 2**63 - 1)
    elif dtype == "float32":
        element = st.floats(width=32, allow_nan=False)
    else:
        element = st.binary(max_size=5)
    return st.lists(element, min_size=n, max_size=n)


@st.composite
def _spec(draw: st.DrawFn, name: str) -> FeatureSpec:
    dtype = draw(st.sampled_from(_DTYPES))
    kinds = ["fixed", "varlen", "seq", "sparse", "ragged", "ragged_lengths", "ragged_uniform"]
    kind = draw(st.sampled_from(kinds))
    if kind == "seq":
        shape = draw(st.lists(st.integers(1, 2), max_size=1))
        return FixedLenSequenceFeature(shape, dtype, allow_missing=True)
    if kind == "sparse":
        return SparseFeature(f"{name}_i", f"{name}_v", dtype, draw(st.integers(1, 4)))
    if kind == "fixed":
        return FixedLenFeature(draw(st.lists(st.integers(1, 3), max_size=2)), dtype)
    if kind == "varlen":
        return VarLenFeature(dtype)
    if kind == "ragged":
        return RaggedFeature(dtype, row_splits_dtype=draw(st.sampled_from(["int32", "int64"])))
    if kind == "ragged_uniform":
        return RaggedFeature(dtype, partitions=[UniformRowLength(2)])
    return RaggedFeature(dtype, value_key=f"{name}_v", partitions=[RowLengths(f"{name}_len")])


@st.composite
def _record(draw: st.DrawFn, index: int, features: dict[str, FeatureSpec]) -> bytes:
    fields: dict[str, Any] = {INDEX_KEY: np.array([index], np.int64)}
    for name, spec in features.items():
        if name == INDEX_KEY:
            continue
        if isinstance(spec, FixedLenFeature):
            n = int(np.prod(spec.shape))
            fields[name] = _array(spec.dtype, draw(_values(spec.dtype, n)))
        elif isinstance(spec, FixedLenSequenceFeature):
            n = int(np.prod(spec.shape)) * draw(st.integers(0, 3))
            fields[name] = _array(spec.dtype, draw(_values(spec.dtype, n)))
        elif isinstance(spec, SparseFeature):
            n = draw(st.integers(0, 3))
            size = spec.size[0]
            fields[f"{name}_i"] = np.array(
                draw(st.lists(st.integers(0, size - 1), min_size=n, max_size=n)), np.int64
            )
            fields[f"{name}_v"] = _array(spec.dtype, draw(_values(spec.dtype, n)))
        elif isinstance(spec, VarLenFeature):
            n = draw(st.integers(0, 3))
            fields[name] = _array(spec.dtype, draw(_values(spec.dtype, n)))
        elif isinstance(spec, RaggedFeature) and spec.partitions:
            part = spec.partitions[0]
            if isinstance(part, UniformRowLength):
                n = part.length * draw(st.integers(0, 2))
                fields[name] = _array(spec.dtype, draw(_values(spec.dtype, n)))
            else:
                lengths = draw(st.lists(st.integers(0, 2), max_size=3))
                fields[f"{name}_len"] = np.array(lengths, np.int64)
                fields[spec.value_key or name] = _array(
                    spec.dtype, draw(_values(spec.dtype, sum(lengths)))
                )
        else:
            assert isinstance(spec, RaggedFeature)
            n = draw(st.integers(0, 3))
            fields[name] = _array(spec.dtype, draw(_values(spec.dtype, n)))
    return encode_example(fields)


@st.composite
def bridge_cases(
    draw: st.DrawFn, *, min_records: int = 1, max_records: int = 30, max_features: int = 3
) -> BridgeCase:
    """A feature spec (all five kinds of features) and records that all parse."""
    names = draw(st.lists(st.sampled_from("abcdef"), max_size=max_features, unique=True))
    features: dict[str, FeatureSpec] = {INDEX_KEY: FixedLenFeature([], "int64")}
    features.update({name: draw(_spec(name)) for name in names})
    n = draw(st.integers(min_records, max_records))
    return BridgeCase(features, [draw(_record(i, features)) for i in range(n)])


@st.composite
def layouts(draw: st.DrawFn, *, max_pipelines: int = 4) -> dict[str, Any]:
    """Batching and ``tf.distribute`` layout: batch size, shuffle, remainder, pipelines."""
    remainder = draw(st.sampled_from(["keep", "drop", "pad"]))
    return {
        "batch_size": draw(st.integers(1, 7)),
        "shuffle": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**16)),
        "num_pipelines": draw(st.integers(1, max_pipelines)),
        "replicas_per_pipeline": draw(st.integers(1, 3)),
        "drop_remainder": remainder == "drop",
        "pad_remainder": remainder == "pad",
    }
