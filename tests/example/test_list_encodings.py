"""Lists that mix packed runs, unpacked values and garbage: TensorFlow's reading, pinned.

Each case was checked against TensorFlow 2.21 (``tests/tf/test_list_encodings_tf.py``
keeps checking them); these run without it.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.errors import ExampleParseError, MalformedExampleError
from tfrecord_engine.example.batch import BatchDecoder
from tfrecord_engine.example.encode import encode_example
from tfrecord_engine.example.specs import FeatureSpec
from tfrecord_engine.testing.list_encodings import (
    GARBAGE,
    UNMODELED,
    MixedList,
    encode_list,
    mixed_lists,
    tf_values,
)
from tfrecord_engine.testing.wirebytes import field as _ld


def _f(*values: float) -> bytes:
    return b"".join(struct.pack("<f", v) for v in values)


_TAG = {"int64": 0x1A, "float32": 0x12, "string": 0x0A}


def _example(dtype: str, body: bytes) -> bytes:
    return _ld(0x0A, _ld(0x0A, _ld(0x0A, b"x") + _ld(0x12, _ld(_TAG[dtype], body))))


def _sequence(dtype: str, body: bytes, *, steps: bool) -> bytes:
    feature = _ld(_TAG[dtype], body)
    if not steps:
        return _example(dtype, body)  # field 1 of a SequenceExample is its context
    return _ld(0x12, _ld(0x0A, _ld(0x0A, b"x") + _ld(0x12, _ld(0x0A, feature))))


I_P12 = _ld(0x0A, b"\x01\x02")
CASES: list[tuple[str, str, bytes, list[Any] | None, list[list[Any]] | None]] = [
    # (id, dtype, list body, Example/context values, feature_list steps); None = fails
    ("int-packed", "int64", I_P12, [1, 2], [[1, 2]]),
    ("int-unpacked", "int64", b"\x08\x01\x08\x02", [1, 2], [[1, 2]]),
    ("int-packed-then-unpacked", "int64", I_P12 + b"\x08\x03", [1, 2], None),
    ("int-unpacked-then-packed", "int64", b"\x08\x03" + I_P12, None, None),
    ("int-two-runs", "int64", _ld(0x0A, b"\x01") + _ld(0x0A, b"\x02"), [1], None),
    ("int-empty-run-then-unpacked", "int64", _ld(0x0A, b"") + b"\x08\x00", [], None),
    ("int-empty-run-then-run", "int64", _ld(0x0A, b"") + _ld(0x0A, b"\x05"), [], None),
    ("int-empty-run", "int64", _ld(0x0A, b""), [], [[]]),
    ("int-run-then-empty-runs", "int64", I_P12 + b"\x0a\x00\x0a\x00", [1, 2], [[1, 2], [], []]),
    ("int-run-then-feature", "int64", _ld(0x0A, b"") + _ld(0x0A, b"\x1a\x00"), [], [[], []]),
    ("int-packed-then-garbage", "int64", _ld(0x0A, b"\x01") + GARBAGE, [1], None),
    ("int-packed-then-truncated", "int64", _ld(0x0A, b"\x01") + b"\x08", [1], None),
    ("int-packed-then-0xff", "int64", _ld(0x0A, b"\x01") + b"\xff", [1], None),
    ("int-unpacked-then-garbage", "int64", b"\x08\x01" + GARBAGE, None, None),
    ("int-unpacked-then-truncated", "int64", b"\x08\x01\x08", None, None),
    ("int-run-past-the-list", "int64", b"\x0a\x05\x01", [1], [[1]]),
    ("float-packed-then-unpacked", "float32", _ld(0x0A, _f(1, 2)) + b"\x0d" + _f(3), [1, 2], None),
    ("float-unpacked-then-packed", "float32", b"\x0d" + _f(3) + _ld(0x0A, _f(1, 2)), None, None),
    ("float-two-runs", "float32", _ld(0x0A, _f(1)) + _ld(0x0A, _f(2)), [1], None),
    ("float-empty-run-then-run", "float32", _ld(0x0A, b"") + _ld(0x0A, _f(2)), [], None),
    ("float-run-then-empty-run", "float32", _ld(0x0A, _f(1)) + b"\x0a\x00", [1], [[1], []]),
    ("float-packed-then-garbage", "float32", _ld(0x0A, _f(1)) + GARBAGE, [1], None),
    ("float-unpacked-then-garbage", "float32", b"\x0d" + _f(1) + GARBAGE, None, None),
    ("float-unpacked-then-truncated", "float32", b"\x0d" + _f(1) + b"\x0d\x00", None, None),
    ("bytes-two", "string", _ld(0x0A, b"a") + _ld(0x0A, b"b"), [b"a", b"b"], [[b"a", b"b"]]),
    ("bytes-then-garbage", "string", _ld(0x0A, b"a") + GARBAGE, None, None),
    ("bytes-then-truncated", "string", _ld(0x0A, b"a") + b"\x0a\x05", None, None),
    ("garbage-then-bytes", "string", GARBAGE + _ld(0x0A, b"a"), None, None),
]
_IDS = [c[0] for c in CASES]


def _values(out: Any) -> list[Any]:
    return [v.item() if isinstance(v, np.generic) else v for v in out.values.tolist()]


def _steps(out: Any) -> list[list[Any]]:
    """A single record's VarLen feature_list value as its steps' values."""
    rows: list[list[Any]] = [[] for _ in range(int(out.dense_shape[0]))]
    for (step, _), v in zip(out.indices.tolist(), out.values.tolist(), strict=True):
        rows[step].append(v)
    return rows


@pytest.mark.parametrize(("name", "dtype", "body", "example", "steps"), CASES, ids=_IDS)
def test_example_reads_the_first_elements_encoding(
    name: str, dtype: str, body: bytes, example: list[Any] | None, steps: list[list[Any]] | None
) -> None:
    record = _example(dtype, body)
    spec = {"x": tfe.VarLenFeature(dtype)}
    if example is None:
        with pytest.raises(MalformedExampleError, match=r"^Key: x\.  Can't parse serialized"):
            tfe.parse_single_example(record, spec)
        batch_text = r"^Name: <unknown>, Key: x, Index: 1\.  Can't parse serialized Example\. \("
        with pytest.raises(MalformedExampleError, match=batch_text):
            tfe.parse_example([encode_example({"y": [1]}), record], spec)
        return
    assert _values(tfe.parse_single_example(record, spec)["x"]) == example
    assert _values(tfe.parse_example([record, record], spec)["x"]) == example * 2


@pytest.mark.parametrize(("name", "dtype", "body", "example", "steps"), CASES, ids=_IDS)
def test_sequence_context_reads_like_example(
    name: str, dtype: str, body: bytes, example: list[Any] | None, steps: list[list[Any]] | None
) -> None:
    record = _sequence(dtype, body, steps=False)
    spec = {"x": tfe.VarLenFeature(dtype)}
    if example is None:
        text = r"^Name: <unknown>, Context feature: x\.  Data types don't match\. Expected"
        with pytest.raises(MalformedExampleError, match=text):
            tfe.parse_single_sequence_example(record, context_features=spec)
        return
    ctx, _ = tfe.parse_single_sequence_example(record, context_features=spec)
    assert _values(ctx["x"]) == example


@pytest.mark.parametrize(("name", "dtype", "body", "example", "steps"), CASES, ids=_IDS)
def test_feature_lists_read_on_after_a_packed_run(
    name: str, dtype: str, body: bytes, example: list[Any] | None, steps: list[list[Any]] | None
) -> None:
    record = _sequence(dtype, body, steps=True)
    spec = {"x": tfe.VarLenFeature(dtype)}
    if steps is None:
        text = (
            r"^(Error in sequence feature x in example <unknown> \("
            r"|Name: <unknown>, Feature list: x, Index: [01]\.  Data types"
            r"|Unsupported datatype\.)"
        )
        with pytest.raises(MalformedExampleError, match=text):
            tfe.parse_single_sequence_example(record, sequence_features=spec)
        return
    _, seq = tfe.parse_single_sequence_example(record, sequence_features=spec)
    assert _steps(seq["x"]) == steps


def test_feature_list_errors_name_the_step() -> None:
    good = _ld(0x0A, _ld(0x1A, I_P12))
    bad = _ld(0x0A, _ld(0x1A, b"\x08\x03" + I_P12))
    record = _ld(0x12, _ld(0x0A, _ld(0x0A, b"x") + _ld(0x12, good + good + bad)))
    spec = {"x": tfe.VarLenFeature("int64")}
    with pytest.raises(MalformedExampleError, match=r"Feature list: x, Index: 2\.  Data types"):
        tfe.parse_sequence_example([record], sequence_features=spec)
    floats = _ld(0x0A, _ld(0x12, b"\x0d" + _f(1)))
    mismatch = _ld(0x12, _ld(0x0A, _ld(0x0A, b"x") + _ld(0x12, good + floats)))
    with pytest.raises(ExampleParseError, match=r"Feature list: x, Index: 1\.  Data types"):
        tfe.parse_sequence_example([mismatch], sequence_features=spec)


def test_counts_follow_what_was_read() -> None:
    record = _example("int64", I_P12 + b"\x08\x03")  # TF reads [1, 2]
    fixed = tfe.parse_example([record], {"x": tfe.FixedLenFeature([2], "int64")})
    assert fixed["x"].tolist() == [[1, 2]]
    ragged = tfe.parse_example([record], {"x": tfe.RaggedFeature("int64")})["x"]
    assert ragged.flat_values.tolist() == [1, 2]
    two_runs = _example("int64", _ld(0x0A, b"\x01") + _ld(0x0A, b"\x02"))  # TF reads [1]
    with pytest.raises(ExampleParseError, match="Values size: 1 but output shape: \\[2\\]"):
        tfe.parse_example([two_runs], {"x": tfe.FixedLenFeature([2], "int64")})
    with pytest.raises(ExampleParseError, match="Some int64_list slice was not parsed"):
        tfe.parse_single_example(two_runs, {"x": tfe.FixedLenFeature([2], "int64")})


def test_bytes_list_error_texts_depend_on_the_feature_type() -> None:
    record = _example("string", _ld(0x0A, b"a") + GARBAGE)
    with pytest.raises(MalformedExampleError, match="Could not get num elements in bytes_list"):
        tfe.parse_single_example(record, {"x": tfe.VarLenFeature("string")})
    with pytest.raises(MalformedExampleError, match="Parsing bytes_list failed"):
        tfe.parse_single_example(record, {"x": tfe.FixedLenFeature([1], "string")})


def test_encode_list_writes_each_encoding() -> None:
    assert encode_list("int64", [1, 2, 3], "packed", 0) == b"\x0a\x03\x01\x02\x03"
    assert encode_list("int64", [1, 2, 3], "unpacked", 0) == b"\x08\x01\x08\x02\x08\x03"
    assert encode_list("int64", [1, 2, 3], "split", 1) == b"\x0a\x01\x01\x0a\x02\x02\x03"
    assert encode_list("int64", [1, 2], "unpacked+packed", 1) == b"\x08\x01\x0a\x01\x02"
    assert encode_list("float32", [1.0], "packed+garbage", 0) == _ld(0x0A, _f(1)) + GARBAGE


@given(st.sampled_from(["int64", "float32"]).flatmap(mixed_lists), st.booleans())
def test_exact_path_matches_the_model(mixed: MixedList, steps: bool) -> None:
    record = _sequence(mixed.dtype, mixed.body(), steps=steps)
    spec = {"x": tfe.VarLenFeature(mixed.dtype)}
    expected: Any = mixed.expected_steps() if steps else mixed.expected()
    where = {"sequence_features": spec} if steps else {"context_features": spec}
    if expected == UNMODELED:
        return
    if expected is None:
        with pytest.raises(MalformedExampleError):
            tfe.parse_sequence_example([record], **where)
        if not steps:
            with pytest.raises(MalformedExampleError):
                tfe.parse_example([record], spec)
        return
    single = tfe.parse_single_sequence_example(record, **where)
    if steps:
        assert _steps(single[1]["x"]) == expected
        return
    assert _values(single[0]["x"]) == expected
    assert _values(tfe.parse_example([record], spec)["x"]) == expected


def _mixed_records(seed: int, n: int) -> tuple[list[bytes], list[list[int]], list[list[float]]]:
    """``n`` records, most canonical (lockstep), some mixed; with TF's expected values."""
    rng = np.random.default_rng(seed)
    encodings = ["packed", "unpacked", "split", "packed+unpacked", "packed+garbage"]
    records, ints, floats = [], [], []
    for i in range(n):
        iv = rng.integers(-(1 << 40), 1 << 40, size=int(rng.integers(0, 5))).tolist()
        fv = rng.standard_normal(3).astype(np.float32).tolist()
        enc = str(rng.choice(encodings)) if i % 3 == 0 else "packed"
        cut = int(rng.integers(0, len(iv) + 1))
        body_i = encode_list("int64", iv, enc, cut)  # type: ignore[arg-type]
        # The float list always keeps 3 values for its FixedLenFeature: only mix after them.
        fenc = "packed+garbage" if enc == "packed+garbage" else "packed"
        body_f = encode_list("float32", fv, fenc, 0)  # type: ignore[arg-type]
        entries = _ld(0x0A, _ld(0x0A, b"i") + _ld(0x12, _ld(0x1A, body_i)))
        entries += _ld(0x0A, _ld(0x0A, b"f") + _ld(0x12, _ld(0x12, body_f)))
        records.append(_ld(0x0A, entries))
        want = tf_values(iv, enc, cut)  # type: ignore[arg-type]
        assert want is not None
        ints.append(want)
        floats.append(fv)
    return records, ints, floats


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert set(a) == set(b)
    np.testing.assert_array_equal(a["f"], b["f"])
    for part in ("indices", "values", "dense_shape"):
        np.testing.assert_array_equal(getattr(a["i"], part), getattr(b["i"], part))


