"""The bridge's blocks (dense features of one dtype and shape crossing as one array) and
blobs (short strings crossing as the engine's rows, cut by ``tf.strings.substr``):
the same batches as TensorFlow's own pipeline, and the crossing they are for."""

from __future__ import annotations

import tempfile
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tests.tf.bridge_helpers import assert_same_batch, native, write_file
from tests.tf.convert import outcome, tf_specs
from tfrecord_bridge import layout as bridge_layout
from tfrecord_bridge import to_tf_dataset
from tfrecord_bridge.dataset import uses_string_rows
from tfrecord_bridge.layout import Layout, _as_block
from tfrecord_bridge.specs import element_spec
from tfrecord_engine.data import epochs
from tfrecord_engine.example.string_rows import is_rows
from tfrecord_engine.testing.examples import ParseCase
from tfrecord_engine.testing.wide import wide_cases

# Each example builds two tf.data pipelines (~0.1 s): fewer examples than the profile.
TF_EXAMPLES = 20


def _same_as_native(tf: ModuleType, path: str, features: Any, batch: int, chunk: Any) -> None:
    ds = tfe.RecordDataset(path, features=features)
    ours = to_tf_dataset(ds, batch, chunk_batches=chunk)
    theirs = native(tf, path, features, batch)
    assert ours.element_spec == theirs.element_spec
    ours_batches, their_batches = list(ours), list(theirs)
    assert len(ours_batches) == len(their_batches) == int(ours.cardinality())
    for a, b in zip(ours_batches, their_batches, strict=True):
        assert_same_batch(tf, a, b)


@settings(max_examples=TF_EXAMPLES)
@given(
    wide_cases(max_batch=12),
    st.integers(1, 5),
    st.sampled_from([None, 1, 2]),
    st.sampled_from([2, 4]),
)
def test_wide_specs_give_the_native_batches(
    tf: ModuleType, case: ParseCase, batch: int, chunk: int | None, block_min: int
) -> None:
    # Defaults, missing and empty features, unpacked lists and duplicate keys: records
    # the compiled plan hands to the exact path, whose strings are bytes objects.
    ok, _ = outcome(
        lambda: tf.io.parse_example(tf.constant(case.records), tf_specs(tf, case.features)),
        tf_errors=(tf.errors.InvalidArgumentError,),
    )
    if not ok:
        return  # (errors: test_bridge's damage and parse-error tests)
    with tempfile.TemporaryDirectory() as d, pytest.MonkeyPatch.context() as mp:
        mp.setattr(bridge_layout, "BLOCK_MIN", block_min)
        path = write_file(d, case.records)
        _same_as_native(tf, path, case.features, batch, chunk)


def _wide_records(n: int) -> tuple[dict[str, tfe.FixedLenFeature], list[bytes]]:
    """Records of 6 int64, 5 float32[2] and 5 string columns, in a varied order."""
    rng = np.random.default_rng(3)
    features: dict[str, tfe.FixedLenFeature] = {}
    for j in range(16):
        kind = ("int64", "float32", "string")[j % 3]
        features[f"k{j:02d}"] = tfe.FixedLenFeature([2] if kind == "float32" else [], kind)
    records = []
    for _ in range(n):
        row: dict[str, Any] = {}
        for key, spec in features.items():
            if spec.dtype == "int64":
                row[key] = [int(rng.integers(-(2**40), 2**40))]
            elif spec.dtype == "float32":
                row[key] = rng.standard_normal(2).astype(np.float32)
            else:
                row[key] = [bytes(rng.integers(0, 256, int(rng.integers(0, 30)), np.uint8))]
        keys = list(row)
        rng.shuffle(keys)
        records.append(tfe.encode_example({k: row[k] for k in keys}))
    return features, records


@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_many_columns_cross_as_blocks_and_one_blob(
    tf: ModuleType, tmp_path: Any, chunk: int | None
) -> None:
    features, records = _wide_records(700)
    path = write_file(str(tmp_path), records)
    ds = tfe.RecordDataset(path, features=features)
    assert uses_string_rows(ds)
    layout = Layout(tf, element_spec(tf, features, None), string_rows=True)
    # One array for the six int64 columns, one for the five float32[2], and the strings'
    # buffer with their positions and sizes: 5 arrays a call, not 16.
    assert [s.kind for s in layout.slots] == ["block", "block", "block"]
    assert len(layout.dtypes) == 5
    _same_as_native(tf, path, features, 64, chunk)
    # The caller's dataset keeps its bytes objects (the bridge decodes from a copy).
    assert ds.decoder.string_rows is False
    assert next(ds.batches(8))["k02"].dtype == object


def test_the_engine_copy_hands_over_rows_taken_as_one_block(tf: ModuleType, tmp_path: Any) -> None:
    features, records = _wide_records(300)
    path = write_file(str(tmp_path), records)
    ds = tfe.RecordDataset(path, features=features)
    copy = ds._copy()
    copy.decoder.string_rows = True
    batch = next(copy.batches(100))
    strings = [batch[k] for k, s in features.items() if s.dtype == "string"]
    assert all(is_rows(v) for v in strings)
    block = _as_block(strings)
    assert block is not None, "the string columns are one table"
    assert np.array_equal(block["size"], np.stack([v["size"] for v in strings], axis=1))
    ints = [batch[k] for k, s in features.items() if s.dtype == "int64"]
    block = _as_block(ints)
    assert block is not None
    assert np.array_equal(block, np.stack(ints, axis=1))


