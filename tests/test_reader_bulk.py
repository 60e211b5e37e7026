"""The bulk (block-checked) mmap reader yields exactly what the one-by-one reader does."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.errors import DataLossError
from tfrecord_engine.records import reader


def _outcome(path: str) -> tuple[list[bytes], Any]:
    out: list[bytes] = []
    try:
        for r in tfe.read_records(path):
            out.append(r)
    except DataLossError as exc:
        return out, (type(exc), exc.record_index, exc.offset, str(exc))
    return out, None


_damage = st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1, exclude_max=True), st.integers(0, 7)),
    st.tuples(st.just("cut"), st.floats(0, 1, exclude_max=True), st.just(0)),
    st.tuples(st.just("length"), st.integers(0, 10**6), st.sampled_from([2**31, 2**40, 2**64 - 1])),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    records=st.lists(st.binary(max_size=600), min_size=1, max_size=60),
    damage=st.none() | _damage,
    block=st.integers(1, 9),
)
def test_bulk_reader_equals_one_by_one(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    records: list[bytes],
    damage: tuple[str, Any, int] | None,
    block: int,
) -> None:
    path = os.fspath(tmp_path / "f.tfrecord")
    with tfe.TFRecordWriter(path, atomic=False) as w:
        w.write_many(records)
    data = bytearray(Path(path).read_bytes())
    if damage is not None:
        kind, where, arg = damage
        if kind == "flip":
            data[int(where * len(data))] ^= 1 << arg
        elif kind == "cut":
            data = data[: int(where * len(data))]
        else:
            starts = [0]
            for r in records[:-1]:
                starts.append(starts[-1] + len(r) + 16)
            at = starts[where % len(starts)]
            data[at : at + 8] = arg.to_bytes(8, "little")
    Path(path).write_bytes(bytes(data))
    monkeypatch.setattr(reader, "_BULK_MIN_BYTES", 2**62)
    want = _outcome(path)
    monkeypatch.setattr(reader, "_BULK_MIN_BYTES", 1)
    monkeypatch.setattr(reader, "_BLOCK_RECORDS", block)  # many small blocks
    assert _outcome(path) == want


def test_large_file_damage_is_found_at_its_record(tmp_path: Path) -> None:
    path = os.fspath(tmp_path / "big.tfrecord")
    records = [bytes([i % 251]) * 1000 for i in range(600)]  # ~600 KB: the bulk path
    with tfe.TFRecordWriter(path, atomic=False) as w:
        w.write_many(records)
    assert os.path.getsize(path) >= reader._BULK_MIN_BYTES
    assert list(tfe.read_records(path)) == records
    data = bytearray(Path(path).read_bytes())
    data[450 * 1016 + 12 + 500] ^= 0x10  # inside record 450's data
    Path(path).write_bytes(bytes(data))
    got, err = _outcome(path)
    assert got == records[:450]
    assert err is not None
    assert err[0] is tfe.CorruptedRecordError
    assert (err[1], err[2]) == (450, 450 * 1016)


def test_large_records_are_read_one_by_one_with_the_same_result(tmp_path: Path) -> None:
    path = os.fspath(tmp_path / "large.tfrecord")
    records = [bytes([i]) * 40_000 for i in range(12)]  # ~480 KB, records above 16 KiB
    with tfe.TFRecordWriter(path, atomic=False) as w:
        w.write_many(records)
    assert list(tfe.read_records(path)) == records
    data = bytearray(Path(path).read_bytes())
    data[7 * 40_016 + 12 + 9] ^= 0x01
    Path(path).write_bytes(bytes(data))
    got, err = _outcome(path)
    assert got == records[:7]
    assert err is not None
    assert (err[0], err[1], err[2]) == (tfe.CorruptedRecordError, 7, 7 * 40_016)
