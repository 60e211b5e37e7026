"""Reading ahead of a file read in order (``storage/sequential.py``): the same bytes
whatever the calls, the same requests for equal spans, several requests in flight."""

from __future__ import annotations

import threading
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from tfrecord_engine.storage.sequential import SequentialRanges
from tfrecord_engine.testing.read_patterns import read_patterns


class _File:
    """A file's fetcher that records what it was asked for, and how many at once."""

    def __init__(self, size: int, delay: float = 0.0) -> None:
        self.data = bytes(i % 251 for i in range(size))
        self.asked: list[tuple[int, int]] = []
        self.delay = delay
        self.inflight = 0
        self.most = 0
        self._lock = threading.Lock()

    def __call__(self, starts: list[int], ends: list[int]) -> list[bytes]:
        with self._lock:
            self.asked += list(zip(starts, ends, strict=True))
            self.inflight += 1
            self.most = max(self.most, self.inflight)
        if self.delay:
            time.sleep(self.delay)
        with self._lock:
            self.inflight -= 1
        return [self.data[a:b] for a, b in zip(starts, ends, strict=True)]


@settings(max_examples=60, deadline=None)
@given(data=st.data(), size=st.integers(1, 3000), window=st.integers(1, 2000))
def test_every_call_gets_the_bytes_it_asked_for(
    data: st.DataObject, size: int, window: int
) -> None:
    f = _File(size)
    ahead = SequentialRanges(f, size, window=window)
    for starts, ends in data.draw(read_patterns(size)):
        assert ahead(starts, ends) == [f.data[a:b] for a, b in zip(starts, ends, strict=True)]
    assert all(0 <= a < b <= size for a, b in f.asked)  # nothing past the end


@given(span=st.integers(1, 500), spans=st.integers(1, 30))
def test_equal_spans_in_order_cost_one_request_each(span: int, spans: int) -> None:
    size = span * spans
    f = _File(size)
    ahead = SequentialRanges(f, size, window=4 * span)
    for a in range(0, size, span):
        assert ahead([a], [a + span]) == [f.data[a : a + span]]
    assert sorted(f.asked) == [(a, a + span) for a in range(0, size, span)]


def test_a_file_read_in_order_has_several_requests_in_flight() -> None:
    span, spans = 1000, 12
    f = _File(span * spans, delay=0.02)
    ahead = SequentialRanges(f, span * spans, window=6 * span)
    for a in range(0, span * spans, span):
        ahead([a], [a + span])
    assert f.most >= 3  # before: one call, one request, at a time


def test_scattered_calls_read_nothing_ahead() -> None:
    f = _File(10_000)
    ahead = SequentialRanges(f, 10_000, window=5_000)
    for a in range(0, 9_000, 700):
        ahead([a, a + 300], [a + 100, a + 400])
    assert len(f.asked) == 2 * len(range(0, 9_000, 700))
