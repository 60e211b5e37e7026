"""Which files a distributed read covers, and how they are cut into pieces.

A distributed engine (Ray Data) reads a dataset as many independent tasks. This module
plans them from the files' sidecar indexes, without any engine: paths, globs and
folders become files; each file's compression is recognised from its first bytes; the
indexes give exact record counts; and each file is cut at record boundaries into pieces
of about equal bytes (a GZIP/ZLIB file only at its restart points, where inflating can
start). Pieces are half-open record ranges of one file.
"""

from __future__ import annotations

import concurrent.futures
import glob as _glob
import itertools
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError
from ..index.damage import reporter
from ..index.sidecar import INDEX_SUFFIX, Index
from ..records import framing
from ..records.compression import Compression, normalize_compression
from ..records.recovery import DamageCallback, DamageReport
from ..storage import remote
from ..storage.options import StorageOptionsArg

__all__ = [
    "BLOCK_BYTES",
    "CompressionArg",
    "PathArg",
    "Piece",
    "ReadPolicy",
    "blocks_of",
    "check_policy",
    "compression_of",
    "cut_points",
    "expand_paths",
    "open_indexes",
    "plan_pieces",
    "sniff_compression",
]

PathArg = str | os.PathLike[str]
CompressionArg = str | Compression | None
ReadPolicy = Literal["raise", "skip"]
#: Record bytes per block a read task yields at most (one record may exceed it alone).
BLOCK_BYTES: Final = 64 << 20
_HEADER = struct.Struct("<QI")


def _is_data_name(name: str) -> bool:
    """Leaves out hidden names (writers' temporaries, staging), sidecars and markers."""
    return not name.startswith((".", "_")) and not name.endswith(INDEX_SUFFIX)


def expand_paths(
    paths_or_globs: PathArg | Sequence[PathArg], storage_options: StorageOptionsArg = None
) -> list[str]:
    """The data files named by paths, globs and folders, in the order given.

    A glob expands sorted; a folder stands for the files directly in it, sorted. Hidden
    names (``.x``, ``_x``, e.g. a writer's temporaries) and sidecar indexes are left out
    of both. A plain path is kept as it is (a missing one fails when it is opened). URL
    globs are listed with ``storage_options`` (see :mod:`tfrecord_engine.storage.options`).

    Raises:
        FileNotFoundError: a glob or folder matches no data file.
        InvalidArgumentError: no path at all.
    """
    items = [paths_or_globs] if isinstance(paths_or_globs, (str, os.PathLike)) else paths_or_globs
    out: list[str] = []
    for item in items:
        p = remote.local_path(os.fspath(item))
        if _glob.has_magic(p):
            found = remote.glob(p, storage_options) if remote.is_url(p) else _glob.glob(p)
            files = sorted(
                q for q in found if _is_data_name(os.path.basename(q)) and not os.path.isdir(q)
            )
            if not files:
                raise FileNotFoundError(f"no data file matches {p!r}")
            out += files
        elif not remote.is_url(p) and os.path.isdir(p):
            files = sorted(
                os.path.join(p, n)
                for n in os.listdir(p)
                if _is_data_name(n) and os.path.isfile(os.path.join(p, n))
            )
            if not files:
                raise FileNotFoundError(f"the folder {p!r} holds no data file")
            out += files
        else:
            out.append(p)
    if not out:
        raise InvalidArgumentError("read_tfrecords needs at least one file")
    return out


def _head(path: str, size: int, storage_options: StorageOptionsArg = None) -> bytes:
    if remote.is_url(path):
        url = remote.RemoteFile(path, storage_options=storage_options)
        return url.fetch(0, min(size, url.size))
    with open(path, "rb") as f:
        return f.read(size)


def sniff_compression(path: str, storage_options: StorageOptionsArg = None) -> Compression:
    """The compression of a file, recognised from its first bytes.

    An uncompressed TFRecord file starts with a record header whose length CRC matches
    (or is empty); GZIP starts with ``1f 8b``; ZLIB with a two-byte header whose value
    is a multiple of 31. Anything else is taken as uncompressed, and its reader then
    reports the damage it finds.
    """
    head = _head(path, _HEADER.size, storage_options)
    if len(head) == _HEADER.size:
        _, masked = _HEADER.unpack(head)
        if framing.mask_crc(framing.crc32c(head[:8])) == masked:
            return Compression.NONE
    if head[:2] == b"\x1f\x8b":
        return Compression.GZIP
    if len(head) >= 2 and head[0] & 0x0F == 8 and ((head[0] << 8) | head[1]) % 31 == 0:
        return Compression.ZLIB
    return Compression.NONE


def compression_of(
    path: str, compression: CompressionArg, storage_options: StorageOptionsArg = None
) -> Compression:
    if isinstance(compression, str) and compression.lower() == "auto":
        return sniff_compression(path, storage_options)
    return normalize_compression(compression)


