"""Indexes of damaged files: the tolerant scan and the damage list of the sidecar format.

Under ``on_damage="stop"``/``"skip"``, :meth:`Index.build <tfrecord_engine.Index.build>`
indexes a file by reading it once through :func:`~tfrecord_engine.read_records` with the
same policy, so an index holds exactly the records that reader returns (every data CRC
is checked) and the damage is the reader's own reports: there is one resynchronizing
scanner (:mod:`tfrecord_engine.records.recovery`), not a second one here.

The damage list travels with the index: a sidecar of a damaged file is written in
format version 2, which appends a damage section after the arrays (clean indexes keep
the layout of version 1: as version 1 after a header walk, as version 3 when every data
CRC was checked, as here; see :mod:`tfrecord_engine.index.sidecar`)::

    policy       uint32    1 "stop", 2 "skip": the policy the index was built under
    count        uint32    number of damage entries d
    d entries    record_index uint64, offset uint64, bytes_skipped int64 (-1: unknown),
                 reason_size uint32, then reason_size bytes of UTF-8

A later open therefore learns about the damage and reports it again: damage is never
forgotten because an index was cached.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from ..errors import IndexFormatError, warn_damage
from ..records import framing
from ..records.compression import Compression
from ..records.reader import read_records, read_records_noting_members
from ..records.recovery import DamageCallback, DamagePolicy, DamageReport
from ..storage.options import StorageOptionsArg

__all__ = ["decode_damage", "encode_damage", "reporter", "tolerant_scan"]

U64Array = npt.NDArray[np.uint64]
_SECTION = struct.Struct("<II")
_ENTRY = struct.Struct("<QQqI")
_POLICY_CODES: Final[dict[DamagePolicy, int]] = {"stop": 1, "skip": 2}
_CODE_POLICIES: Final[dict[int, DamagePolicy]] = {v: k for k, v in _POLICY_CODES.items()}


def reporter(callback: DamageCallback | None) -> DamageCallback:
    """Returns ``callback``, or one that emits each report as a :class:`DamageWarning`."""
    if callback is not None:
        return callback

    return warn_damage


def tolerant_scan(
    path: str,
    kind: Compression,
    policy: DamagePolicy,
    max_record_bytes: int | None = None,
    members: list[tuple[int, int]] | None = None,
    *,
    auto: bool = False,
    storage_options: StorageOptionsArg = None,
) -> tuple[U64Array, U64Array, list[DamageReport]]:
    """Indexes a file under ``"stop"``/``"skip"``: ``(offsets, lengths, damage)``.

    ``auto``: ``kind`` was detected from the file (``compression="auto"``), not given, so
    a report about its first record says what :func:`~tfrecord_engine.read_records`
    says under ``"auto"`` (the reader detects the same kind from the same bytes).

    Offsets follow from the reader's output: records lie back to back, except that each
    damage report moves the position past the bytes it skipped. ``members`` (GZIP/ZLIB
    only) receives the member starts the read passes (see
    :func:`~tfrecord_engine.records.reader.read_records_noting_members`).
    """
    reports: list[DamageReport] = []
    offsets: list[int] = []
    lengths: list[int] = []
    pos = 0
    seen = 0
    records = (
        read_records(
            path,
            "auto" if auto else kind,
            on_damage=policy,
            on_damage_report=reports.append,
            max_record_bytes=max_record_bytes,
            storage_options=storage_options,
        )
        if members is None or kind is Compression.NONE
        else read_records_noting_members(
            path,
            kind,
            members,
            on_damage=policy,
            on_damage_report=reports.append,
            max_record_bytes=max_record_bytes,
            storage_options=storage_options,
        )
    )
    for record in records:
        if len(reports) > seen:
            # Reports arrive before the record that follows the damage.
            last = reports[-1]
            pos = last.offset + (last.bytes_skipped or 0)
            seen = len(reports)
        offsets.append(pos)
        lengths.append(len(record))
        pos += len(record) + framing.FRAME_OVERHEAD
    return (
        np.array(offsets, dtype=np.uint64),
        np.array(lengths, dtype=np.uint64),
        reports,
    )


def encode_damage(policy: DamagePolicy, damage: Sequence[DamageReport]) -> bytes:
    """Serializes the damage section (see the module docstring)."""
    parts = [_SECTION.pack(_POLICY_CODES[policy], len(damage))]
    for d in damage:
        reason = d.reason.encode("utf-8")
        skipped = -1 if d.bytes_skipped is None else d.bytes_skipped
        parts.append(_ENTRY.pack(d.record_index, d.offset, skipped, len(reason)) + reason)
    return b"".join(parts)


def decode_damage(
    blob: bytes, pos: int, end: int, *, path: str, source: str
) -> tuple[DamagePolicy, tuple[DamageReport, ...]]:
    """Parses the damage section in ``blob[pos:end]`` (which it must fill exactly).

    Raises:
        IndexFormatError: the section is cut short, overlong or names no known policy.
    """
    if end - pos < _SECTION.size:
        raise IndexFormatError(f"{source}: damaged index (damage section cut short)")
    code, count = _SECTION.unpack_from(blob, pos)
    pos += _SECTION.size
    if code not in _CODE_POLICIES or count == 0:
        raise IndexFormatError(f"{source}: damaged index (bad damage section header)")
    damage = []
    for _ in range(count):
        if end - pos < _ENTRY.size:
            raise IndexFormatError(f"{source}: damaged index (damage entry cut short)")
        record_index, offset, skipped, size = _ENTRY.unpack_from(blob, pos)
        pos += _ENTRY.size
        if end - pos < size or skipped < -1:
            raise IndexFormatError(f"{source}: damaged index (bad damage entry)")
        reason = blob[pos : pos + size].decode("utf-8", errors="replace")
        pos += size
        damage.append(
            DamageReport(path, record_index, offset, None if skipped == -1 else skipped, reason)
        )
    if pos != end:
        raise IndexFormatError(f"{source}: damaged index (bytes after the damage section)")
    return _CODE_POLICIES[code], tuple(damage)
