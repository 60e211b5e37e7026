"""ReadAhead: order, bounded window, errors in the consumer, clean shutdown."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfrecord_engine import CorruptedRecordError, DataLossError, InvalidArgumentError
from tfrecord_engine.data.pipeline import ReadAhead


def _readahead_threads(before: frozenset[threading.Thread] = frozenset()) -> list[threading.Thread]:
    """Read-ahead threads alive now that were not in ``before``.

    Other tests' dropped iterators can linger until the garbage collector breaks the
    reference cycle holding them (an error's traceback), and then exit on their own:
    each test here checks only the threads started while it ran.
    """
    return [
        t for t in threading.enumerate() if t.name.startswith("tfe-readahead") and t not in before
    ]


@given(
    items=st.lists(st.integers(), max_size=60),
    workers=st.integers(0, 4),
    depth=st.integers(1, 8),
    delays=st.lists(st.floats(0, 0.001), min_size=1, max_size=5),
)
def test_output_order_is_input_order_whatever_the_timing(
    items: list[int], workers: int, depth: int, delays: list[float]
) -> None:
    before = frozenset(_readahead_threads())

    def fn(x: int) -> int:
        time.sleep(delays[x % len(delays)])
        return x * 3

    with ReadAhead(items, fn, workers=workers, depth=depth) as ra:
        assert list(ra) == [x * 3 for x in items]
    assert _readahead_threads(before) == []


def test_window_is_bounded() -> None:
    consumed = 0
    pulled = 0

    def source() -> Iterator[int]:
        nonlocal pulled
        for i in range(1000):
            pulled += 1
            yield i

    ra: ReadAhead[int, int] = ReadAhead(source(), lambda x: x, workers=2, depth=3)
    for _ in ra:
        consumed += 1
        # At most `depth` items beyond the consumed ones have been taken from the source.
        assert pulled - consumed <= 3
        assert ra.in_flight <= 3
    assert consumed == 1000


def test_start_submits_the_first_items_before_the_first_next() -> None:
    started: list[int] = []
    three = threading.Event()

    def work(x: int) -> int:
        started.append(x)
        if len(started) == 3:
            three.set()
        return x * 2

    with ReadAhead(range(10), work, workers=2, depth=3) as ra:
        time.sleep(0.01)
        assert started == []  # lazily: nothing runs until asked
        ra.start()
        assert three.wait(5)
        assert sorted(started) == [0, 1, 2]
        assert ra.in_flight == 3
        assert list(ra) == [x * 2 for x in range(10)]
    # Without worker threads there is nothing to start.
    inline: ReadAhead[int, int] = ReadAhead(range(3), work, workers=0)
    inline.start()
    assert list(inline) == [0, 2, 4]


def test_error_surfaces_at_its_position_and_shuts_down() -> None:
    before = frozenset(_readahead_threads())

    def fn(x: int) -> int:
        if x == 7:
            raise CorruptedRecordError("bad", path="f", record_index=7, offset=70)
        return x

    got: list[int] = []
    ra = ReadAhead(range(20), fn, workers=3, depth=5)

    def consume() -> None:
        got.extend(ra)

    with pytest.raises(DataLossError) as info:
        consume()
    assert got == list(range(7))
    assert info.value.record_index == 7
    assert list(ra) == []  # closed after the error
    assert _readahead_threads(before) == []


def test_early_close_cancels_and_joins() -> None:
    before = frozenset(_readahead_threads())
    started = []

    def slow(x: int) -> int:
        started.append(x)
        time.sleep(0.01)
        return x

    ra = ReadAhead(range(1000), slow, workers=2, depth=4)
    assert next(ra) == 0
    ra.close()
    ra.close()  # idempotent
    assert _readahead_threads(before) == []
    assert len(started) < 20
    with pytest.raises(StopIteration):
        next(ra)


def test_dropped_iterator_leaves_no_threads() -> None:
    before = frozenset(_readahead_threads())
    ra = ReadAhead(range(100), lambda x: x, workers=2, depth=4)
    next(ra)
    del ra
    deadline = time.monotonic() + 5
    while _readahead_threads(before) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _readahead_threads(before) == []


@pytest.mark.parametrize(("workers", "depth"), [(-1, 2), (2, 0)])
def test_bad_arguments(workers: int, depth: int) -> None:
    with pytest.raises(InvalidArgumentError):
        ReadAhead([], lambda x: x, workers=workers, depth=depth)
