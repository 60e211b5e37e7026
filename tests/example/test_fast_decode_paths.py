"""The batch decoder's faster paths for strings and varints against the exact path:

- string ``FixedLenFeature`` s in the compiled plan (``example.dense``): value spans from
  the kernel, ``bytes`` made afterwards (defaults, key orders changing mid-batch, value
  lengths of one- and two-byte length prefixes);
- ``bytes`` objects made through a zero-padded ``S<width>`` array (values ending in NUL
  bytes, which numpy strips, are made again);
- varint runs decoded eight bytes at a time (all one-byte runs, widths 1-10).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine import kernels
from tfrecord_engine.example.batch import BatchDecoder, join_records
from tfrecord_engine.example.dense import DensePlan
from tfrecord_engine.example.lists import bytes_objects
from tfrecord_engine.example.parse import parse_example as parse_exact
from tfrecord_engine.kernels import examples as kernel_examples
from tfrecord_engine.testing.wirebytes import varint

pytest.importorskip("numba")

_SPEC: dict[str, Any] = {
    "name": tfe.FixedLenFeature([], "string"),
    "pair": tfe.FixedLenFeature([2], "string", default_value=[b"d\x00", b""]),
    "id": tfe.FixedLenFeature([], "int64", default_value=-3),
    "x": tfe.FixedLenFeature([2], "float32"),
}

_VALUE = st.binary(max_size=200) | st.sampled_from([b"", b"\x00", b"a\x00\x00", b"x" * 130])


@st.composite
def _records(draw: st.DrawFn) -> list[bytes]:
    """Records of ``_SPEC`` (with an unselected key), each in an order of its own."""
    records = []
    for _ in range(draw(st.integers(1, 40))):
        values: dict[str, Any] = {
            "name": draw(_VALUE),
            "x": draw(st.lists(st.floats(width=32, allow_nan=False), min_size=2, max_size=2)),
            "other": np.array(draw(st.lists(st.integers(0, 2**40), max_size=4)), np.int64),
        }
        if draw(st.booleans()):
            values["pair"] = [draw(_VALUE), draw(_VALUE)]
        if draw(st.booleans()):
            values["id"] = draw(st.integers(-(2**63), 2**63 - 1))
        order = draw(st.permutations(list(values)))
        records.append(tfe.encode_example({k: values[k] for k in order}))
    return records


def _same(ours: dict[str, Any], want: dict[str, Any]) -> None:
    assert list(ours) == list(want)
    for key, value in want.items():
        got = ours[key]
        assert (got.dtype, got.shape) == (value.dtype, value.shape), key
        if value.dtype == object:
            assert [type(v) for v in got.reshape(-1)] == [bytes] * value.size, key
        assert got.tolist() == value.tolist(), key


def test_the_compiled_plan_takes_string_features() -> None:
    assert kernels.wait(timeout=240)
    assert DensePlan.of(_SPEC) is not None


@settings(max_examples=60, deadline=None)
@given(_records())
def test_string_features_by_the_compiled_plan_equal_the_exact_path(records: list[bytes]) -> None:
    assert kernels.wait(timeout=240)
    decoder = BatchDecoder(_SPEC)
    want = parse_exact(records, _SPEC)
    _same(decoder.decode(*join_records(records)), want)
    _same(decoder.decode_records(records), want)
    # Every record is in the plan's layout, whatever its key order: none left over.
    assert decoder.stats.fallback_records == 0
    assert decoder.stats.template_records == decoder.stats.walked_records == 0


def test_string_records_off_the_plain_layout_and_errors_go_the_exact_way() -> None:
    assert kernels.wait(timeout=240)
    good = tfe.encode_example({"name": b"n", "x": [1.0, 2.0]})
    # Two Examples back to back: one record, the later fields merged (the exact path).
    split = tfe.encode_example({"name": b"a"}) + tfe.encode_example(
        {"x": [3.0, 4.0], "pair": [b"p", b"q"]}
    )
    decoder = BatchDecoder(_SPEC)
    records = [good, split, good]
    _same(decoder.decode(*join_records(records)), parse_exact(records, _SPEC))
    assert decoder.stats.fallback_records == 1
    for bad in (
        tfe.encode_example({"name": [b"1", b"2"], "x": [1.0, 2.0]}),  # two values for one
        tfe.encode_example({"name": [5], "x": [1.0, 2.0]}),  # int64 for a string
        tfe.encode_example({"x": [1.0, 2.0]}),  # required and missing
    ):
        batch = [good, bad]
        with pytest.raises(tfe.TFRecordError) as want:
            parse_exact(batch, _SPEC)
        with pytest.raises(tfe.TFRecordError) as got:
            BatchDecoder(_SPEC).decode(*join_records(batch))
        assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))


@settings(max_examples=80, deadline=None)
@given(
    values=st.lists(
        st.binary(max_size=40) | st.sampled_from([b"\x00", b"ab\x00", b"", b"z" * 300]),
        max_size=300,
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_bytes_objects_equal_slices(values: list[bytes], seed: int) -> None:
    assert kernels.wait(timeout=240)
    buf, starts, ends = join_records(values)
    order = np.random.default_rng(seed).permutation(len(values))
    got = bytes_objects(buf, starts[order], ends[order])
    assert got.dtype == object
    assert got.shape == (len(values),)
    assert [type(v) for v in got] == [bytes] * len(values)
    assert got.tolist() == [values[i] for i in order.tolist()]


def test_padded_rows_keep_every_byte_of_a_value() -> None:
    assert kernels.wait(timeout=240)
    buf = np.frombuffer(b"abcdefghij\x00\x00klm", np.uint8)
    rows = kernel_examples.padded_rows(buf, np.array([0, 9, 10]), np.array([9, 12, 15]), 9)
    assert rows is not None
    assert rows.shape == (3, 16)
    assert [bytes(r) for r in rows] == [
        b"abcdefghi" + bytes(7),
        b"j\x00\x00" + bytes(13),
        b"\x00\x00klm" + bytes(11),
    ]
    # A value longer than the width asked for: no rows (the caller's other paths).
    assert kernel_examples.padded_rows(buf, np.array([0]), np.array([12]), 9) is None


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.lists(
            st.integers(0, 127) | st.integers(0, 2**64 - 1).map(lambda v: v >> (v % 64)),
            max_size=30,
        ),
        min_size=1,
        max_size=8,
    )
)
def test_varint_runs_of_any_widths_equal_their_values(runs: list[list[int]]) -> None:
    # Runs of one-byte varints take the eight-at-a-time path; any varint of up to 8
    # bytes one word; 9- and 10-byte ones (and those near the buffer's end) byte by byte.
    assert kernels.wait(timeout=240)
    parts = [b"".join(varint(v) for v in run) for run in runs]
    buf, starts, ends = join_records(parts)
    got = kernels.varint_runs(buf, starts, ends)
    assert got is not None
    values, counts, ok = got
    assert ok.all()
    assert counts.tolist() == [len(r) for r in runs]
    want = [v - (1 << 64) if v >= 1 << 63 else v for run in runs for v in run]
    assert values.tolist() == want


def test_string_features_of_no_values_and_empty_batches() -> None:
    assert kernels.wait(timeout=240)
    spec = {
        "none": tfe.FixedLenFeature([0], "string"),
        "b": tfe.FixedLenFeature([], "int64", default_value=1),
    }
    records = [tfe.encode_example({"none": np.zeros(0, "S1"), "c": [1]})] * 5
    for batch in (records, []):
        decoder = BatchDecoder(spec)
        _same(decoder.decode(*join_records(batch)), parse_exact(batch, spec))
        assert decoder.stats.fallback_records == 0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=30))
def test_sparse_indices_of_a_varlen_feature(counts: list[int]) -> None:
    assert kernels.wait(timeout=240)
    total = sum(counts)
    got = kernel_examples.sparse_indices(np.array(counts, np.int64), total)
    assert got is not None
    assert got.shape == (total, 2)
    assert got.tolist() == [[r, j] for r, c in enumerate(counts) for j in range(c)]
    # Counts that do not add up: no indices (the numpy path decides).
    assert kernel_examples.sparse_indices(np.array([*counts, 1], np.int64), total) is None
    batch = [tfe.encode_example({"v": np.arange(c, dtype=np.int64)}) for c in counts]
    spec = {"v": tfe.VarLenFeature("int64")}
    if batch:
        out = BatchDecoder(spec).decode(*join_records(batch))["v"]
        assert out.indices.tolist() == got.tolist()
