"""Parsed batches as Arrow blocks (``tfrecord_engine.hosts.arrow``), every kind of spec."""

from __future__ import annotations

from typing import Any

import numpy as np

import tfrecord_engine as tfe

from ..optional import require

require("ray")
from tfrecord_engine.hosts.arrow import records_to_table  # noqa: E402 - after the skip

RECORDS = [
    tfe.encode_example(
        {
            "idx": np.array([0, 3][: i % 3], np.int64),
            "val": np.array([1.5, -2.0][: i % 3], np.float32),
            "pair": [b"a%d" % i, b"b"],
            "raw": np.arange(4, dtype=np.uint8).tobytes(),
            "flat": np.arange(i % 3 * 2, dtype=np.int64),
            "len": np.array([2] * (i % 3), np.int64),
        }
    )
    for i in range(5)
]


def test_every_kind_of_feature_becomes_a_column() -> None:
    spec: dict[str, Any] = {
        "sparse": tfe.SparseFeature("idx", "val", "float32", 4),
        "pair": tfe.FixedLenFeature([2], "string"),
        "raw": tfe.RawFeature([2, 2], "uint8"),
        "rag": tfe.RaggedFeature(
            "int64", value_key="flat", partitions=[tfe.RaggedFeature.RowLengths("len")]
        ),
    }
    table = records_to_table(RECORDS, spec)
    want = tfe.parse_example(RECORDS, spec)
    rows = table.to_pylist()
    assert [r["pair"] for r in rows] == want["pair"].tolist()
    assert [r["rag"] for r in rows] == want["rag"].to_list()
    sparse = want["sparse"]
    for i, r in enumerate(rows):
        mine = sparse.indices[:, 0] == i
        assert r["sparse"]["values"] == sparse.values[mine].tolist()
        assert r["sparse"]["indices"] == sparse.indices[mine][:, 1:].tolist()
    raw = table.column("raw").combine_chunks().to_numpy_ndarray()
    np.testing.assert_array_equal(raw, want["raw"])


def test_raw_records_are_one_bytes_column() -> None:
    table = records_to_table([b"", b"x"], None)
    assert table.column_names == ["record"]
    assert table.column("record").to_pylist() == [b"", b"x"]


def test_no_feature_asked_for_still_counts_the_rows() -> None:
    table = records_to_table(RECORDS, {})
    assert (table.num_rows, table.column_names) == (5, [])
