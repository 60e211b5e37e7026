"""``RecordDataset(..., on_damage=...)``: damage at index time and at read time.

Index-time damage (the file was already damaged when indexed): the dataset holds the
records ``read_records`` returns under the policy. Read-time damage (the file changed
after it was indexed): the CRC check of a batch fails, and ``"raise"`` raises at that
batch, ``"stop"`` ends the epoch before it, ``"skip"`` drops the record from it.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.records import framing
from tfrecord_engine.records.recovery import DamagePolicy
from tfrecord_engine.testing.damage import record_spans
from tfrecord_engine.testing.epochs import epoch_args
from tfrecord_engine.testing.index_damage import damaged_files
from tfrecord_engine.testing.resume import assert_resume_exactly_once

N = 40
RECORDS = [b"rec-%02d" % i for i in range(N)]
SPANS = record_spans(RECORDS)


def _file(tmp: Path, records: list[bytes] = RECORDS, name: str = "a.tfrecord") -> str:
    path = tmp / name
    path.write_bytes(framing.frame_many(records))
    return str(path)


def _rot(path: str, which: int) -> None:
    """Flips a data bit of record ``which`` in place (the file keeps its size)."""
    with open(path, "r+b") as f:
        f.seek(SPANS[which][0] + framing.HEADER_SIZE)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x10]))


def _opened(
    path: str | list[str], policy: str, reports: list[tfe.DamageReport], **kw: Any
) -> tfe.RecordDataset:
    ds = tfe.RecordDataset(path, on_damage=policy, on_damage_report=reports.append, **kw)  # type: ignore[arg-type]
    len(ds)  # indexes the intact file now; damage done afterwards is read-time damage
    return ds


def _flat(batches: Iterator[Any]) -> list[bytes]:
    return [r for b in batches for r in b]


# ---- index-time damage ------------------------------------------------------------------


@given(case=damaged_files(max_records=10), policy=st.sampled_from(["stop", "skip"]))
def test_dataset_holds_what_the_reader_returns(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[list[bytes], bytes], policy: DamagePolicy
) -> None:
    path = tmp_path_factory.mktemp("d") / "d.tfrecord"
    path.write_bytes(case[1])
    want_reports: list[tfe.DamageReport] = []
    want = [
        bytes(r)
        for r in tfe.read_records(path, on_damage=policy, on_damage_report=want_reports.append)
    ]
    reports: list[tfe.DamageReport] = []
    ds = tfe.RecordDataset(str(path), on_damage=policy, on_damage_report=reports.append)
    assert len(ds) == len(want)
    assert list(ds) == want
    assert _flat(ds.batches(3, shuffle=True, seed=1)) == [want[i] for i in _perm(ds, 3)]
    assert reports == want_reports
    # A second dataset loads the saved sidecar and reports the same damage again.
    again: list[tfe.DamageReport] = []
    assert tfe.RecordDataset(str(path), on_damage=policy, on_damage_report=again.append)[:] == want
    assert again == want_reports


@pytest.mark.parametrize("policy", ["stop", "skip"])
def test_a_first_record_that_looks_like_zlib_gets_the_readers_hint(
    tmp_path: Path, policy: DamagePolicy
) -> None:
    # 08 d7 is a zlib header whose stream does not inflate: under compression="auto" the
    # reader reads the file as uncompressed and its report says how to read it as ZLIB;
    # the dataset, which detects the kind before indexing, used to say "or 'auto'".
    path = tmp_path / "d.tfrecord"
    path.write_bytes(bytes.fromhex("08d7000000000000ff86240f0000000000000000") + b")\x03\x98\x07")
    want: list[tfe.DamageReport] = []
    list(tfe.read_records(path, on_damage=policy, on_damage_report=want.append))
    got: list[tfe.DamageReport] = []
    len(tfe.RecordDataset(str(path), on_damage=policy, on_damage_report=got.append))
    assert want
    assert got == want
    assert want[0].reason.endswith("pass compression='ZLIB' to read it as one")


def _perm(ds: tfe.RecordDataset, batch_size: int) -> list[int]:
    from tfrecord_engine.data.sampler import IndexBatchIterator

    it = IndexBatchIterator(len(ds), batch_size, shuffle=True, seed=1)
    return [int(i) for b in it for i in b.indices]


def test_raise_fails_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "t.tfrecord"
    path.write_bytes(framing.frame_many(RECORDS)[:-3])
    ds = tfe.RecordDataset(str(path))
    with pytest.raises(tfe.TruncatedRecordError, match="record 39"):
        len(ds)
    reports: list[tfe.DamageReport] = []
    ds = tfe.RecordDataset(str(path), on_damage="stop", on_damage_report=reports.append)
    assert len(ds) == N - 1
    assert [(r.record_index, r.offset) for r in reports] == [(N - 1, SPANS[-1][0])]


# ---- read-time damage -------------------------------------------------------------------


@pytest.mark.parametrize("readahead", [0, 2])
def test_read_time_damage_raises_at_its_batch(tmp_path: Path, readahead: int) -> None:
    path = _file(tmp_path)
    ds = _opened(path, "raise", [])
    _rot(path, 13)
    it = ds.batches(4, readahead=readahead)
    assert _flat(next(it) for _ in range(3)) == RECORDS[:12]
    with pytest.raises(
        tfe.CorruptedRecordError, match=f"record 13 at offset {SPANS[13][0]}"
    ) as exc:
        next(it)
    assert exc.value.path == path
    # Not delivered: a resume from the state retries that batch.
    with pytest.raises(tfe.CorruptedRecordError, match="record 13"):
        next(ds.batches(4, state=it.get_state(), readahead=readahead))
    with pytest.raises(tfe.CorruptedRecordError):
        ds[13]


@pytest.mark.parametrize("readahead", [0, 2])
def test_close_while_the_damage_error_propagates(tmp_path: Path, readahead: int) -> None:
    # ``close`` in a ``finally`` (or ``with``) runs while the error's traceback still
    # holds views of the mapped file: the CRC error must come through, not a BufferError
    # from closing the mapping.
    path = _file(tmp_path)
    ds = _opened(path, "raise", [])
    _rot(path, 13)

    it = ds.batches(4, readahead=readahead)

    def read_then_close() -> None:
        try:
            _flat(it)
        finally:
            it.close()
            ds.close()

    with pytest.raises(tfe.CorruptedRecordError, match="record 13"):
        read_then_close()
    # Closed, the dataset reopens on next use.
    assert ds[12] == RECORDS[12]


@pytest.mark.parametrize("readahead", [0, 2])
def test_read_time_damage_skip_drops_the_record(tmp_path: Path, readahead: int) -> None:
    path = _file(tmp_path)
    reports: list[tfe.DamageReport] = []
    ds = _opened(path, "skip", reports)
    _rot(path, 13)
    _rot(path, 30)
    batches = list(ds.batches(4, readahead=readahead))
    assert [len(b) for b in batches] == [4, 4, 4, 3, 4, 4, 4, 3, 4, 4]
    assert _flat(iter(batches)) == [r for i, r in enumerate(RECORDS) if i not in (13, 30)]
    assert [(r.path, r.record_index, r.offset, r.bytes_skipped) for r in reports] == [
        (path, 13, SPANS[13][0], SPANS[13][1] - SPANS[13][0]),
        (path, 30, SPANS[30][0], SPANS[30][1] - SPANS[30][0]),
    ]
    assert "data" in reports[0].reason or "crc" in reports[0].reason.lower()
    # Random access cannot drop a requested record: it raises under every policy.
    with pytest.raises(tfe.CorruptedRecordError):
        ds[[12, 13]]
    assert list(ds) == [r for i, r in enumerate(RECORDS) if i not in (13, 30)]


def test_read_time_damage_skip_with_warnings(tmp_path: Path) -> None:
    path = _file(tmp_path)
    ds = tfe.RecordDataset(path, on_damage="skip")
    len(ds)
    _rot(path, 0)
    with pytest.warns(tfe.DamageWarning, match="record 0 at offset 0"):
        assert _flat(ds.batches(8)) == RECORDS[1:]


def test_whole_batch_damaged_is_dropped(tmp_path: Path) -> None:
    path = _file(tmp_path)
    reports: list[tfe.DamageReport] = []
    ds = _opened(path, "skip", reports)
    for i in (4, 5):
        _rot(path, i)
    it = ds.batches(2)
    assert [next(it) for _ in range(3)] == [RECORDS[0:2], RECORDS[2:4], RECORDS[6:8]]
    assert [r.record_index for r in reports] == [4, 5]
    rest = _flat(ds.batches(2, state=it.get_state()))
    assert rest == RECORDS[8:]


@pytest.mark.parametrize("readahead", [0, 2])
def test_read_time_damage_stop_ends_the_epoch(tmp_path: Path, readahead: int) -> None:
    path = _file(tmp_path)
    reports: list[tfe.DamageReport] = []
    ds = _opened(path, "stop", reports)
    original = Path(path).read_bytes()
    _rot(path, 13)
    _rot(path, 30)
    it = ds.batches(4, readahead=readahead)
    head = list(it)
    assert _flat(iter(head)) == RECORDS[:12]
    assert [r.record_index for r in reports] == [13]
    with pytest.raises(StopIteration):
        next(it)
    state = it.get_state()
    # Repaired (same bytes as when indexed): a resume from the state delivers the rest.
    Path(path).write_bytes(original)
    rest = list(ds.batches(4, state=state, readahead=readahead))
    assert head + rest == list(ds.batches(4))
    assert len(reports) == 1
    # __iter__ stops the same way.
    _rot(path, 13)
    assert list(ds) == RECORDS[:13]


@given(args=epoch_args(max_length=N, max_shards=3), bad=st.sets(st.integers(0, N - 1), max_size=4))
def test_skip_epochs_over_shards_lose_only_damaged_records(
    tmp_path_factory: pytest.TempPathFactory, args: dict[str, Any], bad: set[int]
) -> None:
    path = _file(tmp_path_factory.mktemp("e"))
    reports: list[tfe.DamageReport] = []
    ds = _opened(path, "skip", reports)
    for i in bad:
        _rot(path, i)
    seen: list[bytes] = []
    count = args["shard_count"]
    kw = {k: v for k, v in args.items() if k not in ("length", "shard_index")}
    for shard in range(count):
        for b in ds.batches(**kw, shard_index=shard):
            if args["pad_remainder"]:
                assert len(b.records) == args["batch_size"]
                seen += [r for r, m in zip(b.records, b.mask, strict=True) if m]
            else:
                assert len(b) <= args["batch_size"]
                seen += b
    if args["drop_remainder"]:
        assert set(seen) <= {r for i, r in enumerate(RECORDS) if i not in bad}
        assert len(seen) == len(set(seen))
    else:
        assert sorted(seen) == [r for i, r in enumerate(RECORDS) if i not in bad]
        assert sorted(r.record_index for r in reports) == sorted(bad)


@given(
    shuffle=st.booleans(),
    bad=st.sets(st.integers(0, N - 1), min_size=1, max_size=3),
    pad=st.booleans(),
)
def test_skip_resume_equals_the_uninterrupted_epoch(
    tmp_path_factory: pytest.TempPathFactory, shuffle: bool, bad: set[int], pad: bool
) -> None:
    path = _file(tmp_path_factory.mktemp("r"))
    reports: list[tfe.DamageReport] = []
    ds = _opened(path, "skip", reports)
    for i in bad:
        _rot(path, i)

    def ids(b: Any) -> list[bytes]:
        if pad:
            return [r for r, m in zip(b.records, b.mask, strict=True) if m]
        return list(b)

    full = assert_resume_exactly_once(
        lambda state: ds.batches(
            6, shuffle, seed=3, epoch=0, state=state, pad_remainder=pad, readahead=0
        ),
        ids,
        boundaries=[0, 1, 3, 5],
    )
    assert sorted(cast("bytes", r) for b in full for r in b) == [
        r for i, r in enumerate(RECORDS) if i not in bad
    ]


def test_parsed_batches_drop_damaged_records(tmp_path: Path) -> None:
    examples = [tfe.encode_example({"x": np.array([i], dtype=np.int64)}) for i in range(N)]
    path = tmp_path / "p.tfrecord"
    path.write_bytes(framing.frame_many(examples))
    spans = record_spans(examples)
    features = {"x": tfe.FixedLenFeature([1], "int64")}
    reports: list[tfe.DamageReport] = []
    ds = tfe.RecordDataset(str(path), features, on_damage="skip", on_damage_report=reports.append)
    len(ds)
    with open(path, "r+b") as f:
        f.seek(spans[7][1] - 5)  # the last data byte of record 7
        f.write(b"\x7f")
    got = list(ds.batches(5))
    assert [int(v) for b in got for v in b["x"][:, 0]] == [i for i in range(N) if i != 7]
    padded = list(ds.batches(5, pad_remainder=True))
    assert padded[1]["mask"].tolist() == [True, True, False, True, True]
    assert padded[1]["x"].shape == (5, 1)
    assert [r.record_index for r in reports] == [7, 7]


def test_many_files_and_pickling(tmp_path: Path) -> None:
    paths = [_file(tmp_path, RECORDS[i * 10 : i * 10 + 10], f"s{i}.tfrecord") for i in range(4)]
    reports: list[tfe.DamageReport] = []
    ds = tfe.RecordDataset(paths, on_damage="skip", on_damage_report=reports.append)
    clone = pickle.loads(pickle.dumps(ds))
    assert clone.on_damage == "skip"
    len(ds)
    with open(paths[2], "r+b") as f:
        f.seek(SPANS[3][0] + framing.HEADER_SIZE)
        f.write(b"?")
    assert _flat(ds.batches(7, shuffle=True)) != []
    assert sorted(_flat(ds.batches(7, shuffle=True))) == sorted(RECORDS[:23] + RECORDS[24:])
    assert {(r.path, r.record_index) for r in reports} == {(paths[2], 3)}


def test_parse_error_next_to_damage_still_reports_the_damage(tmp_path: Path) -> None:
    examples = [tfe.encode_example({"x": np.array([i], dtype=np.int64)}) for i in range(10)]
    examples[2] = tfe.encode_example({"y": np.array([0], dtype=np.int64)})  # "x" missing
    path = tmp_path / "q.tfrecord"
    path.write_bytes(framing.frame_many(examples))
    spans = record_spans(examples)
    reports: list[tfe.DamageReport] = []
    ds = tfe.RecordDataset(
        str(path),
        {"x": tfe.FixedLenFeature([1], "int64")},
        on_damage="skip",
        on_damage_report=reports.append,
    )
    len(ds)
    with open(path, "r+b") as f:
        f.seek(spans[5][0] + framing.HEADER_SIZE)
        f.write(b"\0")
    with pytest.raises(tfe.ExampleParseError, match="x"):
        next(ds.batches(10))
    assert [r.record_index for r in reports] == [5]


@pytest.mark.parametrize("policy", ["skip", "stop"])
@pytest.mark.parametrize("shards", [1, 2, 3])
def test_damage_in_padding_slots_is_not_reported_again(
    tmp_path: Path, policy: str, shards: int
) -> None:
    # Padding slots repeat a real record; when that record is damaged, the padding is
    # not a second (third...) damaged record: one report, where it is read as itself.
    path = _file(tmp_path)
    reports: list[tfe.DamageReport] = []
    ds = _opened(path, policy, reports)
    _rot(path, 0)
    seen: list[bytes] = []
    for shard in range(shards):
        for b in ds.batches(7, shard_index=shard, shard_count=shards, pad_remainder=True):
            seen += [r for r, m in zip(b.records, b.mask, strict=True) if m]
    want = RECORDS[1:] if policy == "skip" else [r for r in seen if r != RECORDS[0]]
    assert sorted(seen) == sorted(want)
    assert [r.record_index for r in reports] == [0]
