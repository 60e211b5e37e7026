"""Hypothesis strategies for index columns and views: records that hold a scalar
feature (or not), labelled records, and selections of records.

:func:`column_records` draws serialized Examples whose wanted keys hold one int64 or
bytes value most of the time, and otherwise anything an index column must tell apart
from one value: no such feature, an empty ``Feature``, a float, a list of another
length, a duplicate entry, packed or unpacked numbers, concatenated Examples, unknown
top-level fields, and sometimes bytes that are no Example at all.
:func:`labelled_records` draws encoder-made Examples with a small-alphabet label, for
selections and balanced epochs. :func:`selections` draws what ``ds.select`` takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..example.encode import encode_example
from .examples import Entry, FeatureValues, feature_values, raw_features, serialize_example

__all__ = ["column_records", "labelled_records", "selections"]

_MODES = ["int"] * 4 + ["bytes"] * 4 + ["missing", "empty", "float", "many", "none", "dup"]


@st.composite
def _feature(draw: st.DrawFn) -> FeatureValues:
    mode = draw(st.sampled_from(_MODES[:-1]))
    if mode == "int":
        return ("int64", draw(feature_values("int64", min_size=1, max_size=1)))
    if mode == "bytes":
        return ("string", draw(feature_values("string", min_size=1, max_size=1)))
    if mode == "empty":
        return None
    if mode == "float":
        return ("float32", draw(feature_values("float32", min_size=1, max_size=2)))
    if mode == "none":
        return (draw(st.sampled_from(["int64", "string"])), [])
    kind = draw(st.sampled_from(["int64", "string"]))
    return (kind, draw(feature_values(kind, min_size=2, max_size=3)))


@st.composite
def column_records(
    draw: st.DrawFn, keys: Sequence[str] = ("label", "id"), max_records: int = 12
) -> list[bytes]:
    """Serialized records (mostly Examples) for index columns ``keys``."""
    records: list[bytes] = []
    for _ in range(draw(st.integers(0, max_records))):
        if draw(st.integers(0, 15)) == 0:
            records.append(draw(st.binary(max_size=12)))  # (rarely an Example)
            continue
        entries: list[Entry] = []
        for key in keys:
            mode = draw(st.sampled_from(_MODES))
            if mode == "missing":
                continue
            entries.append((key, draw(_feature())))
            if mode == "dup":
                entries.append((key, draw(_feature())))
        others = st.tuples(st.sampled_from(["x", "y", "img"]), raw_features())
        entries += draw(st.lists(others, max_size=3))
        order = draw(st.permutations(range(len(entries))))
        ordered = [entries[i] for i in order]
        split = draw(st.none() | st.integers(0, len(ordered)))
        records.append(
            serialize_example(
                ordered,
                packed=draw(st.booleans()),
                split_at=split,
                unknown_field=draw(st.booleans()),
            )
        )
    return records


@st.composite
def labelled_records(
    draw: st.DrawFn, *, classes: int = 4, min_records: int = 1, max_records: int = 40
) -> list[bytes]:
    """Examples ``{"label": [c], "i": [i]}`` (``i`` numbers the record, ``c`` in
    ``0 .. classes - 1``)."""
    labels: list[int] = draw(
        st.lists(st.integers(0, classes - 1), min_size=min_records, max_size=max_records)
    )
    values: list[dict[str, Any]] = [{"label": [c], "i": [i]} for i, c in enumerate(labels)]
    return [encode_example(v) for v in values]


def selections(n: int) -> st.SearchStrategy[Any]:
    """What ``ds.select`` takes for a dataset of ``n`` records: int indices (repeats and
    negatives included), a boolean mask, or a slice."""
    indices = st.lists(st.integers(-n, n - 1), max_size=2 * n + 1) if n else st.just([])
    mask = st.lists(st.booleans(), min_size=n, max_size=n)
    bound = st.none() | st.integers(-n - 2, n + 2)
    step = st.none() | st.integers(-3, 3).filter(lambda s: s != 0)
    slices = st.builds(slice, bound, bound, step)
    return st.one_of(indices, mask.map(lambda m: np.array(m, dtype=np.bool_)), slices)
