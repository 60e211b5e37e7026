"""Views of a dataset (issue 33 item 3, issue 34's habits): ``select``, ``filter``,
``where``, ``take``, ``skip``, ``train_test_split`` and ``ds["column"]``.

A view is a dataset of its own: every operation gives what the same operation gives on
the records it selects, in its own numbering.
"""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.data.source import LocalFileRecords
from tfrecord_engine.testing.columns import selections
from tfrecord_engine.testing.resume import assert_resume_exactly_once

FEATURES = {"i": tfe.FixedLenFeature([], "int64"), "label": tfe.FixedLenFeature([], "int64")}


def make_files(folder: Path, sizes: tuple[int, ...] = (13, 9, 11), **kw: Any) -> str:
    """Shards of Examples ``{"i": [global number], "label": [i % 4], "name": ...}``."""
    start = 0
    for f, n in enumerate(sizes):
        with tfe.TFRecordWriter(folder / f"s{f}.tfrecord", index=True, **kw) as w:
            w.write_many(
                tfe.encode_example({"i": [i], "label": [i % 4], "name": [b"n%d" % i]})
                for i in range(start, start + n)
            )
        start += n
    return str(folder / "s*.tfrecord")


def ids(batch: Any) -> list[int]:
    if isinstance(batch, Mapping):
        mask = batch.get("mask")
        values = batch["i"] if mask is None else batch["i"][mask]
        return [int(v) for v in values]
    return [int(tfe.decode_example(r)["i"][0]) for r in batch]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_files(tmp_path_factory.mktemp("views"), index_columns=["label", "name"])


# ---- a view is the records it selects --------------------------------------------------


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_view_reads_the_records_it_selects(files: str, data: st.DataObject) -> None:
    raw = tfe.RecordDataset(files)
    parsed = tfe.RecordDataset(files, features=FEATURES)
    n = len(raw)
    key = data.draw(selections(n))
    chosen = np.arange(n)[key].tolist() if not isinstance(key, list) else [i % n for i in key]
    view = raw.select(key)
    assert len(view) == len(chosen)
    assert list(view) == [raw[i] for i in chosen]
    assert view[list(range(len(view)))] == [raw[i] for i in chosen]
    if chosen:
        j = data.draw(st.integers(-len(chosen), len(chosen) - 1))
        assert view[j] == raw[chosen[j]]
        assert parsed.select(key)[j]["i"] == chosen[j]
    pview = parsed.select(key)
    assert [int(s["i"]) for s in pview.__getitems__(list(range(len(pview))))] == chosen
    assert pview[: len(pview)]["i"].tolist() == chosen
    again = view.select(data.draw(selections(len(view))))  # a view of a view
    assert list(again) == [raw[int(tfe.decode_example(r)["i"][0])] for r in again]
    assert view["label"].tolist() == [i % 4 for i in chosen]  # (from the index)
    assert view["name"].tolist() == [b"n%d" % i for i in chosen]


def test_out_of_range_is_in_the_views_numbers(files: str) -> None:
    view = tfe.RecordDataset(files).take(5)
    with pytest.raises(tfe.OutOfRangeError, match="record index 5 out of range for a dataset of 5"):
        _ = view[5]
    with pytest.raises(tfe.OutOfRangeError, match="of 5 records"):
        view.__getitems__([0, -6])
    with pytest.raises(tfe.OutOfRangeError):
        view.select([5])


def test_every_epoch_operation_works_on_a_view(files: str) -> None:
    ds = tfe.RecordDataset(files, features=FEATURES)
    view = ds.where(label=[1, 2])
    wanted = [i for i in range(33) if i % 4 in (1, 2)]
    assert view["i"].tolist() == wanted
    # A shuffled epoch: each record of the view once; shards split it exactly.
    epoch = [i for b in view.batches(4, shuffle=True, seed=3, epoch=0) for i in ids(b)]
    assert sorted(epoch) == wanted
    assert epoch != wanted
    shards = [
        [i for b in view.batches(3, True, 3, 0, s, 3, pad_remainder=True) for i in ids(b)]
        for s in range(3)
    ]
    assert sorted(i for shard in shards for i in shard) == wanted
    # Resuming mid-epoch: each remaining record exactly once.
    assert_resume_exactly_once(
        lambda state: view.batches(4, shuffle=True, seed=5, epoch=1, state=state), ids
    )
    # Decode workers: the same batches.
    with_workers = [ids(b) for b in view.batches(4, shuffle=True, seed=3, epoch=0, workers=2)]
    assert [i for b in with_workers for i in b] == epoch
    # A view counts its own epochs.
    first = [ids(b) for b in view.batches(4, shuffle=True)]
    second = [ids(b) for b in view.batches(4, shuffle=True)]
    assert first != second
    assert ids(next(ds.batches(4, shuffle=True))) == ids(next(ds.batches(4, True, 0, 0)))
    view.close()
    ds.close()


