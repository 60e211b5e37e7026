"""Hypothesis strategies for damaged files: records plus one or more corruptions."""

from __future__ import annotations

from hypothesis import strategies as st

from .. import framing
from .damage import damages

__all__ = ["damaged_files"]


@st.composite
def damaged_files(
    draw: st.DrawFn, max_records: int = 12, max_size: int = 40, max_damages: int = 3
) -> tuple[list[bytes], bytes]:
    """``(records, blob)``: ``records`` framed, then 0 to ``max_damages`` corruptions.

    Damage may leave the bytes unchanged (an overwrite with the same bytes); readers of
    the blob are compared with ``read_records``, never with ``records`` alone.
    """
    records = draw(st.lists(st.binary(max_size=max_size), min_size=1, max_size=max_records))
    blob = framing.frame_many(records)
    for _ in range(draw(st.integers(0, max_damages))):
        if not blob:
            break
        blob = draw(damages(len(blob))).apply(blob)
    return records, blob
