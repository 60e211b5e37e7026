"""Feature specs: dtype/shape normalization and validation."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.example.specs import normalize_dtype


class _FakeTFDType:
    """Stands in for tf.int64 & co.: anything with a ``.name``."""

    def __init__(self, name: str) -> None:
        self.name = name


class _FakeShape:
    def as_list(self) -> list[int]:
        return [2, 3]


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        ("int64", "int64"),
        ("float32", "float32"),
        ("string", "string"),
        ("bytes", "string"),
        (np.int64, "int64"),
        (np.dtype("float32"), "float32"),
        (np.bytes_, "string"),
        (bytes, "string"),
        (object, "string"),
        (_FakeTFDType("int64"), "int64"),
        (_FakeTFDType("float32"), "float32"),
        (_FakeTFDType("string"), "string"),
    ],
)
def test_dtype_normalization(dtype: object, expected: str) -> None:
    assert normalize_dtype(dtype) == expected


@pytest.mark.parametrize("dtype", ["int32", np.float64, _FakeTFDType("bool"), None, 3])
def test_unsupported_dtypes(dtype: object) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="must be int64, float32 or string"):
        tfe.VarLenFeature(dtype)


def test_fixed_len_normalizes_shape_and_default() -> None:
    spec = tfe.FixedLenFeature((2, 1), np.float32, default_value=np.array([[1e39], [0.1]]))
    assert spec.shape == (2, 1)
    assert spec.dtype == "float32"
    assert spec.default_value == (float("inf"), float(np.float32(0.1)))
    assert tfe.FixedLenFeature(_FakeShape(), "int64").shape == (2, 3)
    assert tfe.FixedLenFeature(3, "int64").shape == (3,)
    assert tfe.FixedLenFeature([], "string", default_value="é").default_value == ("é".encode(),)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"shape": [2], "dtype": "int64", "default_value": 1}, "has 1 values"),
        ({"shape": [-1], "dtype": "int64"}, "non-negative"),
        ({"shape": "ab", "dtype": "int64"}, "sequence of ints"),
        ({"shape": [], "dtype": "int64", "default_value": 1.5}, "not a valid int64"),
        ({"shape": [], "dtype": "int64", "default_value": 2**63}, "not a valid int64"),
        ({"shape": [], "dtype": "string", "default_value": 1}, "not a valid string"),
    ],
)
def test_fixed_len_validation(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match=match):
        tfe.FixedLenFeature(**kwargs)


def test_specs_are_frozen_and_hashable() -> None:
    spec = tfe.FixedLenFeature([2], "int64", default_value=[1, 2])
    assert spec == tfe.FixedLenFeature((2,), np.int64, default_value=np.array([1, 2]))
    assert len({spec, tfe.FixedLenFeature([2], "int64", default_value=[1, 2])}) == 1
    with pytest.raises(FrozenInstanceError):
        spec.dtype = "float32"  # type: ignore[misc]


def test_ragged_and_partitions() -> None:
    spec = tfe.RaggedFeature(
        np.int64,
        value_key="v",
        partitions=[tfe.RaggedFeature.RowSplits("s"), tfe.RaggedFeature.UniformRowLength(2)],
        row_splits_dtype=np.int64,
    )
    assert spec.partitions == (
        tfe.RaggedFeature.RowSplits("s"),
        tfe.RaggedFeature.UniformRowLength(2),
    )
    assert spec.row_splits_dtype == "int64"
    with pytest.raises(tfe.InvalidArgumentError, match="row_splits_dtype"):
        tfe.RaggedFeature("int64", row_splits_dtype="int16")
    with pytest.raises(tfe.InvalidArgumentError, match="Argument dtype must be"):
        tfe.RaggedFeature("int32")
    with pytest.raises(tfe.InvalidArgumentError, match="unsupported partition"):
        tfe.RaggedFeature("int64", partitions=["rows"])  # type: ignore[list-item]
    with pytest.raises(tfe.InvalidArgumentError, match="non-negative"):
        tfe.RaggedFeature.UniformRowLength(-1)


def test_sparse_feature_keys_and_sizes() -> None:
    spec = tfe.SparseFeature(["i", "j"], "v", "float32", [3, 4])
    assert spec.index_key == ("i", "j")
    assert spec.size == (3, 4)
    with pytest.raises(tfe.InvalidArgumentError, match="same length"):
        tfe.SparseFeature(["i", "j"], "v", "float32", 3)


def test_sequence_feature_default_must_be_scalar() -> None:
    assert tfe.FixedLenSequenceFeature([2], "int64", True, default_value=-1).default_value == -1
    with pytest.raises(tfe.InvalidArgumentError, match="scalar"):
        tfe.FixedLenSequenceFeature([2], "int64", True, default_value=[1, 2])
