"""tf.io-shaped spec objects (duck typing, no TensorFlow) and ``example_names``."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.errors import ExampleParseError
from tfrecord_engine.example.specs import as_feature_spec

# What tf.io's classes look like from outside: namedtuples with these names and fields,
# dtypes with a .name, shapes with .as_list().
FixedLenFeature = namedtuple("FixedLenFeature", "shape dtype default_value")
VarLenFeature = namedtuple("VarLenFeature", "dtype")
FixedLenSequenceFeature = namedtuple(
    "FixedLenSequenceFeature", "shape dtype allow_missing default_value"
)
RaggedFeature = namedtuple("RaggedFeature", "dtype value_key partitions row_splits_dtype validate")
SparseFeature = namedtuple("SparseFeature", "index_key value_key dtype size already_sorted")
RowLengths = namedtuple("RowLengths", "key")
UniformRowLength = namedtuple("UniformRowLength", "length")


class DType:
    def __init__(self, name: str) -> None:
        self.name = name


class Shape:
    def __init__(self, dims: list[int]) -> None:
        self.dims = dims

    def as_list(self) -> list[int]:
        return self.dims


class Tensor:
    def __init__(self, value: Any) -> None:
        self.value = np.asarray(value)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self.value


def _any(spec: object) -> Any:
    return spec  # what TensorFlow's (untyped) spec objects are to a type checker


INT64, FLOAT32, STRING, INT32 = DType("int64"), DType("float32"), DType("string"), DType("int32")

RECORDS = [
    tfe.encode_example(
        {"v": [1, 2], "q": [1, 2, 3, 4], "vals": [1, 2, 3, 4], "lens": [2], "i": [3], "sv": [0.5]}
    ),
    tfe.encode_example(
        {
            "f": np.array([7, 8], np.float32),
            "s": b"x",
            "vals": [9, 9],
            "lens": [1],
            "i": np.zeros(0, np.int64),
            "sv": np.zeros(0, np.float32),
        }
    ),
]


def _pairs() -> list[tuple[object, object]]:
    return [
        (
            FixedLenFeature(Shape([2]), FLOAT32, Tensor([1.5, 2.5])),
            tfe.FixedLenFeature([2], "float32", [1.5, 2.5]),
        ),
        (FixedLenFeature([], STRING, "none"), tfe.FixedLenFeature([], "string", b"none")),
        (VarLenFeature(INT64), tfe.VarLenFeature("int64")),
        (
            FixedLenSequenceFeature([2], INT64, True, -1),
            tfe.FixedLenSequenceFeature([2], "int64", True, -1),
        ),
        (
            RaggedFeature(INT64, "vals", (RowLengths("lens"), UniformRowLength(2)), INT32, False),
            tfe.RaggedFeature(
                "int64",
                "vals",
                [tfe.RaggedFeature.RowLengths("lens"), tfe.RaggedFeature.UniformRowLength(2)],
            ),
        ),
        (SparseFeature("i", "sv", FLOAT32, 10, False), tfe.SparseFeature("i", "sv", "float32", 10)),
    ]


@pytest.mark.parametrize(("foreign", "ours"), _pairs())
def test_tf_shaped_specs_convert_to_ours(foreign: object, ours: object) -> None:
    assert as_feature_spec(foreign) == ours


def test_a_dict_of_tf_shaped_specs_parses_like_ours() -> None:
    keys = ["f", "s", "v", "q", "r", "sp"]
    foreign: dict[str, Any] = {k: f for k, (f, _) in zip(keys, _pairs(), strict=True)}
    ours: dict[str, Any] = {k: o for k, (_, o) in zip(keys, _pairs(), strict=True)}
    got, want = tfe.parse_example(RECORDS, foreign), tfe.parse_example(RECORDS, ours)
    assert got.keys() == want.keys()
    assert got["f"].tolist() == want["f"].tolist() == [[1.5, 2.5], [7.0, 8.0]]
    assert repr(got["r"]) == repr(want["r"])
    assert got["sp"].values.tolist() == want["sp"].values.tolist() == [0.5]
    single = tfe.parse_single_example(RECORDS[1], {"s": foreign["s"], "f": foreign["f"]})
    assert single["s"] == b"x"
    ds_decoded = tfe.parse_sequence_example(
        [tfe.encode_sequence_example({}, {"t": [[1], [2, 3]]})],
        None,
        {"t": _any(VarLenFeature(INT64))},
    )
    assert ds_decoded[1]["t"].values.tolist() == [1, 2, 3]


def test_a_dataset_takes_tf_shaped_specs(tmp_path: Any) -> None:
    path = tmp_path / "a.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write_many(RECORDS)
    ds = tfe.RecordDataset(str(path), {"v": _any(VarLenFeature(INT64))}, save_index=False)
    assert ds.features == {"v": tfe.VarLenFeature("int64")}
    assert np.asarray(ds[0]["v"]).tolist() == [1, 2]


def test_unknown_objects_are_still_refused() -> None:
    odd = namedtuple("FixedLenFeature", "shape")([1])  # not the right fields
    with pytest.raises(tfe.InvalidArgumentError, match="unsupported spec"):
        tfe.parse_example(RECORDS, {"x": _any(odd)})
    with pytest.raises(tfe.InvalidArgumentError, match="unsupported partition"):
        as_feature_spec(RaggedFeature(INT64, None, ("?",), INT32, False))


def test_example_names_name_the_failing_record() -> None:
    spec = {"x": tfe.FixedLenFeature([1], "int64")}
    records = [tfe.encode_example({"x": [1]}), tfe.encode_example({"y": [1]})]
    with pytest.raises(ExampleParseError, match=r"^Name: b\.tfrecord:7, Feature: x ") as exc:
        tfe.parse_example(records, spec, example_names=["a", b"b.tfrecord:7"])
    assert exc.value.index == 1
    with pytest.raises(ExampleParseError, match=r"^Name: <unknown>, Feature: x "):
        tfe.parse_example(records, spec)
    with pytest.raises(ExampleParseError, match=r"^Name: b, Feature: x "):
        tfe.parse_example(records * 40, spec, example_names=["a", "b"] * 40)  # batch decoder
    with pytest.raises(tfe.InvalidArgumentError, match=r"name.shape=\[1\], serialized.shape=\[2\]"):
        tfe.parse_example(records, spec, example_names=["a"])
    assert tfe.parse_example(records[:1], spec, example_names=[])["x"].tolist() == [[1]]
    # TensorFlow's single-Example texts carry no name
    with pytest.raises(ExampleParseError, match=r"^Feature: x "):
        tfe.parse_single_example(records[1], spec, example_names="b")


def test_sequence_example_names() -> None:
    spec = {"s": tfe.FixedLenSequenceFeature([], "int64")}
    records = [
        tfe.encode_sequence_example({}, {"s": [[1]]}),
        tfe.encode_sequence_example({}, {"t": [[1]]}),
    ]
    with pytest.raises(ExampleParseError, match=r"^Name: two, Feature list 's' is required"):
        tfe.parse_sequence_example(records, None, spec, example_names=["one", "two"])
    with pytest.raises(ExampleParseError, match=r"^Name: nm, Feature list 's' is required"):
        tfe.parse_single_sequence_example(records[1], None, spec, example_name="nm")
