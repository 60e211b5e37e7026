"""Hypothesis strategies for damaged files: records plus one or more corruptions."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import strategies as st

from ..records import framing
from ..records.compression import Compression, make_compressor
from .damage import damages

__all__ = ["damaged_files", "write_framed"]


def write_framed(path: str | os.PathLike[str], blob: bytes, compression: str = "") -> str:
    """Writes the framed stream ``blob`` to ``path`` (compressed first if asked); its name.

    The stream may be damaged: the file holds exactly these bytes, as a GZIP/ZLIB
    writer would have compressed them.
    """
    if compression:
        co = make_compressor(Compression(compression))
        blob = co.compress(blob) + co.flush()
    Path(path).write_bytes(blob)
    return os.fspath(path)


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
