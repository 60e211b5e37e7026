"""``formats.walk``: the one walk every output format's conversion makes over a batch
(numbers converted, strings and plain values kept)."""

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
