"""``SparseValue.to_dense`` and ``RaggedValue.flat_values`` on parse outputs."""

from __future__ import annotations

import numpy as np

import tfrecord_engine as tfe


def test_sparse_to_dense_defaults() -> None:
    records = [tfe.encode_example({"s": [b"a", b"b"]}), b""]
    out = tfe.parse_example(records, {"s": tfe.VarLenFeature("string")})["s"]
    assert out.to_dense().tolist() == [[b"a", b"b"], [b"", b""]]
    assert out.to_dense(b"?").tolist() == [[b"a", b"b"], [b"?", b"?"]]
    empty = tfe.parse_example([b"", b""], {"i": tfe.VarLenFeature("int64")})["i"]
    assert empty.to_dense().shape == (2, 0)
    ints = tfe.parse_example(
        [tfe.encode_example({"i": [3]}), b""], {"i": tfe.VarLenFeature("int64")}
    )["i"]
    assert ints.to_dense(-1).tolist() == [[3], [-1]]


def test_ragged_flat_values_of_nested_partitions() -> None:
    record = tfe.encode_example({"v": [1, 2, 3, 4], "p": [1, 3], "q": [2]})
    spec = tfe.RaggedFeature(
        "int64",
        value_key="v",
        partitions=[
            tfe.example.specs.RowLengths("q"),
            tfe.example.specs.RowLengths("p"),
        ],
    )
    out = tfe.parse_example([record], {"r": spec})["r"]
    assert isinstance(out, tfe.RaggedValue)
    assert out.flat_values.tolist() == [1, 2, 3, 4]
    assert out.to_list() == [[[[1], [2, 3, 4]]]]
    assert isinstance(np.asarray(out.flat_values), np.ndarray)
