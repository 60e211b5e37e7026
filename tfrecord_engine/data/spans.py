"""Records as spans of one buffer, and the checks every read path makes of them.

:class:`Spans` ``(buf, starts, ends)`` is what a read hands to the decoder: record ``j``
is ``buf[starts[j]:ends[j]]``, its 4-byte masked data CRC right after it (every reader
copies the footers along), so checking a batch is one compiled CRC pass over the buffer
(:func:`check_spans`) and decoding it needs no ``bytes`` object per record. Paths that
do hold ``bytes`` (a record on its own, remote reads) check them with
:func:`verify_batch`. Both raise for the first bad record (:func:`bad_spans` and
:func:`bad_records` say which), naming its file, record index and offset; :func:`stale`
and :func:`short` are the errors of a file that no longer matches its index.
"""

from __future__ import annotations

import mmap
import struct
from typing import NamedTuple

import crc32c as _crc32c
import numpy as np
import numpy.typing as npt

from .. import kernels
from ..errors import StaleIndexError
from ..example.lockstep import gather_spans as numpy_gather
from ..index.sidecar import Index
from ..records import framing
from ..records.framing import crc_spans

__all__ = [
    "U8",
    "HeldSpans",
    "IntArray",
    "Spans",
    "bad_records",
    "bad_spans",
    "check_spans",
    "crc_spans",
    "short",
    "stale",
    "stored_crcs",
    "unpacked_spans",
    "verify_batch",
]

IntArray = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
_F = framing.FOOTER_SIZE
_FOOTER_AT = np.arange(_F, dtype=np.int64)


class HeldSpans(NamedTuple):
    """Records as spans of a file's copy in memory (``LocalFileRecords.held_spans``):
    ``array`` is ``data`` seen as ``uint8``; slices of ``data`` itself are ``bytes``
    (what the per-record decoder makes string values of), so a record is copied only
    into its values. The copy lives while either does."""

    data: mmap.mmap | bytes
    array: U8
    starts: IntArray
    ends: IntArray


class Spans(NamedTuple):
    """Records as half-open spans ``[starts[j], ends[j])`` of ``buf`` (``uint8``), each
    followed by its stored data CRC (``buf[ends[j]:ends[j] + 4]``). The buffer is read
    for the call and is the caller's to keep."""

    buf: U8
    starts: IntArray
    ends: IntArray

    @classmethod
    def empty(cls) -> Spans:
        """No records."""
        return cls(np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64))

    def records(self) -> list[bytes]:
        """Each record as ``bytes`` (for the exact, record-by-record paths)."""
        return unpacked_spans(self.buf, self.starts, self.ends)

    @classmethod
    def joined(cls, count: int, parts: list[tuple[IntArray, Spans]]) -> Spans:
        """The records of several reads as spans of one new buffer, in request order.

        ``parts``: ``(where, spans)`` pairs, ``spans`` holding the records at positions
        ``where`` of a request of ``count`` records (each position in exactly one
        part). Only each record and its footer are copied (a part's buffer may be a
        view of a much larger copy of its files), one compiled gather a part; parts
        that are all views of one buffer (a region the epoch read its files into) stay
        so, nothing copied.
        """
        first = parts[0][1].buf if parts else None
        if first is not None and all(spans.buf is first for _, spans in parts[1:]):
            starts = np.empty(count, np.int64)
            ends = np.empty(count, np.int64)
            for where, spans in parts:
                starts[where] = spans.starts
                ends[where] = spans.ends
            return cls(first, starts, ends)
        sizes = [spans.ends + _F - spans.starts for _, spans in parts]
        total = sum(int(size.sum()) for size in sizes)
        out = np.empty(total, np.uint8)
        starts = np.empty(count, np.int64)
        ends = np.empty(count, np.int64)
        at = 0
        for (where, spans), size in zip(parts, sizes, strict=True):
            stop = at + int(size.sum())
            framed = spans.ends + _F
            if kernels.gather_spans(spans.buf, spans.starts, framed, out[at:stop]) is None:
                # (the kernels not loaded: the numpy gather the decoders fall back on)
                out[at:stop] = numpy_gather(spans.buf, spans.starts, framed)[0]
            placed = at + np.cumsum(size) - size
            starts[where] = placed
            ends[where] = placed + (spans.ends - spans.starts)
            at = stop
        return cls(out, starts, ends)

    @classmethod
    def back_to_back(cls, buf: U8, sizes: IntArray) -> Spans:
        """Records each followed by its footer, one after the other in ``buf``;
        ``sizes``: each record's bytes with its footer."""
        ends = np.cumsum(sizes) - _F
        return cls(buf, ends + _F - sizes, ends)


#: "000" to "999" as ASCII rows: numbers become decimal text three digits per lookup.
_DIGITS3 = np.frombuffer(b"".join(b"%03d" % i for i in range(1000)), np.uint8).reshape(1000, 3)


