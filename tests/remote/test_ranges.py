"""The coalescing planner, the read-ahead stream and the batched fetcher reader."""

from __future__ import annotations

import math
import pathlib

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.data.source import FetcherRecords
from tfrecord_engine.storage.ranges import coalesce
from tfrecord_engine.storage.readahead import ReadAheadStream
from tfrecord_engine.testing.records import record_lists
from tfrecord_engine.testing.remote import (
    index_batches,
    max_gaps,
    max_requests,
    range_sets,
    read_sizes,
)

IntArray = npt.NDArray[np.int64]


@given(range_sets(), max_gaps(), max_requests())
def test_coalesce_covers_every_range_with_separated_requests(
    ranges: tuple[IntArray, IntArray], max_gap: int | None, max_request: int | None
) -> None:
    starts, ends = ranges
    plan = coalesce(starts, ends, max_gap, max_request)
    assert len(plan.request_of) == len(starts)
    for a, b, g in zip(starts.tolist(), ends.tolist(), plan.request_of.tolist(), strict=True):
        assert plan.starts[g] <= a
        assert b <= plan.ends[g]
    if len(starts) == 0:
        return
    # Requests are sorted and every request is needed: it begins and ends on a range edge.
    assert np.all(np.diff(plan.starts) >= 0)
    assert set(plan.starts.tolist()) <= set(starts.tolist())
    assert set(plan.ends.tolist()) <= set(ends.tolist())
    if max_gap is None:
        assert len(plan.starts) == len(starts)
        return
    if max_request is None:
        # Nothing left to merge: consecutive requests are more than max_gap apart.
        assert np.all(plan.starts[1:] > plan.ends[:-1] + max_gap)
        return
    # A request exceeds the cap only to hold one range larger than the cap ...
    sizes = ends - starts
    for g, (a, b) in enumerate(zip(plan.starts.tolist(), plan.ends.tolist(), strict=True)):
        if b - a > max_request:
            held = sizes[plan.request_of == g]
            assert held.max() > max_request or len(held) == 1
    # ... and two requests are apart only past the gap or when merging would break it.
    merged = np.maximum(plan.ends[1:], plan.ends[:-1]) - plan.starts[:-1]
    assert np.all((plan.starts[1:] > plan.ends[:-1] + max_gap) | (merged > max_request))


@given(st.binary(max_size=3000), st.integers(1, 700), read_sizes(), st.booleans())
def test_read_ahead_stream_returns_the_bytes_in_order(
    data: bytes, block: int, sizes: list[int], prefetch: bool
) -> None:
    calls: list[tuple[int, int]] = []

    def fetch(offset: int, size: int) -> bytes:
        calls.append((offset, size))
        return data[offset : offset + size]

    with ReadAheadStream(fetch, len(data), block, prefetch=prefetch) as s:
        got = [s.read(n) for n in sizes]
        got.append(s.read())
        assert s.read(10) == b""
    assert b"".join(got) == data
    assert all(len(g) <= n for g, n in zip(got, sizes, strict=False) if n >= 0)
    # Each block fetched exactly once, in order, block-sized but for the last.
    assert calls == [(o, min(block, len(data) - o)) for o in range(0, len(data), block)]
    assert len(calls) == math.ceil(len(data) / block)


def test_read_ahead_stream_raises_a_failed_fetch_at_its_block() -> None:
    data = bytes(range(100))

    def fetch(offset: int, size: int) -> bytes:
        if offset >= 40:
            raise OSError(f"network down at {offset}")
        return data[offset : offset + size]

    with ReadAheadStream(fetch, len(data), 20) as s:
        assert s.read(50) + s.read(50) == data[:40]  # both blocks before the failure
        with pytest.raises(OSError, match="network down at 40"):
            s.read(1)
    with pytest.raises(tfe.InvalidArgumentError):
        ReadAheadStream(fetch, 10, 0)


@given(records=record_lists(max_records=30, max_size=300), data=st.data())
def test_fetcher_records_batched_fetch_matches_single_fetches(
    tmp_path_factory: pytest.TempPathFactory, records: list[bytes], data: st.DataObject
) -> None:
    if not records:
        return
    path = tmp_path_factory.mktemp("f") / "a.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    blob = path.read_bytes()
    idx = tfe.Index.load(path)
    batch = np.array(data.draw(index_batches(len(records))), dtype=np.int64) % len(records)
    gap = data.draw(max_gaps())

    def ranges(starts: list[int], ends: list[int]) -> list[bytes]:
        return [blob[a:b] for a, b in zip(starts, ends, strict=True)]

    single = FetcherRecords(idx, lambda o, s: blob[o : o + s], max_gap=gap)
    batched = FetcherRecords(idx, lambda o, s: b"", max_gap=gap, fetch_ranges=ranges)
    expected = [records[i] for i in batch.tolist()]
    assert single.read(batch) == batched.read(batch) == expected
    assert single.requests == batched.requests
    assert single.bytes_fetched == batched.bytes_fetched
    if gap is None:
        assert batched.requests == len(batch)


def test_fetcher_records_reports_damage_in_a_coalesced_request(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "a.tfrecord"
    records = [bytes([i]) * 30 for i in range(50)]
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    blob = bytearray(path.read_bytes())
    blob[7 * 46 + 20] ^= 0x10  # inside record 7's payload
    src = FetcherRecords(
        tfe.Index.load(path),
        lambda o, s: b"",
        max_gap=1000,
        fetch_ranges=lambda a, b: [bytes(blob[x:y]) for x, y in zip(a, b, strict=True)],
    )
    with pytest.raises(tfe.CorruptedRecordError) as err:
        src.read(np.array([3, 9, 7, 1]))
    assert (err.value.record_index, err.value.offset) == (7, 7 * 46)
    assert src.requests == 1
