"""A file of a Beam read cut into pieces at record boundaries, and the splittable
DoFn's restriction over them.

How a read is cut (one file of ``n`` records)::

    match patterns -> Reshuffle -> index each file -> restriction [0, n + 1)
      positions 0 .. n-1: the records; position n: the file's damage reports (if any)
      initial split: at record boundaries about ``desired_bundle_bytes`` apart
      try_split: any record (plain files) or the next restart point (GZIP/ZLIB)
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import struct
from collections.abc import Iterator
from typing import Any, Final, NamedTuple

import numpy as np
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
from apache_beam.transforms.core import RestrictionProvider

from ...index.sidecar import Index
from ...records import framing
from ...records.compression import Compression
from ...records.recovery import DamageReport, normalize_policy
from ...storage.options import StorageOptionsArg

__all__ = [
    "DEFAULT_BUNDLE_BYTES",
    "Claim",
    "FileTask",
    "Piece",
    "PieceProvider",
    "RecordTracker",
    "detect_compression",
    "plan_file",
    "spaced",
]

#: The default size of the pieces a file is first cut into (Beam's file sources use 64 MiB).
DEFAULT_BUNDLE_BYTES: Final = 64 << 20

_LENGTH_HEADER = struct.Struct("<QI")


def detect_compression(path: str) -> Compression:
    """The compression of a TFRecord file, recognised from its first bytes.

    A valid uncompressed record header (length and its masked CRC32C) wins; then the GZIP
    magic, then a ZLIB header. An empty file is uncompressed; anything else is read as
    uncompressed, so the reader reports the damage with its offset.
    """
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        head = f.read(framing.HEADER_SIZE)
    if len(head) == framing.HEADER_SIZE:
        _, crc = _LENGTH_HEADER.unpack(head)
        if framing.mask_crc(framing.crc32c(head[:8])) == crc:
            return Compression.NONE
    if head[:2] == b"\x1f\x8b":
        return Compression.GZIP
    if len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0:
        return Compression.ZLIB
    return Compression.NONE


@dataclasses.dataclass(frozen=True)
class FileTask:
    """One file to read: what the splittable DoFn gets as its element.

    ``pieces`` are the record numbers where the initial split cuts (about
    ``desired_bundle_bytes`` apart); ``cuts`` the record numbers a dynamic split may cut
    at, ``None`` meaning any record. The restriction is ``[0, count + 1)``: position
    ``count`` stands for the file's damage reports.
    """

    path: str
    compression: Compression
    count: int
    size: int
    pieces: tuple[int, ...]
    cuts: tuple[int, ...] | None
    damage: tuple[DamageReport, ...]


def plan_file(
    path: str,
    compression: Compression,
    policy: str,
    bundle_bytes: int,
    storage_options: StorageOptionsArg = None,
) -> FileTask:
    """Indexes ``path`` (sidecar, or built here and saved) and plans its pieces; a URL
    is reached with ``storage_options``."""
    reports: list[DamageReport] = []
    idx = Index.open(
        path,
        compression,
        on_damage=normalize_policy(policy),
        on_damage_report=reports.append,
        storage_options=storage_options,
    )
    n = len(idx)
    offsets = idx.offsets.astype(np.int64)
    if compression is Compression.NONE:
        starts, where = np.arange(n, dtype=np.int64), offsets
        cuts: tuple[int, ...] | None = None
    else:
        # Decompression can begin at a restart point (our writer's full flushes, at
        # record starts; any tool's member starts, usually inside a record): a piece
        # starts at the first record beginning at or after one.
        restart = idx.restarts.astype(np.int64)
        at = np.searchsorted(offsets, restart[:, 1])
        ok = (at < n) & (at > 0)
        starts, first = np.unique(at[ok], return_index=True)
        where = restart[ok, 0][first]
        cuts = tuple(int(s) for s in starts)
    chosen = spaced(starts, where, idx.data_size, bundle_bytes)
    pieces = tuple(int(p) for p in chosen if 0 < p < n)
    return FileTask(path, compression, n, idx.data_size, pieces, cuts, tuple(reports))


def spaced(
    starts: np.ndarray[Any, Any], where: np.ndarray[Any, Any], size: int, step: int
) -> list[int]:
    """The first of ``starts`` (record numbers, at byte positions ``where``, both
    increasing) at or after each multiple of ``step`` bytes below ``size``."""
    if len(starts) == 0:
        return []
    goals = np.arange(step, size, step, dtype=np.int64)
    at = np.minimum(np.searchsorted(where, goals), len(starts) - 1)
    return sorted({int(s) for s in starts[at]})


class Piece(OffsetRange):  # type: ignore[misc]
    """A range ``[start, stop)`` of record positions of one file, and where it may be cut.

    ``cuts`` are the record numbers a split may cut at, ``None`` meaning any record (a
    plain file). The halves of a split keep them.
    """

    def __init__(self, start: int, stop: int, cuts: tuple[int, ...] | None) -> None:
        super().__init__(start, stop)
        self.cuts = cuts

    def split_at(self, split_pos: int) -> tuple[Piece, Piece]:
        return Piece(self.start, split_pos, self.cuts), Piece(split_pos, self.stop, self.cuts)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Piece, (self.start, self.stop, self.cuts))


class Claim(NamedTuple):
    """A claim of the records ``[start, end)`` in one call of ``try_claim``.

    Claiming record by record costs two Python calls and a lock per record; a claim of a
    whole chunk costs them once. The tracker claims ``[start, min(end, stop))``, or
    nothing when ``start`` is already past the range's end. Either way the reader learns
    what it got from ``current_restriction().stop`` afterwards: a split after a claim
    cuts only after the last claimed record, so ``min(end, stop)`` is the claimed end.
    """

    start: int
    end: int


class RecordTracker(OffsetRestrictionTracker):  # type: ignore[misc]
    """Beam's offset tracker over record numbers, splitting only where a piece may start.

    For a plain file every record is such a place (Beam's own split). For a GZIP/ZLIB
    file the split point is moved up to the next restart point, the only places a reader
    can start decompressing; without one after the split point there is no split.
    """

    def __init__(self, restriction: Piece) -> None:
        super().__init__(restriction)
        self._cuts = restriction.cuts
        self._tried: int | None = None

    def try_claim(self, position: int | Claim) -> bool:
        if isinstance(position, Claim):
            # Under the runner's tracker lock: claim as much of [start, end) as the
            # range still holds, in one step (claiming a position claims all below it).
            stop = self.current_restriction().stop
            at = max(position.start, min(position.end, stop) - 1)
        else:
            at = position
        self._tried = at
        claimed: bool = super().try_claim(at)
        return claimed

    def try_split(self, fraction_of_remainder: float) -> Any:
        if self._cuts is None:
            return super().try_split(fraction_of_remainder)
        rng = self.current_restriction()
        cur = rng.start - 1 if self._tried is None else self._tried
        want = cur + int(max(1, (rng.stop - cur) * fraction_of_remainder))
        i = bisect.bisect_left(self._cuts, max(want, cur + 1))
        if i == len(self._cuts) or self._cuts[i] >= rng.stop:
            return None
        at = self._cuts[i]
        # Beam computes exactly this split point from this fraction (+0.5 of a record
        # keeps float rounding from landing one record short).
        return super().try_split((at - cur + 0.5) / (rng.stop - cur))


class PieceProvider(RestrictionProvider):  # type: ignore[misc]
    """Restrictions over one :class:`FileTask`: record ranges cut at its pieces."""

    def initial_restriction(self, element: FileTask) -> Piece:
        return Piece(0, element.count + 1, element.cuts)

    def create_tracker(self, restriction: Piece) -> RecordTracker:
        return RecordTracker(restriction)

    def split(self, element: FileTask, restriction: Piece) -> Iterator[Piece]:
        bounds = [restriction.start]
        bounds += [p for p in element.pieces if restriction.start < p < restriction.stop]
        bounds.append(restriction.stop)
        for a, b in itertools.pairwise(bounds):
            yield Piece(a, b, restriction.cuts)

    def restriction_size(self, element: FileTask, restriction: Piece) -> float:
        per = element.size / max(1, element.count)
        return float(max(1, restriction.stop - restriction.start) * per)
