"""Checking an index: its own arrays, its data file, the damage policies it answers.

A stale index (data file appended, truncated or replaced) is caught when it is opened
(:meth:`Index.validate <tfrecord_engine.index.sidecar.Index.validate>`, which documents
the promise; :func:`validate` here): the size, the sampled fingerprint and (local
files) the content check of :mod:`.identity` (every byte of a file up to 4 MiB, sampled
records or windows of a larger one) must match and, for uncompressed files, the last
record must end exactly at the end of the file. A check that passed is remembered for
the exact ``fstat`` it was made against.

A ``"skip"`` index also answers ``"stop"``: :func:`stopped` is what it then serves.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError, StaleIndexError
from ..records.compression import Compression
from ..records.recovery import DamageReport
from ..storage.options import StorageOptions
from . import identity as ident
from .columns import IndexColumn
from .format import MEMBER_BIT, Fields
from .identity import ContentCheck, DataBytes, opened
from .scan import FileStat, as_u64, fingerprint_of, fingerprint_ranges

__all__ = ["Described", "require_records", "restart_table", "stopped", "validate"]

U64Array = npt.NDArray[np.uint64]


def restart_table(
    restarts: object, member_starts: object
) -> tuple[U64Array, npt.NDArray[np.bool_]]:
    """An index's ``restarts`` (``uint64[m, 2]``, empty for ``None``) and its
    ``member_starts`` (``bool[m]``, all false for ``None``), checked.

    Raises:
        InvalidArgumentError: not one flag per restart point, or a compressed offset
            the format cannot hold (``>= 2**63``).
    """
    table = as_u64(np.zeros((0, 2)) if restarts is None else restarts).reshape(-1, 2)
    m = len(table)
    starts = np.ascontiguousarray(
        np.zeros(m, dtype=np.bool_) if member_starts is None else member_starts,
        dtype=np.bool_,
    ).reshape(-1)
    if len(starts) != m:
        raise InvalidArgumentError(
            f"member_starts must have one flag per restart point ({m}), got {len(starts)}"
        )
    if m and bool(np.any(table[:, 0] >= MEMBER_BIT)):
        raise InvalidArgumentError("a restart point's compressed offset must be < 2**63")
    return table, starts


def require_records(offsets: U64Array, lengths: U64Array, columns: Sequence[IndexColumn]) -> None:
    """Checks that ``offsets`` and ``lengths`` are 1-D and of one length, and that
    ``columns`` are uniquely named with one value per record.

    Raises:
        InvalidArgumentError: they are not.
    """
    if offsets.shape != lengths.shape or offsets.ndim != 1:
        raise InvalidArgumentError(
            f"offsets and lengths must be 1-D arrays of one length, got "
            f"{offsets.shape} and {lengths.shape}"
        )
    names = {c.name for c in columns}
    if any(len(c) != len(offsets) for c in columns) or len(names) != len(columns):
        raise InvalidArgumentError(
            f"index columns must be uniquely named, one value per record "
            f"({len(offsets)}), got {[(c.name, len(c)) for c in columns]}"
        )


def stopped(f: Fields) -> Fields:
    """The fields of an index with damage (``f``) as a ``"stop"`` reader sees its file:
    the records before the first damage, and that damage reported as such a reader
    reports it."""
    first = f.damage[0]
    n = first.record_index
    # Exactly what a "stop" reader reports: the rest of a plain file, or an unknown
    # amount of a stream.
    rest = f.data_size - first.offset if f.compression is Compression.NONE else None
    return f._replace(
        offsets=f.offsets[:n],
        lengths=f.lengths[:n],
        damage=(DamageReport(first.path, n, first.offset, rest, first.reason),),
        damage_policy="stop",
        columns=tuple(c.head(n) for c in f.columns),
    )


class Described(Protocol):
    """What :func:`validate` reads of an index (an :class:`~.sidecar.Index`)."""

    @property
    def data_path(self) -> str: ...
    @property
    def storage_options(self) -> StorageOptions | None: ...
    @property
    def compression(self) -> Compression: ...
    @property
    def data_size(self) -> int: ...
    @property
    def fingerprint(self) -> int: ...
    @property
    def content(self) -> ContentCheck | None: ...
    @property
    def offsets(self) -> U64Array: ...
    @property
    def lengths(self) -> U64Array: ...
    @property
    def damage(self) -> tuple[DamageReport, ...]: ...
    @property
    def stream_size(self) -> int: ...
    def __len__(self) -> int: ...


def validate(index: Described, identity: tuple[int, int] | None = None) -> FileStat | None:
    """Checks ``index`` against its data file and returns the file's ``fstat`` (``None``
    for a URL), as :meth:`Index.validate <tfrecord_engine.index.sidecar.Index.validate>`
    says.

    Raises:
        StaleIndexError: size, fingerprint, content or record layout do not match.
    """
    with opened(index.data_path, index.storage_options) as data:
        stat = data.stat
        key = None if stat is None else _check_key(index, stat)
        if key is not None and ident.checked_before(key):
            return stat
        started = ident.clock()
        _check(index, data, identity)
    if key is not None and stat is not None:
        ident.remember_checked(key, stat, started)
    return stat


def _records_end(index: Described) -> int:
    """Where the records, and the damaged regions between and after them, end."""
    return max([index.stream_size, *(d.offset + (d.bytes_skipped or 0) for d in index.damage)])


def _check_key(index: Described, stat: FileStat) -> Hashable:
    """What a remembered check of ``index`` against the file of ``stat`` is filed
    under: everything :func:`validate` compares."""
    return (
        stat,
        index.data_path,
        index.compression,
        index.data_size,
        index.fingerprint,
        index.content,
        len(index),
        _records_end(index),
    )


def _check(index: Described, data: DataBytes, identity: tuple[int, int] | None) -> None:
    """:func:`validate`'s comparisons, reading ``data``."""
    size = data.size if identity is None else identity[0]
    if size != index.data_size:
        raise StaleIndexError(
            f"{index.data_path}: index is stale: the file has {size} bytes, the "
            f"index was built for {index.data_size} (appended or truncated?)"
        )
    fp = identity[1] if identity is not None else None
    if fp is None:
        fp = fingerprint_of(size, data.ranges(fingerprint_ranges(size)))
    if fp != index.fingerprint:
        raise StaleIndexError(
            f"{index.data_path}: index is stale: the file's content fingerprint changed (replaced?)"
        )
    # Records, and the damaged regions between and after them, cover the file.
    end = _records_end(index)
    plain = index.compression is Compression.NONE
    if plain and end != size:
        raise StaleIndexError(
            f"{index.data_path}: index is foreign: its records end at byte "
            f"{end}, the file has {size} bytes"
        )
    if data.stat is None:
        # A URL: stores replace objects whole, and a changed object is caught while
        # in use (RemoteChangedError); reading it all, or hundreds of ranges, on
        # every open would cost more than the open itself.
        return
    check = index.content
    if check is not None:
        crc = ident.content_crc(data, check.kind, check.samples, index.offsets, index.lengths)
        if crc != check.crc:
            what = "every byte" if check.kind == ident.KIND_FULL else "sampled bytes"
            raise StaleIndexError(
                f"{index.data_path}: index is stale: the file has the indexed size "
                f"and fingerprint but its content check ({what}) fails: the file "
                "was replaced or rewritten since it was indexed; index it again "
                "(Index.open and datasets do so)"
            )
    elif plain and not ident.header_samples_match(data, index.offsets, index.lengths):
        raise StaleIndexError(
            f"{index.data_path}: index is stale: the record headers at sampled "
            "indexed offsets do not announce the indexed lengths (the file was "
            "replaced by one of the same size and fingerprint?); index it again"
        )