def check_policy(on_damage: str) -> ReadPolicy:
    if on_damage == "raise":
        return "raise"
    if on_damage == "skip":
        return "skip"
    raise InvalidArgumentError(
        f"on_damage must be 'raise' or 'skip' for Ray Data, got {on_damage!r} ('stop' "
        "would end one read task, not the file: the tasks of a file run independently)"
    )


def open_indexes(
    paths: Sequence[str],
    compression: CompressionArg = "auto",
    *,
    on_damage: ReadPolicy = "raise",
    on_damage_report: DamageCallback | None = None,
    threads: int = 8,
    storage_options: StorageOptionsArg = None,
) -> list[Index]:
    """Opens (loads, or builds and saves) the index of every file, a few at a time.

    Damage found while indexing under ``"skip"`` goes to ``on_damage_report`` (default: a
    :class:`~tfrecord_engine.DamageWarning`), in file order. URLs are reached with
    ``storage_options``, which every index keeps (and read tasks get with it).
    """

    def one(path: str) -> tuple[Index, list[DamageReport]]:
        reports: list[DamageReport] = []
        kind = compression_of(path, compression, storage_options)
        idx = Index.open(
            path,
            kind,
            on_damage=on_damage,
            on_damage_report=reports.append,
            storage_options=storage_options,
        )
        return idx, reports

    with concurrent.futures.ThreadPoolExecutor(max(1, min(threads, len(paths)))) as pool:
        opened = list(pool.map(one, paths))
    report = reporter(on_damage_report)
    for _, reports in opened:
        for r in reports:
            report(r)
    return [idx for idx, _ in opened]


# ---- planning pieces ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Piece:
    """Records ``[start, stop)`` (half-open) of file ``file`` (a position in the file list)."""

    file: int
    start: int
    stop: int

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.stop:
            raise InvalidArgumentError(f"a piece needs 0 <= start < stop, got {self}")


def cut_points(index: Index) -> npt.NDArray[np.int64]:
    """The records a read task of this file may start at, ascending (always record 0).

    Any record of an uncompressed file; of a compressed one, the first record starting
    at or after each restart point (inflating starts there: a full flush at a record
    start, or a member start, often inside a record); only record 0 without restart
    points.
    """
    n = len(index)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if index.compression is Compression.NONE:
        return np.arange(n, dtype=np.int64)
    at = np.searchsorted(index.offsets, index.restarts[:, 1], "left").astype(np.int64)
    return np.unique(np.concatenate([[0], at[at < n]]))


def plan_pieces(indexes: Sequence[Index], parallelism: int) -> list[Piece]:
    """Cuts the files into about ``parallelism`` pieces of about equal bytes.

    Each file gets a share of the pieces in proportion to its (decompressed) bytes, at
    least one when it has records, and its cuts fall at the record (of
    :func:`cut_points`) nearest after each equal-bytes point. Pieces cover every record
    of every file exactly once, in file order.
    """
    sizes = [idx.stream_size for idx in indexes]
    total = sum(sizes)
    target = max(1.0, total / max(1, parallelism))
    pieces: list[Piece] = []
    for f, (idx, size) in enumerate(zip(indexes, sizes, strict=True)):
        n = len(idx)
        if n == 0:
            continue
        want = max(1, min(n, round(size / target)))
        points = ((np.arange(1, want, dtype=np.int64) * size) // want).astype(np.uint64)
        if idx.compression is Compression.NONE:
            # Every record is a cut point: search the offsets themselves.
            at = np.searchsorted(idx.offsets, points, "left")
            chosen = at[at < n]
        else:
            cuts = cut_points(idx)
            at = np.searchsorted(idx.offsets[cuts], points, "left")
            chosen = cuts[at[at < len(cuts)]]
        starts = np.unique(np.concatenate([[0], chosen]).astype(np.int64))
        bounds = [*starts.tolist(), n]
        pieces += [Piece(f, a, b) for a, b in itertools.pairwise(bounds)]
    return pieces


def blocks_of(index: Index, piece: Piece, records_per_block: int) -> list[tuple[int, int]]:
    """``piece`` cut into blocks of at most ``records_per_block`` records and about
    :data:`BLOCK_BYTES` record bytes (a bigger record makes a block of its own)."""
    lengths = index.lengths[piece.start : piece.stop].astype(np.int64)
    ends = np.cumsum(lengths)
    out: list[tuple[int, int]] = []
    a = 0
    n = len(lengths)
    while a < n:
        base = int(ends[a - 1]) if a else 0
        by_bytes = int(np.searchsorted(ends, base + BLOCK_BYTES, "right"))
        b = min(n, a + records_per_block, max(a + 1, by_bytes))
        out.append((piece.start + a, piece.start + b))
        a = b
    return out
