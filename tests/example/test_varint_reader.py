"""The one pure-Python varint reader (``kernels/varint.py``) and the decoders that use it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfrecord_engine.errors import MalformedExampleError
from tfrecord_engine.example import pbwire, tensors, wire
from tfrecord_engine.index import scalars
from tfrecord_engine.kernels.varint import varint_reader
from tfrecord_engine.testing.varints import varint_bytes


class _Failed(Exception):
    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(reason, offset)
        self.reason = reason
        self.offset = offset


_read = varint_reader(_Failed)


def _reference(data: bytes) -> int:
    """The value of one well-formed varint, from its 7-bit groups (bits past 64 dropped)."""
    return sum((b & 0x7F) << (7 * i) for i, b in enumerate(data)) & ((1 << 64) - 1)


def test_every_pure_python_decoder_reads_varints_with_the_one_reader() -> None:
    one = _read.__code__
    readers: list[Callable[..., tuple[int, int]]] = [
        wire._varint,
        pbwire._varint,
        scalars._varint,
        tensors._read_varint,
    ]
    assert [r.__code__ is one for r in readers] == [True] * len(readers)


@given(
    head=st.binary(max_size=4),
    varint=varint_bytes(),
    tail=st.binary(max_size=4),
)
def test_a_well_formed_varint_is_read_whole_and_nothing_past_it(
    head: bytes, varint: bytes, tail: bytes
) -> None:
    buf = head + varint + tail
    start, end = len(head), len(head) + len(varint)
    assert _read(buf, start, len(buf)) == (_reference(varint), end)
    assert _read(buf, start, end) == (_reference(varint), end)  # ``end`` right after it


@given(varint=varint_bytes().filter(lambda v: len(v) > 1), head=st.binary(max_size=3))
def test_a_varint_cut_by_end_is_truncated_at_its_start(varint: bytes, head: bytes) -> None:
    buf = head + varint
    for cut in range(len(head), len(buf)):
        with pytest.raises(_Failed) as err:
            _read(buf, len(head), cut)  # the bytes past ``cut`` would complete it
        assert (err.value.reason, err.value.offset) == ("truncated varint", len(head))


@pytest.mark.parametrize("extra", [0, 1, 5])
def test_ten_continuation_bytes_are_too_long(extra: int) -> None:
    buf = b"\x07" * 3 + b"\x80" * (10 + extra) + b"\x01"
    with pytest.raises(_Failed) as err:
        _read(buf, 3, len(buf))
    assert (err.value.reason, err.value.offset) == ("varint longer than 10 bytes", 3)


def test_the_tenth_byte_gives_only_its_lowest_bit() -> None:
    assert _read(b"\xff" * 9 + b"\x7f", 0, 10) == ((1 << 64) - 1, 10)
    assert _read(b"\x80" * 9 + b"\x02", 0, 10) == (0, 10)


def test_each_decoder_words_its_own_errors() -> None:
    truncated = b"\x00\x00\x80\x80"
    with pytest.raises(MalformedExampleError) as got:
        wire._varint(truncated, 2, 4)
    assert str(got.value) == f"{wire.PARSE_FAILED}truncated varint at byte 2"
    assert got.value.offset == 2
    with pytest.raises(MalformedExampleError) as got:
        pbwire._varint(truncated, 2, 4)
    assert str(got.value) == "Could not parse message: truncated varint at byte 2"
    with pytest.raises(scalars._Malformed):
        scalars._varint(truncated, 2, 4)
    with pytest.raises(tensors._Malformed):
        tensors._read_varint(truncated, 2, 4)
    # The index columns' reader turns it into a status, never an exception.
    assert scalars.scalars_of(b"\x0a\x80", {b"x": 0}) == {0: (scalars.MALFORMED, 0, None)}


def test_docstring_examples() -> None:
    import doctest

    from tfrecord_engine.kernels import varint

    result = doctest.testmod(varint, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
