"""Multi-member GZIP files as other tools write them: bgzip (BGZF), ``cat``, appends.

Each function takes the framed bytes of a TFRecord file (see
:func:`~tfrecord_engine.records.framing.frame`) and returns compressed bytes that
TensorFlow and ``gzip -d`` read as that stream.
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Iterable, Sequence
from typing import Final

from ..records import framing

__all__ = ["BGZF_BLOCK", "BGZF_EOF", "bgzf", "framed", "members"]

#: Uncompressed bytes per BGZF block, as ``bgzip`` cuts them.
BGZF_BLOCK: Final = 0xFF00
#: The empty block ``bgzip`` ends every file with (its end-of-file marker).
BGZF_EOF: Final = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")
_BGZF_HEAD = struct.Struct("<4BI2BH2BHH")


def framed(records: Iterable[bytes]) -> bytes:
    """The uncompressed TFRecord stream of ``records``."""
    return b"".join(framing.frame(r) for r in records)


def _bgzf_block(data: bytes, level: int) -> bytes:
    comp = zlib.compressobj(level, zlib.DEFLATED, -15)
    body = comp.compress(data) + comp.flush()
    size = _BGZF_HEAD.size + len(body) + 8
    # ID1 ID2 CM FLG(FEXTRA) MTIME XFL OS XLEN, then the "BC" subfield: SLEN, BSIZE - 1.
    head = _BGZF_HEAD.pack(31, 139, 8, 4, 0, 0, 255, 6, 66, 67, 2, size - 1)
    return head + body + struct.pack("<II", zlib.crc32(data), len(data))


def bgzf(data: bytes, block: int = BGZF_BLOCK, *, level: int = 6, eof: bool = True) -> bytes:
    """``data`` as ``bgzip`` writes it: one GZIP member (with the ``BC`` extra field)
    per ``block`` bytes, then the empty end-of-file member unless ``eof`` is false."""
    if not 0 < block <= BGZF_BLOCK:
        raise ValueError(f"a BGZF block holds 1 to {BGZF_BLOCK} bytes, got {block}")
    out = [_bgzf_block(data[i : i + block], level) for i in range(0, len(data), block)]
    return b"".join(out) + (BGZF_EOF if eof else b"")


def members(data: bytes, cuts: Sequence[int], *, level: int = 6) -> bytes:
    """``data`` as separate GZIP members (Python's ``gzip`` header), cut at ``cuts``
    (byte offsets, ascending): what ``cat a.gz b.gz`` of the pieces gives."""
    bounds = [0, *cuts, len(data)]
    out = []
    for a, b in itertools.pairwise(bounds):
        comp = zlib.compressobj(level, zlib.DEFLATED, 31)
        out.append(comp.compress(data[a:b]) + comp.flush())
    return b"".join(out)