SPECS: dict[str, FeatureSpec] = {
    "i": tfe.VarLenFeature("int64"),
    "f": tfe.FixedLenFeature([3], "float32"),
}


def test_batch_decoder_agrees_with_the_exact_path_on_mixed_lists() -> None:
    records, _, _ = _mixed_records(7, 96)
    exact = tfe.parse_example(records, SPECS)
    dec = BatchDecoder(SPECS)
    _same(dec.decode_records(records), exact)
    # Both paths ran: the mixed records fell back, the canonical ones did not.
    assert 0 < dec.stats.fallback_records < len(records)
    assert dec.stats.exact_batches == 0


def test_parse_example_on_a_large_mixed_batch_matches_the_model() -> None:
    records, ints, floats = _mixed_records(11, 1100)
    out = tfe.parse_example(records, SPECS)
    assert out["i"].values.tolist() == [v for row in ints for v in row]
    np.testing.assert_array_equal(out["f"], np.array(floats, np.float32))
    _same(out, BatchDecoder(SPECS).decode_records(records))


def test_batch_decoder_fails_like_the_exact_path() -> None:
    records = [encode_example({"i": [1], "f": [1.0, 2.0, 3.0]})] * 70
    bad = _example("int64", b"\x08\x03" + I_P12).replace(b"\x0a\x01x", b"\x0a\x01i")
    records = [*records[:40], bad, *records[40:]]
    with pytest.raises(MalformedExampleError) as exact:
        tfe.parse_example(records, {"i": tfe.VarLenFeature("int64")})
    with pytest.raises(MalformedExampleError) as batch:
        BatchDecoder({"i": tfe.VarLenFeature("int64")}).decode_records(records)
    assert str(batch.value) == str(exact.value)
    assert str(exact.value).startswith("Name: <unknown>, Key: i, Index: 40.  Can't parse")