def _decimal(values: IntArray) -> npt.NDArray[np.uint8]:
    """Each of ``values`` (>= 0) as zero-padded ASCII digits, one row per value."""
    groups = (len(str(int(values.max()))) + 2) // 3
    text = np.empty((len(values), 3 * groups), np.uint8)
    rest = values
    for g in range(groups - 1, -1, -1):
        text[:, 3 * g : 3 * g + 3] = _DIGITS3[rest % 1000]
        rest = rest // 1000
    return text


def unpacked_spans(buf: U8, starts: IntArray, ends: IntArray) -> list[bytes]:
    """``buf[starts[j]:ends[j]]`` as ``bytes`` for every j.

    Spans in increasing order, none overlapping the one before (records read with
    their footers, and what lies between them): one ``struct`` unpack
    (``{gap}x{size}s`` per span) makes every object in C, without slicing ``buf`` in
    Python or copying it to ``bytes`` first. Other spans are sliced one by one.
    """
    n = len(starts)
    if n == 0:
        return []
    sizes = ends - starts
    gaps = np.empty(n, np.int64)
    gaps[0] = starts[0]
    gaps[1:] = starts[1:] - ends[:-1]
    if n < 4 or int(gaps.min()) < 0 or int(sizes.min()) < 0:
        mv = buf.data
        return [mv[a:b].tobytes() for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
    text = np.concatenate(
        [
            _decimal(gaps),
            np.full((n, 1), ord("x"), np.uint8),
            _decimal(sizes),
            np.full((n, 1), ord("s"), np.uint8),
        ],
        axis=1,
    )
    unpacker = struct.Struct("<" + text.tobytes().decode("ascii"))
    return list(unpacker.unpack_from(buf))  # type: ignore[arg-type]  # numpy arrays are buffers


def stored_crcs(buf: U8, ends: IntArray) -> npt.NDArray[np.uint32]:
    """The masked data CRCs stored in ``buf`` after the records ending at ``ends``."""
    stored: npt.NDArray[np.uint32] = buf[ends[:, None] + _FOOTER_AT].view("<u4").reshape(-1)
    return stored


def bad_spans(spans: Spans) -> npt.NDArray[np.intp]:
    """The positions of the records of ``spans`` whose data do not match their CRC."""
    buf, starts, ends = spans
    return np.flatnonzero(crc_spans(buf, starts, ends) != stored_crcs(buf, ends))


def bad_records(records: list[bytes], stored: npt.NDArray[np.uint32]) -> npt.NDArray[np.intp]:
    """The positions of the ``records`` whose data do not match their ``stored`` CRC."""
    crcs = np.fromiter(map(_crc32c.crc32c, records), dtype=np.uint32, count=len(records))
    return np.flatnonzero(framing.mask_crc_array(crcs) != stored)


def check_spans(
    spans: Spans,
    *,
    path: str | list[str],
    local: IntArray,
    offsets: npt.NDArray[np.uint64],
) -> None:
    """Raises :class:`CorruptedRecordError` for the first record of ``spans`` whose CRC
    mismatches: record ``j`` is record ``local[j]`` of file ``path`` (or ``path[j]``) at
    byte ``offsets[j]``."""
    bad = bad_spans(spans)
    if len(bad):
        j = int(bad[0])
        buf, starts, ends = spans
        framing.check_data(
            buf[int(starts[j]) : int(ends[j])].tobytes(),
            int(stored_crcs(buf, ends[j : j + 1])[0]),
            path=path if isinstance(path, str) else path[j],
            record_index=int(local[j]),
            offset=int(offsets[j]),
        )


def verify_batch(
    records: list[bytes],
    stored: npt.NDArray[np.uint32],
    *,
    path: str,
    local: IntArray,
    offsets: npt.NDArray[np.uint64],
) -> None:
    """Raises :class:`CorruptedRecordError` for the first record whose CRC mismatches."""
    bad = bad_records(records, stored)
    if len(bad):
        j = int(bad[0])
        framing.check_data(
            records[j],
            int(stored[j]),
            path=path,
            record_index=int(local[j]),
            offset=int(offsets[j]),
        )


_WHY = " (changed while in use? cut or rewritten by another job)"


def stale(index: Index, local: IntArray | None, detail: str, why: str = _WHY) -> StaleIndexError:
    """The error for a file that no longer matches its index, at the record asked for."""
    first = int(local[0]) if local is not None and len(local) else 0
    offset = int(index.offsets[first]) if first < len(index) else index.data_size
    return StaleIndexError(f"{index.data_path}: record {first} at offset {offset}: {detail}{why}")


def short(index: Index, local: IntArray, got: int, want: int, at: int) -> StaleIndexError:
    """The error for a read that got ``got`` of ``want`` bytes at ``at`` (a file cut)."""
    return stale(
        index,
        local,
        f"read {got} of {want} bytes at offset {at}: the file is shorter than the "
        f"{index.data_size} bytes it had when indexed",
    )
