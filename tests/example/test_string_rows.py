"""String values left as rows (example.string_rows) by the compiled dense plan: the same
values as ``bytes`` objects, the same errors, and objects wherever rows do not apply."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfrecord_engine.errors import TFRecordError
from tfrecord_engine.example import FixedLenFeature, encode_example
from tfrecord_engine.example.batch import BatchDecoder, join_records
from tfrecord_engine.example.string_rows import (
    MAX_WIDTH,
    is_rows,
    rows_to_objects,
    string_rows,
)
from tfrecord_engine.testing.examples import ParseCase
from tfrecord_engine.testing.wide import wide_cases

pytest.importorskip("numba")


def _decode(case: ParseCase, rows: bool) -> Any:
    """Outputs (rows made objects, and which keys came as rows), or the error."""
    decoder = BatchDecoder(case.features)
    decoder.string_rows = rows
    buf, starts, ends = join_records(case.records)
    try:
        out = decoder.decode(buf, starts, ends)
    except TFRecordError as exc:
        return ("error", type(exc).__name__, str(exc)), set()
    as_rows = {k for k, v in out.items() if is_rows(v)}
    values = {k: (rows_to_objects(v) if k in as_rows else v) for k, v in out.items()}
    return ("ok", {k: (v.dtype.str, v.shape, v.tolist()) for k, v in values.items()}), as_rows


@given(wide_cases())
def test_rows_hold_the_same_values_and_errors_as_bytes(case: ParseCase) -> None:
    plain, none = _decode(case, rows=False)
    got, as_rows = _decode(case, rows=True)
    assert none == set()
    assert got == plain
    strings = {k for k, s in case.features.items() if s.dtype == "string"}
    assert as_rows <= strings


def _spec(*names: str) -> dict[str, FixedLenFeature]:
    return {name: FixedLenFeature([], "string") for name in names}


def _rows_of(features: dict[str, FixedLenFeature], records: list[bytes]) -> dict[str, Any]:
    decoder = BatchDecoder(features)
    decoder.string_rows = True
    return decoder.decode(*join_records(records))


def test_short_strings_come_as_one_table_of_rows() -> None:
    # Zero bytes at the end, empty values, values of every size up to the width.
    values = [b"", b"\x00", b"ab\x00\x00", b"x" * 17, b"\x00y\x00"]
    records = [
        encode_example({"a": [v], "b": [values[(i + 2) % 5]], "c": [b"%d" % i]})
        for i, v in enumerate(values * 3)
    ]
    out = _rows_of(_spec("a", "b", "c"), records)
    for key in "abc":
        assert is_rows(out[key]), key
    # Every feature's rows are columns of one array (the bridge takes them as one block).
    assert out["a"].base is out["b"].base is out["c"].base
    assert rows_to_objects(out["a"]).tolist() == values * 3
    assert rows_to_objects(out["b"]).tolist() == [values[(i + 2) % 5] for i in range(15)]
    assert rows_to_objects(out["c"]).tolist() == [b"%d" % i for i in range(15)]


def test_fixed_shapes_keep_their_shape_as_rows() -> None:
    features = {"s": FixedLenFeature([2, 2], "string"), "t": FixedLenFeature([], "string")}
    records = [
        encode_example({"s": [b"%d-%d" % (i, j) for j in range(4)], "t": [b"t"]}) for i in range(3)
    ]
    out = _rows_of(features, records)
    assert is_rows(out["s"])
    assert out["s"].shape == (3, 2, 2)
    assert rows_to_objects(out["s"]).tolist() == [
        [[b"%d-0" % i, b"%d-1" % i], [b"%d-2" % i, b"%d-3" % i]] for i in range(3)
    ]


@pytest.mark.parametrize(
    "why",
    ["default", "too wide", "uneven", "off the plain path"],
)
def test_objects_where_rows_do_not_apply(why: str) -> None:
    features = _spec("a", "b")
    records = [encode_example({"a": [b"a%d" % (i % 10)], "b": [b"b"]}) for i in range(400)]
    if why == "default":
        features["b"] = FixedLenFeature([], "string", default_value=b"dflt")
        records[7] = encode_example({"a": [b"a7"]})
    elif why == "too wide":
        records[3] = encode_example({"a": [b"w" * (MAX_WIDTH + 1)], "b": [b"b"]})
    elif why == "uneven":  # one 400-byte value among 2-byte ones: all padded to it
        records[5] = encode_example({"a": [b"u" * 400], "b": [b"b"]})
    else:  # an unpacked duplicate key: the exact path takes that record
        records[9] = encode_example({"a": [b"x"], "b": [b"b"]}) + encode_example({"a": [b"a"]})
    out = _rows_of(features, records)
    assert not is_rows(out["a"])
    assert out["a"].dtype == object
    plain = BatchDecoder(features).decode(*join_records(records))
    assert out["a"].tolist() == plain["a"].tolist()
    assert out["b"].tolist() == plain["b"].tolist()


@given(st.lists(st.binary(max_size=40), max_size=30))
def test_string_rows_round_trip(values: list[bytes]) -> None:
    buf = np.frombuffer(b"".join(values) + b"pad", np.uint8)
    ends = np.cumsum([len(v) for v in values], dtype=np.int64)
    starts = ends - np.array([len(v) for v in values], np.int64)
    rows = string_rows(buf, np.stack((starts, ends), axis=1))
    assert rows is not None
    assert rows.shape == (len(values),)
    assert rows["size"].tolist() == [len(v) for v in values]
    assert rows_to_objects(rows).tolist() == values
