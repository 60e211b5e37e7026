"""Checking an existing file before appending to it: find and cut a torn tail.

A writer killed mid-record leaves a *torn tail*: a partial header, a partial record, or
bytes of a record that never became valid (zeros, where the file system extended the
file but the data never reached the disk). Appending after it would bury the damage in
the middle of the file, so an append first reads the whole file and:

- every record is intact: append at the end;
- damage, and no intact record anywhere after it: it is a torn tail; report it and cut
  the file there (the caller truncates) before appending;
- damage *followed by* intact records: this is not a torn tail, and cutting would throw
  those records away. Raise the :class:`~tfrecord_engine.DataLossError` instead.

GZIP files are checked on the decompressed stream; each append adds a new gzip member
(TensorFlow reads concatenated members, but stops silently at a member that inflates to
nothing: so a file holding only record-less members is cut to zero first, and an append
that writes no record adds no member). A damaged GZIP file is never cut: the intact
records of a torn member sit inside that member's deflate stream, so cutting at a member
boundary could drop records that read fine. Appending raises instead; rewrite the file
from ``read_records(..., on_damage="stop")`` first.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable

from ..errors import DataLossError, InvalidArgumentError
from ..records.compression import Compression
from ..records.reader import read_records
from ..records.recovery import DamageReport, find_next_record

__all__ = ["torn_tail_offset"]


def torn_tail_offset(
    path: str, kind: Compression, report: Callable[[DamageReport], object]
) -> int | None:
    """Returns where to cut ``path`` before appending, or ``None`` if it is intact.

    Calls ``report`` with a :class:`DamageReport` describing a torn tail that will be cut.

    Raises:
        InvalidArgumentError: ``kind`` is ZLIB (a ZLIB file is one stream: there is no
            way to append without rewriting it).
        DataLossError: damage that is not a torn tail (intact records follow it).
        FileNotFoundError: nothing to check (the caller creates the file instead).
    """
    if kind is Compression.ZLIB:
        raise InvalidArgumentError(
            f"cannot append to ZLIB file {path}: a ZLIB file is a single stream; use GZIP "
            "(appends add a gzip member) or write a new file"
        )
    found: list[DamageReport] = []
    count = 0
    for _ in read_records(path, kind, on_damage="stop", on_damage_report=found.append):
        count += 1
    if not found:
        if count == 0 and kind is Compression.GZIP and os.path.getsize(path) > 0:
            # Only record-less members: TensorFlow stops reading at a member that
            # inflates to nothing and would silently drop everything appended after it.
            return 0
        return None
    damage = found[0]
    if kind is not Compression.NONE:
        raise _refuse(
            path,
            damage,
            "a damaged GZIP file is not cut automatically (the intact records of a torn "
            "member would be lost); rewrite it from read_records(..., on_damage='stop')",
        )
    cut = _plain_cut(path, damage)
    size = os.path.getsize(path)
    report(
        DamageReport(
            path,
            count,
            damage.offset,
            size - cut,
            f"torn tail cut before appending ({size - cut} bytes): {damage.reason}",
        )
    )
    return cut


def _refuse(path: str, damage: DamageReport, why: str) -> DataLossError:
    return DataLossError(
        f"{damage.reason}; refusing to append: {why}",
        path=path,
        record_index=damage.record_index,
        offset=damage.offset,
    )


def _plain_cut(path: str, damage: DamageReport) -> int:
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        after = find_next_record(buf, damage.offset + 1)
    if after is not None:
        raise _refuse(
            path,
            damage,
            f"intact records follow the damage (next at offset {after}); this is not a "
            "torn tail, and cutting it would lose them",
        )
    return damage.offset
