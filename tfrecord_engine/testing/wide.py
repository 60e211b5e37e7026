"""Hypothesis strategies for wide Examples: many scalar / fixed-size features, few selected.

:func:`wide_cases` draws a spec of int64 / float32 / string ``FixedLenFeature`` s (what the
compiled plan of :mod:`tfrecord_engine.example.dense` takes) and a batch of records
holding those features among many unselected ones, with int64 values of every varint
width. Some records are off the plain path (missing, defaulted or empty features,
unpacked lists, duplicate keys, concatenated Examples) and a few hold an error (a
wrong type or count, a required feature missing).
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from ..example.specs import FeatureSpec, FixedLenFeature
from .examples import Entry, FeatureValues, ParseCase, feature_values, serialize_example

__all__ = ["wide_cases"]

# Names of every length around the kernel's 8-byte hash words, sharing prefixes.
_NAMES = st.text("ab_é0", min_size=0, max_size=11)


@st.composite
def _fixed(draw: st.DrawFn) -> FixedLenFeature:
    dtype = draw(st.sampled_from(["int64", "float32", "string"]))
    shape = draw(st.sampled_from([(), (), (), (1,), (2,), (0,), (2, 2)]))
    count = math.prod(shape)
    default = None
    if draw(st.booleans()):
        default = draw(feature_values(dtype, min_size=count, max_size=count))
    return FixedLenFeature(list(shape), dtype, default_value=default)


def _feature(draw: st.DrawFn, spec: FixedLenFeature, errors: bool) -> FeatureValues | str:
    """A feature for ``spec``, or "skip" (missing); errors only when ``errors``."""
    count = math.prod(spec.shape)
    modes = ["ok"] * 10
    # TensorFlow takes a default with no elements for no default.
    if spec.default_value or errors:
        modes += ["missing", "empty"]
    if errors:
        modes += ["type", "count"]
    mode = draw(st.sampled_from(modes))
    if mode == "missing":
        return "skip"
    if mode == "empty":
        return None
    if mode == "type":
        kinds = [k for k in ("int64", "float32", "string") if k != spec.dtype]
        other = draw(st.sampled_from(kinds))
        return (other, draw(feature_values(other, min_size=count, max_size=count)))
    if mode == "count":
        count += 1 if count == 0 else draw(st.sampled_from([-1, 1]))
    return (spec.dtype, draw(feature_values(spec.dtype, min_size=count, max_size=count)))


@st.composite
def wide_cases(
    draw: st.DrawFn, *, max_features: int = 12, max_unselected: int = 30, max_batch: int = 6
) -> ParseCase:
    """An all int64/float32/string FixedLenFeature spec and a batch of wide records (see above).

    Records are valid Examples for the spec unless one of them draws an error mode.
    """
    names = draw(st.lists(_NAMES, min_size=1, max_size=max_features, unique=True))
    features: dict[str, FeatureSpec] = {name: draw(_fixed()) for name in names}
    others = draw(st.lists(_NAMES, max_size=max_unselected, unique=True))
    others = [o for o in others if o not in features]
    errors = draw(st.integers(0, 3)) == 0
    records = []
    for _ in range(draw(st.integers(1, max_batch))):
        entries: list[Entry] = []
        for name, spec in features.items():
            assert isinstance(spec, FixedLenFeature)
            feat = _feature(draw, spec, errors)
            if feat != "skip":
                entries.append((name, feat))  # type: ignore[arg-type]
        for name in others:
            dtype = draw(st.sampled_from(["int64", "float32", "string"]))
            entries.append((name, (dtype, draw(feature_values(dtype)))))
        entries = list(draw(st.permutations(entries)))
        if entries and draw(st.integers(0, 5)) == 0:
            # An earlier duplicate of a key: the later entry wins.
            key = draw(st.sampled_from([k for k, _ in entries]))
            dtype = draw(st.sampled_from(["int64", "float32", "string"]))
            entries.insert(0, (key, (dtype, draw(feature_values(dtype)))))
        split = draw(st.none() | st.integers(0, len(entries))) if draw(st.booleans()) else None
        packed = draw(st.integers(0, 7)) != 0
        records.append(serialize_example(entries, packed=packed, split_at=split))
    return ParseCase(features, records, single=False)