def _feature_list(steps: bytes) -> bytes:
    return _ld(0x12, _ld(0x0A, _ld(0x0A, b"x") + _ld(0x12, steps)))


def test_feature_list_reads_on_from_the_end_of_a_packed_run() -> None:
    # Step 0 is `packed(1)` + `0a 00`: TF reads the empty run as step 1, then step 2.
    steps = _ld(0x0A, _ld(0x1A, _ld(0x0A, b"\x01") + b"\x0a\x00")) + _ld(0x0A, _ld(0x1A, b""))
    out = tfe.parse_single_sequence_example(
        _feature_list(steps), sequence_features={"x": tfe.RaggedFeature("int64")}
    )[1]["x"]
    assert out.to_list() == [[1], [], []]


@pytest.mark.parametrize(
    "steps",
    [
        _ld(0x0A, _ld(0x1A, _ld(0x0A, b"\x01"))) + b"\x0a\x05",  # a step past the list
        _ld(0x0A, _ld(0x1A, _ld(0x0A, b"\x01") + b"\x0a\x05")),  # the same, after a run
    ],
    ids=["overlong-step", "overlong-after-run"],
)
def test_feature_list_step_overrunning_the_list_fails(steps: bytes) -> None:
    text = r"^Name: <unknown>, Feature list: x, Index: 1\.  Data types don't match\. Expected"
    with pytest.raises(MalformedExampleError, match=text):
        tfe.parse_single_sequence_example(
            _feature_list(steps), sequence_features={"x": tfe.VarLenFeature("int64")}
        )
