"""DALI / ``tfrecord`` text indexes: ``"<offset> <framed size>\\n"`` per record.

The text form of :class:`~tfrecord_engine.Index` (its ``to_text``/``from_text``): an
imported one is checked against the data file record by record, and stamped with the
identity of the bytes it was checked against.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..errors import IndexFormatError, InvalidArgumentError, StaleIndexError
from ..records import framing
from ..records.compression import Compression
from .identity import Identity, identify, opened
from .scan import check_headers

__all__ = ["parse_text", "text_of"]

U64Array = npt.NDArray[np.uint64]


def text_of(data_path: str, compression: Compression, offsets: U64Array, lengths: U64Array) -> str:
    """The text index of these records of ``data_path``.

    Raises:
        InvalidArgumentError: a compressed file (those tools index uncompressed files
            only) or a file with no records (DALI rejects an empty index).
    """
    if compression is not Compression.NONE:
        raise InvalidArgumentError(
            f"{data_path}: text (DALI) indexes describe uncompressed files only"
        )
    if len(offsets) == 0:
        raise InvalidArgumentError(f"{data_path}: no records; DALI rejects an empty index file")
    framed = lengths + np.uint64(framing.HEADER_SIZE + framing.FOOTER_SIZE)
    table = np.stack([offsets, framed], axis=1)
    return "\n".join(f"{o} {s}" for o, s in table.tolist()) + "\n"


def parse_text(text_path: str, data_path: str) -> tuple[U64Array, U64Array, Identity]:
    """``(offsets, lengths, identity)`` of the text index at ``text_path``, checked
    against ``data_path`` (see ``Index.from_text``).

    Raises:
        IndexFormatError: the text is not ``offset size`` pairs.
        StaleIndexError: the entries do not describe the data file.
    """
    with open(text_path, encoding="ascii") as f:
        tokens = f.read().split()
    try:
        table = np.array(tokens, dtype=np.int64).reshape(-1, 2)
    except ValueError as exc:
        raise IndexFormatError(f"{text_path}: not an 'offset size' text index ({exc})") from exc
    offsets, framed = table[:, 0], table[:, 1]
    overhead = framing.HEADER_SIZE + framing.FOOTER_SIZE
    with opened(data_path) as data:
        size = data.size
        ends = offsets + framed
        starts_ok = len(offsets) == 0 or (
            offsets[0] == 0 and bool(np.all(offsets[1:] == ends[:-1]))
        )
        last = int(ends[-1]) if len(ends) else 0
        if not starts_ok or bool(np.any(framed < overhead)) or last != size:
            raise StaleIndexError(
                f"{text_path}: does not describe {data_path}: entries must "
                f"be back-to-back framed records covering all {size} bytes"
            )
        starts = offsets.astype(np.uint64)
        lengths = (framed - overhead).astype(np.uint64)
        check_headers(data.buf, starts, lengths, data_path)
        return starts, lengths, identify(data, True, starts, lengths)
