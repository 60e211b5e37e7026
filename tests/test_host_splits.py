"""Planning distributed reads (``tfrecord_engine.hosts.splits``): pieces cover every
record of every file exactly once, cut only where reading can start."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.hosts.splits import blocks_of, plan_pieces

FRAME = 16


def index(lengths: list[int], restarts: list[int] | None) -> tfe.Index:
    """An index of records of these lengths; GZIP with restart points before the
    records numbered in ``restarts`` (``None``: uncompressed)."""
    offsets = np.concatenate([[0], np.cumsum(np.asarray(lengths, np.int64) + FRAME)[:-1]])
    offsets = offsets[: len(lengths)]
    points = None
    if restarts is not None:
        points = np.array([[7 * r, offsets[r]] for r in sorted(set(restarts))], np.uint64)
    return tfe.Index(
        "x.tfrecord",
        offsets,
        lengths,
        data_size=0,
        fingerprint=0,
        compression=None if restarts is None else "GZIP",
        restarts=points,
    )


files = st.lists(st.integers(0, 300), max_size=60).flatmap(
    lambda lengths: st.tuples(
        st.just(lengths),
        st.one_of(
            st.none(),
            st.lists(st.integers(0, max(0, len(lengths) - 1)), max_size=8)
            if lengths
            else st.just([]),
        ),
    )
)


@given(st.lists(files, min_size=1, max_size=5), st.integers(1, 80))
def test_pieces_cover_every_record_once(
    layout: list[tuple[list[int], list[int] | None]], n: int
) -> None:
    indexes = [index(lengths, restarts) for lengths, restarts in layout]
    pieces = plan_pieces(indexes, n)
    for f, (idx, (_, restarts)) in enumerate(zip(indexes, layout, strict=True)):
        mine = [p for p in pieces if p.file == f]
        assert [i for p in mine for i in range(p.start, p.stop)] == list(range(len(idx)))
        if restarts is not None:  # compressed: a piece starts where inflating can
            assert {p.start for p in mine} <= {0, *restarts}
    assert len(pieces) <= max(n, sum(1 for idx in indexes if len(idx))) + len(indexes)


def test_one_big_file_is_cut_into_about_equal_pieces() -> None:
    idx = index([100] * 10_000, None)
    pieces = plan_pieces([idx], 8)
    assert [p.stop - p.start for p in pieces] == [1250] * 8


@given(st.lists(st.integers(0, 50), min_size=1, max_size=200), st.integers(1, 30))
def test_blocks_cover_a_piece_in_order(lengths: list[int], per_block: int) -> None:
    idx = index(lengths, None)
    (piece,) = plan_pieces([idx], 1)
    blocks = blocks_of(idx, piece, per_block)
    assert [i for a, b in blocks for i in range(a, b)] == list(range(len(lengths)))
    assert all(0 < b - a <= per_block for a, b in blocks)
