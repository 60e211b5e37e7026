"""Padded batches against TensorFlow: ``pad_batch`` of a parsed batch equals
``tf.sparse.to_dense`` / ``RaggedTensor.to_tensor`` of TensorFlow's parse of the same
bytes, with the lengths and mask that follow from them."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tests.tf.convert import tf_specs
from tfrecord_engine.data.padding import pad_batch

FEATURES: dict[str, Any] = {
    "ids": tfe.VarLenFeature("int64"),
    "scores": tfe.VarLenFeature("float32"),
    "words": tfe.VarLenFeature("string"),
    "flat": tfe.RaggedFeature("int64", value_key="rids"),
    "nested": tfe.RaggedFeature(
        "float32", value_key="rscores", partitions=[tfe.RaggedFeature.RowLengths("lens")]
    ),
}


@st.composite
def _records(draw: st.DrawFn) -> list[bytes]:
    out = []
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(0, 7))
        lens = draw(st.lists(st.integers(0, n), max_size=4))
        # row lengths that add up to n: split n into the drawn pieces plus a remainder
        pieces: list[int] = []
        left = n
        for piece in lens:
            take = min(piece, left)
            pieces.append(take)
            left -= take
        pieces.append(left)
        out.append(
            tfe.encode_example(
                {
                    "ids": np.arange(n, dtype=np.int64) * 3 - 5,
                    "scores": np.linspace(-1, 1, n).astype(np.float32),
                    "words": np.array([b"w%d" % i for i in range(n % 4)], dtype=object),
                    "lens": np.array(pieces, np.int64),
                    "rids": np.arange(n, dtype=np.int64) * 2 + 1,
                    "rscores": np.linspace(0, 2, n).astype(np.float32),
                }
            )
        )
    return out


def _tf_dense(tf: ModuleType, value: Any, pad: Any) -> np.ndarray[Any, Any]:
    if isinstance(value, tf.SparseTensor):
        dense = tf.sparse.to_dense(value, default_value=pad).numpy()
    else:
        dense = value.to_tensor(default_value=pad).numpy()
    return np.asarray(dense, dtype=object) if dense.dtype == object else dense


@settings(max_examples=60, deadline=None)
@given(_records(), st.integers(-3, 3))
def test_padded_batch_equals_tensorflow_dense(
    tf: ModuleType, records: list[bytes], pad: int
) -> None:
    theirs = tf.io.parse_example(tf.constant(records), tf_specs(tf, FEATURES))
    ours = pad_batch(tfe.parse_example(records, FEATURES), True, {"ids": pad, "flat": pad})
    for name in FEATURES:
        fill: Any = b"" if name == "words" else pad if name in ("ids", "flat") else 0
        want = _tf_dense(tf, theirs[name], fill)
        got = ours[name]
        if want.size or got.values.size:
            np.testing.assert_array_equal(got.values, want, err_msg=name)
        assert got.values.shape == want.shape, name
        assert got.values.dtype == want.dtype or name == "words", name
        if isinstance(theirs[name], tf.SparseTensor):
            rows = theirs[name].indices.numpy()[:, 0]
            lengths = np.bincount(rows, minlength=len(records))
        else:
            lengths = theirs[name].row_lengths().numpy()
        np.testing.assert_array_equal(got.lengths, lengths, err_msg=name)
        # The mask is True exactly where a record has a value.
        value = theirs[name]
        flat = value.flat_values if isinstance(value, tf.RaggedTensor) else value.values
        assert int(got.mask.sum()) == int(np.asarray(flat).size), name


@settings(max_examples=30, deadline=None)
@given(_records(), st.integers(7, 12))
def test_fixed_sizes_equal_tensorflow_to_tensor_with_a_shape(
    tf: ModuleType, records: list[bytes], size: int
) -> None:
    theirs = tf.io.parse_example(tf.constant(records), tf_specs(tf, FEATURES))
    ours = pad_batch(tfe.parse_example(records, FEATURES), {"flat": size, "nested": (size, size)})
    want = theirs["flat"].to_tensor(shape=[len(records), size]).numpy()
    np.testing.assert_array_equal(ours["flat"].values, want)
    want = theirs["nested"].to_tensor(shape=[len(records), size, size]).numpy()
    np.testing.assert_array_equal(ours["nested"].values, want)


def test_string_pads_keep_their_trailing_nul_bytes(tf: ModuleType, tmp_path: Any) -> None:
    # numpy's np.full(shape, b"a\x00", object) goes through an S2 array, which drops
    # the NUL: a FixedLenSequenceFeature's string default padded short rows as b"a".
    records = [tfe.encode_example({"s": [b"p", b"q", b"r"]}), tfe.encode_example({"s": [b"z"]})]
    path = str(tmp_path / "s.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        for r in records:
            w.write(r)
    for default in (b"\x00", b"a\x00"):
        spec = {"s": tfe.FixedLenSequenceFeature([], "string", True, default)}
        theirs = tf.io.parse_example(records, tf_specs(tf, spec))["s"].numpy().tolist()
        assert theirs[1] == [b"z", default, default]
        assert tfe.parse_example(records * 50, spec)["s"].tolist() == theirs * 50
        ds = tfe.RecordDataset(path, features=spec)
        assert next(iter(ds.batches(2)))["s"].tolist() == theirs
    # A bytes pad_value of padded batches, and SparseValue.to_dense's default, as given.
    ds = tfe.RecordDataset(path, features={"s": tfe.VarLenFeature("string")})
    for pad in (b"x\x00", b"\x00"):
        batch = next(iter(ds.batches(2, padded=True, pad_value={"s": pad})))
        assert batch["s"].values.tolist() == [[b"p", b"q", b"r"], [b"z", pad, pad]]
        sparse = tfe.parse_example(records, {"s": tfe.VarLenFeature("string")})["s"]
        assert sparse.to_dense(pad).tolist() == [[b"p", b"q", b"r"], [b"z", pad, pad]]