def test_as_block_refuses_arrays_not_at_equal_steps() -> None:
    base = np.arange(60, dtype=np.int64).reshape(6, 10)
    cols = [base[j] for j in (0, 1, 3)]  # a gap
    assert _as_block(cols) is None
    assert _as_block([base[0], np.arange(10, dtype=np.int64)]) is None  # other buffer
    got = _as_block([base[j] for j in (1, 3, 5)])  # equal steps of two rows
    assert got is not None
    assert np.array_equal(got, np.stack([base[1], base[3], base[5]], axis=1))
    assert not got.flags.writeable


def test_large_strings_keep_their_objects(tf: ModuleType, tmp_path: Any) -> None:
    features = {
        "image": tfe.FixedLenFeature([], "string"),
        "label": tfe.FixedLenFeature([], "int64"),
    }
    records = [
        tfe.encode_example({"image": [bytes([i % 251]) * 3000], "label": [i]}) for i in range(50)
    ]
    path = write_file(str(tmp_path), records)
    ds = tfe.RecordDataset(path, features=features)
    assert not uses_string_rows(ds)  # a 3 KB value: copied once as it is
    _same_as_native(tf, path, features, 16, None)


def test_string_rows_only_for_dense_specs_decoded_here(tmp_path: Any) -> None:
    features, records = _wide_records(50)
    path = write_file(str(tmp_path), records)
    ds = tfe.RecordDataset(path, features=features)
    assert uses_string_rows(ds)
    assert not uses_string_rows(ds, workers=1)  # the workers' results are pickled
    assert not uses_string_rows(tfe.sample_from_datasets([ds, ds], seed=1))
    varlen = tfe.RecordDataset(path, features={**features, "v": tfe.VarLenFeature("int64")})
    assert not uses_string_rows(varlen)
    numbers = {k: s for k, s in features.items() if s.dtype != "string"}
    assert not uses_string_rows(tfe.RecordDataset(path, features=numbers))
    transformed = tfe.RecordDataset(path, features=features, transform=lambda r: r)
    assert not uses_string_rows(transformed)


@pytest.mark.parametrize(
    "kw", [{"pad_remainder": True}, {"drop_remainder": True}, {"shuffle": True, "seed": 3}]
)
def test_blocks_and_blobs_give_the_engine_batches(
    tf: ModuleType, tmp_path: Any, kw: dict[str, Any]
) -> None:
    features, records = _wide_records(230)
    path = write_file(str(tmp_path), records)
    ds = tfe.RecordDataset(path, features=features)
    ours = list(to_tf_dataset(ds, 64, chunk_batches=2, **kw))
    engine = list(ds.batches(64, **kw))
    assert len(ours) == len(engine)
    for a, b in zip(ours, engine, strict=True):
        assert sorted(a) == sorted(b)
        for key, value in b.items():
            assert a[key].numpy().tolist() == value.tolist(), key


def test_a_chunk_of_rows_and_objects_gives_the_native_batches(
    tf: ModuleType, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Engine chunks of 64 records, bridge chunks of 3 batches of 32: a bridge chunk
    # takes the end of one engine chunk and the start of the next. The first engine
    # chunk holds a defaulted string (its strings come as bytes objects), the others
    # come as rows: one buffer is made of both.
    monkeypatch.setattr(epochs, "DEFAULT_CHUNK_RECORDS", 64)
    features = {
        "a": tfe.FixedLenFeature([], "string", default_value=b"dflt\x00"),
        "b": tfe.FixedLenFeature([], "string"),
        "n": tfe.FixedLenFeature([], "int64"),
    }
    records = [
        tfe.encode_example(
            {"b": [b"b%d\x00" % i], "n": [i]}
            if i == 5
            else {"a": [b"a" * (i % 7)], "b": [b""], "n": [i]}
        )
        for i in range(200)
    ]
    path = write_file(str(tmp_path), records)
    seen: list[bool] = []
    real = bridge_layout._values_buffer

    def spy(values: Any) -> Any:
        seen.append(is_rows(values))
        return real(values)

    monkeypatch.setattr(bridge_layout, "_values_buffer", spy)
    _same_as_native(tf, path, features, 32, 3)
    assert True in seen
    assert False in seen


def test_batches_of_other_sizes_in_one_chunk_are_refused(tf: ModuleType) -> None:
    features = {f"k{j}": tfe.FixedLenFeature([], "int64") for j in range(4)}
    layout = Layout(tf, element_spec(tf, features, None))
    assert [s.kind for s in layout.slots] == ["block"]
    full = {k: np.arange(4, dtype=np.int64) for k in features}
    short = {k: np.arange(3, dtype=np.int64) for k in features}  # (a record skipped)
    with pytest.raises(tfe.InvalidArgumentError, match="chunk_batches=1"):
        layout.pack([full, short])


def test_strings_as_objects_cross_one_feature_at_a_time(tf: ModuleType) -> None:
    # Unstacking a block of objects would copy each value once more (images).
    features = {f"s{j}": tfe.FixedLenFeature([], "string") for j in range(5)}
    layout = Layout(tf, element_spec(tf, features, None))
    assert [s.kind for s in layout.slots] == ["dense"] * 5
    rows = Layout(tf, element_spec(tf, features, None), string_rows=True)
    assert [(s.kind, s.blob) for s in rows.slots] == [("block", True)]
