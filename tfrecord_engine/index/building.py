"""Building an index: scanning a data file for its records, member starts and damage.

:meth:`Index.build <tfrecord_engine.index.sidecar.Index.build>` documents the promises;
this module keeps the work: one scan of the file (a header walk through ``mmap``, a
stream read, or a tolerant scan under ``"stop"``/``"skip"``), its index columns, and
the identity of the bytes read (:mod:`.identity`), all through one descriptor: an
index is stamped with the identity of the bytes it was built from. A file that changes
while it is read is scanned again, a few times at most.

Member starts are found when an index is built by reading the file (``Index.build``,
and the index built on a first read): each member of a bgzip (BGZF) file, of ``cat a.gz
b.gz`` or of a file appended to with ``gzip.open(p, "ab")`` is a restart point that
costs 16 bytes of index and nothing to keep in memory.

Records span ``[offset, offset + HEADER_SIZE + length + FOOTER_SIZE)``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from ..errors import DataLossError, StaleIndexError
from ..records import framing
from ..records.compression import Compression
from ..records.detect import HEAD_SIZE, CompressionArg, detect, noted, requested
from ..records.recovery import DamagePolicy, DamageReport, normalize_policy
from ..storage import remote
from ..storage.filekind import require_regular
from ..storage.options import StorageOptionsArg
from . import identity as ident
from .columns import ColumnsArg, ColumnSpec, IndexColumn, normalize_columns, read_columns
from .damage import tolerant_scan
from .format import Fields
from .identity import DataBytes, opened
from .scan import FileStat, as_u64, file_stat, refuse_larger, walk_headers, walk_stream

__all__ = ["add_columns", "build_fields", "scan"]

U64Array = npt.NDArray[np.uint64]

#: Times :func:`build_fields` reads a file that keeps changing under it before it gives up.
_BUILD_TRIES = 3


def build_fields(
    path: str,
    compression: CompressionArg,
    *,
    on_damage: DamagePolicy,
    max_record_bytes: int | None,
    columns: ColumnsArg | None,
    storage_options: StorageOptionsArg,
) -> Fields:
    """The fields of a new index of ``path`` (a local path or a URL), read from the file
    as :meth:`Index.build <tfrecord_engine.index.sidecar.Index.build>` says.

    Raises:
        StaleIndexError: the file changed while it was read, every time it was tried.
    """
    want = requested(compression)
    policy = normalize_policy(on_damage)
    spec = normalize_columns(columns)
    if not remote.is_url(path):
        require_regular(path, "indexing")
    for attempt in range(1, _BUILD_TRIES + 1):
        damage: list[DamageReport] = []
        members: list[tuple[int, int]] = []
        found_columns: tuple[IndexColumn, ...] = ()
        with opened(path, storage_options) as data:
            offsets, lengths, kind, by_path = scan(
                data, want, policy, max_record_bytes, members=members, damage=damage
            )
            if spec:
                found_columns, again = read_columns(
                    data,
                    kind,
                    offsets,
                    lengths,
                    spec,
                    policy=policy,
                    max_record_bytes=max_record_bytes,
                )
                by_path = by_path or again
            # A scan that opened the path again read the file it names: the one
            # read here, or the identity below would describe other bytes.
            same = not by_path or data.stat is None or _names(path, data.stat)
            found = (
                ident.identify(data, kind is Compression.NONE, offsets, lengths) if same else None
            )
        if found is not None:
            break
        if attempt == _BUILD_TRIES:
            raise StaleIndexError(
                f"{path}: the file changed while it was being indexed, {attempt} times "
                "in a row: index it once it is complete (e.g. `tfr index` after its "
                "writer closed it)"
            )
    assert found is not None  # (the loop ends at a break or a raise)
    restarts = _useful_members(members, offsets, lengths)
    return Fields(
        compression=kind,
        data_size=found.size,
        fingerprint=found.fingerprint,
        offsets=offsets,
        lengths=lengths,
        restarts=restarts,
        member_starts=np.ones(len(restarts), dtype=np.bool_),
        damage=tuple(damage),
        damage_policy=policy,
        # (Reading the columns checked every data CRC.)
        data_verified=policy != "raise" or bool(spec),
        content=found.content,
        columns=found_columns,
    )


def add_columns(
    fields: Fields, data_path: str, spec: ColumnSpec, storage_options: StorageOptionsArg
) -> Fields:
    """``fields`` (an index of ``data_path``, checked against it) with the columns of
    ``spec`` read from the file, replacing any of those names; every record's data CRC
    is checked on the way, so the result is data-verified."""
    with opened(data_path, storage_options) as data:
        added, _ = read_columns(
            data,
            fields.compression,
            fields.offsets,
            fields.lengths,
            spec,
            policy=fields.damage_policy,
        )
    kept = [c for c in fields.columns if c.name not in {n for n, _ in spec}]
    return fields._replace(columns=(*kept, *added), data_verified=True)


def scan(
    data: DataBytes,
    want: Compression | None,
    policy: DamagePolicy,
    max_record_bytes: int | None,
    *,
    members: list[tuple[int, int]],
    damage: list[DamageReport],
) -> tuple[U64Array, U64Array, Compression, bool]:
    """:func:`build_fields`'s scan of ``data``: ``(offsets, lengths, compression,
    whether the scan opened the path again)``; damage goes to ``damage``, member starts
    ``(compressed, decompressed)`` to ``members``."""
    path = data.path
    size = data.size
    head = data.ranges([(0, min(size, HEAD_SIZE))])[0] if size else b""
    kind = detect(head, path) if want is None else want
    with _noting_errors(head, kind, auto=want is None):
        if policy != "raise":
            offsets, lengths, found = tolerant_scan(
                path,
                kind,
                policy,
                max_record_bytes,
                members,
                auto=want is None,
                storage_options=data.storage_options,
            )
            damage += found
        elif kind is Compression.NONE and data.stat is not None:
            offsets, lengths = walk_headers(data.buf, path)
            if max_record_bytes is not None:
                refuse_larger(data.buf, offsets, lengths, path, max_record_bytes)
            return offsets, lengths, kind, False
        else:
            # A URL is read once in large blocks: hopping from header to header
            # would cost a request per record.
            offsets, lengths = walk_stream(
                path, kind, max_record_bytes, members, data.storage_options
            )
    return offsets, lengths, kind, True


@contextlib.contextmanager
def _noting_errors(head: bytes, kind: Compression, *, auto: bool) -> Iterator[None]:
    """Adds what the first bytes look like to a failure at the first record (see
    :func:`~tfrecord_engine.records.detect.noted`)."""
    try:
        yield
    except DataLossError as exc:
        better = noted(exc, head, kind, auto=auto)
        if better is None:
            raise
        raise better from exc


def _useful_members(
    members: Sequence[tuple[int, int]], offsets: U64Array, lengths: U64Array
) -> U64Array:
    """The member starts worth keeping as restart points: those before the end of the
    last record (a trailing empty member, as bgzip's end-of-file block, starts none),
    the last of several at one decompressed offset (empty members in between)."""
    table = np.array(members, dtype=np.uint64).reshape(-1, 2)
    if len(offsets) == 0 or len(table) == 0:
        return np.zeros((0, 2), dtype=np.uint64)
    end = offsets[-1] + lengths[-1] + np.uint64(framing.FRAME_OVERHEAD)
    table = as_u64(table[table[:, 1] < end])
    if len(table) == 0:
        return table
    last = np.append(table[1:, 1] != table[:-1, 1], True)
    return as_u64(table[last])


def _names(path: str, stat: FileStat) -> bool:
    """Whether ``path`` still names the file of ``stat``, unchanged."""
    try:
        return file_stat(os.stat(path)) == stat
    except OSError:
        return False
