"""parse_example / parse_single_example / parse_sequence_example without TensorFlow.

Messages and semantics pinned here are the ones SPEC-tensorflow-compat.md §6 records;
tests/tf/ checks the same behaviour against TensorFlow itself on generated input.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import tfrecord_engine as tfe


def _batch() -> list[bytes]:
    return [
        tfe.encode_example({"x": [1, 2], "s": "a", "f": [0.5]}),
        tfe.encode_example({"x": [5], "s": ["b", "c"]}),
        tfe.encode_example({}),
    ]


@pytest.mark.parametrize("container", [list, tuple, lambda b: np.array(b, dtype=object)])
def test_batch_containers_and_outputs(container: object) -> None:
    batch = container(_batch())  # type: ignore[operator]
    out = tfe.parse_example(
        batch,
        {
            "x": tfe.VarLenFeature("int64"),
            "s": tfe.VarLenFeature("string"),
            "f": tfe.FixedLenFeature([], "float32", default_value=-1.0),
        },
    )
    assert out["x"].indices.tolist() == [[0, 0], [0, 1], [1, 0]]
    assert out["x"].values.tolist() == [1, 2, 5]
    assert out["x"].dense_shape.tolist() == [3, 2]
    assert out["s"].values.dtype == object
    assert out["s"].values.tolist() == [b"a", b"b", b"c"]
    assert out["f"].dtype == np.float32
    assert out["f"].tolist() == [0.5, -1.0, -1.0]
    assert out["x"].to_dense().tolist() == [[1, 2], [5, 0], [0, 0]]


def test_type_mismatch_messages_and_attributes() -> None:
    spec = {"x": tfe.FixedLenFeature([2], "float32")}
    with pytest.raises(tfe.ExampleParseError) as batch_err:
        tfe.parse_example(_batch(), spec)
    assert str(batch_err.value) == (
        "Name: <unknown>, Key: x, Index: 0.  Data types don't match. "
        "Data type: int64 but expected type: float"
    )
    assert (batch_err.value.key, batch_err.value.index) == ("x", 0)
    with pytest.raises(tfe.ExampleParseError) as single_err:
        tfe.parse_single_example(_batch()[0], spec)
    assert str(single_err.value) == (
        "Key: x.  Data types don't match. Data type: int64 but expected type: float"
    )
    assert single_err.value.index is None
    assert isinstance(single_err.value, ValueError)
    again = pickle.loads(pickle.dumps(single_err.value))
    assert (str(again), again.key) == (str(single_err.value), "x")


def _message(fn: object) -> str:
    with pytest.raises(tfe.ExampleParseError) as err:
        fn()  # type: ignore[operator]
    return str(err.value)


def test_missing_and_count_messages() -> None:
    required = {"y": tfe.FixedLenFeature([], "int64")}
    assert _message(lambda: tfe.parse_example(_batch(), required)) == (
        "Name: <unknown>, Feature: y (data type: int64) is required but could not be found."
    )
    assert _message(lambda: tfe.parse_single_example(_batch()[0], required)) == (
        "Feature: y (data type: int64) is required but could not be found."
    )
    pair = {"x": tfe.FixedLenFeature([2], "int64")}
    assert _message(lambda: tfe.parse_example(_batch()[:2], pair)) == (
        "Name: <unknown>, Key: x, Index: 1.  Number of int64 values != expected.  "
        "Values size: 1 but output shape: [2]"
    )
    rows = {"x": tfe.FixedLenSequenceFeature([2], "int64", True)}
    assert _message(lambda: tfe.parse_example(_batch()[1:2], rows)) == (
        "Name: <unknown>, Key: x, Index: 0.  Number of int64 values is not a multiple of "
        "stride length. Saw 1 values but output shape is: [?,2]"
    )


@pytest.mark.parametrize(
    ("features", "match"),
    [
        ({}, "features cannot be empty"),
        ({"x": tfe.FixedLenSequenceFeature([], "int64")}, "requires allow_missing to be True"),
        (
            {"x": tfe.VarLenFeature("int64"), "r": tfe.RaggedFeature("int64", value_key="x")},
            "must not intersect",
        ),
        (
            {"x": tfe.VarLenFeature("int64"), "s": tfe.SparseFeature("i", "x", "float32", 3)},
            "two dtypes",
        ),
    ],
)
def test_invalid_spec_sets(features: dict[str, object], match: str) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match=match):
        tfe.parse_example(_batch(), features)  # type: ignore[arg-type]


def test_fixed_len_sequence_pads_with_default() -> None:
    out = tfe.parse_example(
        _batch(), {"x": tfe.FixedLenSequenceFeature([], "int64", True, default_value=-7)}
    )
    assert out["x"].tolist() == [[1, 2], [5, -7], [-7, -7]]


def test_sparse_feature_is_sorted_and_unchecked() -> None:
    data = [tfe.encode_example({"i": [4, 1, 200], "v": [1.0, 2.0, 3.0]})]
    out = tfe.parse_example(data, {"s": tfe.SparseFeature("i", "v", "float32", 10)})["s"]
    assert out.indices.tolist() == [[0, 1], [0, 4], [0, 200]]
    assert out.values.tolist() == [2.0, 1.0, 3.0]
    assert out.dense_shape.tolist() == [1, 10]


def test_ragged_partitions() -> None:
    data = [
        tfe.encode_example({"v": [1, 2, 3], "lens": [2, 1]}),
        tfe.encode_example({"v": [4], "lens": [0, 1]}),
    ]
    spec = {
        "r": tfe.RaggedFeature(
            "int64", value_key="v", partitions=[tfe.RaggedFeature.RowLengths("lens")]
        )
    }
    out = tfe.parse_example(data, spec)["r"]
    assert out.to_list() == [[[1, 2], [3]], [[], [4]]]
    assert out.row_splits.dtype == np.int32
    single = tfe.parse_single_example(data[0], spec)["r"]
    assert single.to_list() == [[1, 2], [3]]
    plain = tfe.parse_single_example(data[0], {"v": tfe.RaggedFeature("int64")})["v"]
    assert isinstance(plain, np.ndarray)
    assert plain.tolist() == [1, 2, 3]
    uniform = tfe.parse_example(
        data[:1],
        {"v": tfe.RaggedFeature("int64", partitions=[tfe.RaggedFeature.UniformRowLength(3)])},
    )["v"]
    assert uniform.values.shape == (1, 3)


def test_sequence_example_outputs() -> None:
    data = [
        tfe.encode_sequence_example(
            {"id": 1}, {"s": [[1, 2], [3, 4]], "t": [[b"a"], np.zeros(0, object), [b"b", b"c"]]}
        ),
        tfe.encode_sequence_example({}, {"s": [[5, 6]]}),
    ]
    ctx, lists, lengths = tfe.parse_sequence_example(
        data,
        {"id": tfe.FixedLenFeature([], "int64", default_value=0)},
        {
            "s": tfe.FixedLenSequenceFeature([2], "int64", allow_missing=True),
            "t": tfe.VarLenFeature("string"),
        },
    )
    assert ctx["id"].tolist() == [1, 0]
    assert lists["s"].tolist() == [[[1, 2], [3, 4]], [[5, 6], [0, 0]]]
    assert lengths["s"].tolist() == [2, 1]
    assert lists["t"].indices.tolist() == [[0, 0, 0], [0, 2, 0], [0, 2, 1]]
    assert lists["t"].dense_shape.tolist() == [2, 3, 2]
    no_lists = [tfe.encode_sequence_example({}, {})]
    with pytest.raises(tfe.ExampleParseError, match="Feature list 's' is required"):
        tfe.parse_sequence_example(no_lists, None, {"s": tfe.FixedLenSequenceFeature([2], "int64")})
    with pytest.raises(tfe.InvalidArgumentError, match="at least one should have values"):
        tfe.parse_sequence_example(data)


def test_zero_size_float_with_unpacked_values_is_an_error() -> None:
    # TensorFlow 2.21's tf.io.parse_example crashes (SIGSEGV) on exactly this input.
    feature = b"\x12\x0f" + b"\x0d\x00\x00\x80\x3f" * 3
    entry = b"\x0a\x01d\x12" + bytes([len(feature)]) + feature
    record = b"\x0a" + bytes([len(entry) + 2]) + b"\x0a" + bytes([len(entry)]) + entry
    assert _message(
        lambda: tfe.parse_example([record], {"d": tfe.FixedLenFeature([2, 0], "float32")})
    ) == (
        "Name: <unknown>, Key: d, Index: 0.  Number of float values != expected.  "
        "Values size: 3 but output shape: [2,0]"
    )


def test_ragged_validate_checks_partitions() -> None:
    data = [tfe.encode_example({"v": [1, 2, 3], "splits": [0, 5]})]
    part = [tfe.RaggedFeature.RowSplits("splits")]
    loose = tfe.RaggedFeature("int64", value_key="v", partitions=part)
    # Unvalidated, as in TensorFlow: the splits are taken as given.
    assert tfe.parse_single_example(data[0], {"r": loose})["r"].row_splits.tolist() == [0, 5]
    strict = tfe.RaggedFeature("int64", value_key="v", partitions=part, validate=True)
    with pytest.raises(tfe.ExampleParseError, match="do not form a valid RaggedTensor"):
        tfe.parse_single_example(data[0], {"r": strict})
    with pytest.raises(tfe.ExampleParseError, match="do not form a valid RaggedTensor"):
        tfe.parse_example(data, {"r": strict})