def test_a_view_pickles_and_has_its_own_identity(files: str) -> None:
    ds = tfe.RecordDataset(files, features=FEATURES)
    view = ds.select([7, 3, 3, 30])
    copy = pickle.loads(pickle.dumps(view))
    assert copy["i"].tolist() == [7, 3, 3, 30]
    assert repr(copy) == repr(view) != repr(ds)
    assert repr(ds.select([7, 3])) != repr(view)


def test_take_and_skip_follow_tf_data(files: str) -> None:
    ds = tfe.RecordDataset(files, features=FEATURES)
    assert ds.take(3)["i"].tolist() == [0, 1, 2]
    assert len(ds.take(-1)) == len(ds.take(100)) == 33
    assert ds.skip(30)["i"].tolist() == [30, 31, 32]
    assert len(ds.skip(-1)) == len(ds.skip(40)) == 0
    assert ds.skip(10).take(2)["i"].tolist() == [10, 11]
    for bad in (-2, 1.5, True):
        with pytest.raises(tfe.InvalidArgumentError, match="count >= 0, or -1"):
            ds.take(bad)  # type: ignore[arg-type]


def test_filter_and_where_from_the_index_or_from_the_records(
    files: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unindexed = tfe.RecordDataset(make_files(tmp_path), features=FEATURES)
    ds = tfe.RecordDataset(files, features=FEATURES)
    odd = [i for i in range(33) if i % 4 == 3 and i > 10]
    for source in (ds, unindexed):
        got = source.filter(lambda c: (c["label"] == 3) & (c["i"] > 10), ["label", "i"])
        assert got["i"].tolist() == odd
        assert source.where(name=["n5", b"n7"], label=3)["i"].tolist() == [7]
        assert source.where(label=0).skip(1).where(label=0)["i"].tolist() == list(range(4, 33, 4))
    with pytest.raises(tfe.InvalidArgumentError, match="boolean array of one entry per record"):
        ds.filter(lambda label: label[:3] == 1, "label")
    with pytest.raises(tfe.InvalidArgumentError, match="holds int64 values, got '3'"):
        ds.where(label="3")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a record was read")

    for name in ("read", "read_one", "read_few", "spans"):
        monkeypatch.setattr(LocalFileRecords, name, refuse)
    assert len(ds.filter(lambda label: label == 2, "label")) == 8  # (the index alone)


def test_where_never_matches_a_record_without_the_value(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    with tfe.TFRecordWriter(path, index=True, index_columns={"label": "int64"}) as w:
        w.write_many([tfe.encode_example({"label": [0]}), tfe.encode_example({"x": [0]})])
    ds = tfe.RecordDataset(path)
    assert len(ds.where(label=0)) == 1
    assert ds.filter(lambda v: v < 0, "label", missing=-1).select([0])[0] == ds[1]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    test_size=st.one_of(st.floats(0.01, 0.96), st.integers(1, 32)),  # (train keeps one)
    seed=st.integers(0, 2**32),
    stratify=st.booleans(),
)
def test_train_test_split_is_exact_and_disjoint(
    files: str, test_size: float, seed: int, stratify: bool
) -> None:
    ds = tfe.RecordDataset(files, features=FEATURES)
    train, test = ds.train_test_split(
        test_size, seed=seed, stratify_by_column="label" if stratify else None
    )
    expected = -int(-test_size * 33 // 1) if isinstance(test_size, float) else test_size
    assert len(test) == expected
    assert len(train) == 33 - expected
    a, b = train["i"].tolist(), test["i"].tolist()
    assert sorted(a + b) == list(range(33))
    assert a == sorted(a)
    assert b == sorted(b)
    again = ds.train_test_split(
        test_size, seed=seed, stratify_by_column="label" if stratify else None
    )
    assert again[1]["i"].tolist() == b
    if stratify:
        # Each class is split in proportion, within one record.
        share = Counter(test["label"].tolist())
        for c, total in Counter(ds["label"].tolist()).items():
            assert abs(share[c] - total * expected / 33) < 1


def test_train_test_split_sizes_and_errors(files: str) -> None:
    ds = tfe.RecordDataset(files)
    train, test = ds.train_test_split()  # test_size=0.25 by default, as Hugging Face
    assert (len(train), len(test)) == (24, 9)
    train, test = ds.train_test_split(test_size=3, train_size=0.5, shuffle=False)
    assert (list(train), list(test)) == (list(ds.take(16)), list(ds.skip(16).take(3)))
    for kw in ({"test_size": 0.0}, {"test_size": 34}, {"test_size": 20, "train_size": 20}):
        with pytest.raises(tfe.InvalidArgumentError):
            ds.train_test_split(**kw)


# ---- columns ---------------------------------------------------------------------------


def test_column_access_like_hugging_face(files: str, tmp_path: Path) -> None:
    indexed = tfe.RecordDataset(files)
    assert indexed["label"].tolist() == [i % 4 for i in range(33)]
    assert indexed.take(2)["name"].tolist() == [b"n0", b"n1"]
    backwards = indexed.select(np.arange(32, -1, -1))  # (as long as the dataset)
    assert backwards.index_column("label").tolist() == [i % 4 for i in range(32, -1, -1)]
    # Not in the index: one read, of the spec's kind (or as a scalar without a spec).
    plain = tfe.RecordDataset(make_files(tmp_path), features=FEATURES)
    assert plain.skip(31)["i"].tolist() == [31, 32]
    assert plain.take(2)["name"].tolist() == [b"n0", b"n1"]
    varlen = tfe.RecordDataset(files, features={"name": tfe.VarLenFeature("string")})
    assert [list(v) for v in varlen.take(2)["name"]] == [[b"n0"], [b"n1"]]
    with pytest.raises(tfe.ExampleParseError, match="'nope' is missing"):
        _ = plain["nope"]
    # A scalar spec's default fills a record without a value, as parsing does.
    with tfe.TFRecordWriter(tmp_path / "d.tfrecord", index=True, index_columns=["y"]) as w:
        w.write_many([tfe.encode_example({"y": [1]}), tfe.encode_example({"x": [1]})])
    spec = {"y": tfe.FixedLenFeature([], "int64", default_value=-7)}
    assert tfe.RecordDataset(tmp_path / "d.tfrecord", features=spec)["y"].tolist() == [1, -7]


def test_damage_in_a_view_is_reported_at_its_file_and_record(tmp_path: Path) -> None:
    pattern = make_files(tmp_path, (6,))
    reports: list[tfe.DamageReport] = []
    ds = tfe.RecordDataset(pattern, on_damage="skip", on_damage_report=reports.append)
    view = ds.select([5, 4, 1])
    idx = view.indexes[0]
    with open(tmp_path / "s0.tfrecord", "r+b") as f:  # (after the index was checked)
        f.seek(int(idx.offsets[4]) + 12)
        f.write(b"\xff")
    assert [i for b in view.batches(3, readahead=0) for i in ids(b)] == [5, 1]
    assert [(r.record_index, r.offset) for r in reports] == [(4, int(idx.offsets[4]))]


def test_a_parse_error_in_a_view_names_the_selected_record(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([tfe.encode_example({"i": [i]}) for i in range(10)])
        w.write(tfe.encode_example({"label": [1]}))
    view = tfe.RecordDataset(path, features={"i": FEATURES["i"]}).select([10, 0])
    offset = int(view.indexes[0].offsets[10])
    with pytest.raises(tfe.ExampleParseError) as err:
        list(view.batches(2))
    assert (err.value.record_index, err.value.record_offset) == (10, offset)
    assert err.value.dataset_index == 0
