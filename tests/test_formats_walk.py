"""``formats.walk``: the one walk every output format's conversion makes over a batch
(numbers converted, strings and plain values kept); ``bytes`` values laid out in a
worker's block and read back (``contents``, ``bytes_at``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tfrecord_engine.data.formats import walk


def _marked(arr: np.ndarray[Any, Any]) -> tuple[str, list[Any]]:
    return ("converted", arr.tolist())


def test_nested_string_lists_come_back_equal_as_new_lists() -> None:
    # A ragged string feature's batch: a list of bytes a record (empty ones too).
    tags = [[b"a", b"bc"], [], [b"d"]]
    got = walk({"tags": tags, "plain": [1, 2.5, "s", None, True]}, _marked)
    assert got == {"tags": tags, "plain": [1, 2.5, "s", None, True]}
    assert got["tags"] is not tags
    assert all(g is not t for g, t in zip(got["tags"], tags, strict=True))


def test_arrays_inside_lists_are_still_converted() -> None:
    # Lists that hold arrays (at any depth, beside plain values) are walked item by item.
    value = [[b"x", np.arange(2)], [np.float32(1.5)], np.array([b"s"], dtype=object)]
    got = walk(value, _marked)
    assert got == [[b"x", ("converted", [0, 1])], [("converted", 1.5)], [b"s"]]


def test_contents_cross_a_block_and_come_back_as_the_same_values() -> None:
    # bytes values laid out back to back in a block and read back, small (joined first)
    # and large (each copied where it goes) alike, NUL bytes and empty values included.
    from tfrecord_engine.data import formats

    for values in (
        [b"a", b"", b"b\x00c", b"\x00"],
        [bytes([i % 251]) * 9000 + b"\x00" for i in range(12)] + [b""],
    ):
        placeholder = formats.contents(values)
        assert placeholder.nbytes == sum(map(len, values))
        assert (placeholder.nbytes > formats.JOIN_MAX_BYTES) == (len(values) == 13)
        flat = np.full(placeholder.nbytes + 10, 7, np.uint8)
        placeholder.write_into(flat, 5)
        assert flat[:5].tolist() == [7] * 5
        assert flat[-5:].tolist() == [7] * 5
        assert flat[5:-5].tobytes() == b"".join(values)
        stops = np.cumsum([len(v) for v in values]).tolist()
        assert formats.bytes_at(flat[5:-5], stops) == values
