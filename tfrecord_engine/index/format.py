"""The binary sidecar format of :class:`~tfrecord_engine.Index` (``.tfeidx``).

Little-endian; arrays 8-byte aligned so they load with ``np.frombuffer``::

    magic        8 bytes   b"TFEIDX\\r\\n"
    version      uint32    1, 2 or 3 (see below), plus 16 when the restart table
                           marks member starts, plus 32 when a content check follows,
                           plus 128 when index columns follow the restart table
    compression  uint32    0 none, 1 ZLIB, 2 GZIP
    data_size    uint64    size of the data file in bytes (compressed size for GZIP/ZLIB)
    fingerprint  uint64    crc32c of sampled windows of the data file (see ``fingerprint``)
    count        uint64    number of records n
    restarts     uint64    number of restart points m (compressed files)
    content      (versions with +32 only) uint32 kind (1 full, 2 sampled records,
                           3 sampled windows), uint32 samples, uint64 crc32c: the
                           content check of :mod:`.identity`
    offsets      uint64[n] start of each record's header (decompressed stream offset
                           for GZIP/ZLIB)
    lengths      uint64[n] data length of each record (framing excluded)
    restart      uint64[m, 2]  (compressed offset, decompressed offset) of each point
                           where inflating can begin, ascending: a full flush inside
                           a deflate stream (our writer's), or, with bit 63 of the
                           compressed offset set, the start of a GZIP member (or
                           ZLIB stream) of a multi-member file, where a fresh
                           inflater begins
    columns      (versions with +128 only) the index columns, see :mod:`.columns`
    damage       (version 2 only) the damage list, see :mod:`.damage`
    checksum     uint32    masked crc32c of every byte before it

The base version (1 to 3) says whether every record's data CRC was checked when the
index was built (:attr:`~tfrecord_engine.Index.data_verified`):

- 1: a clean index built from the record headers only (a header walk under
  ``on_damage="raise"``, an imported text index, and every sidecar written before
  version 3 existed): data CRCs are not known to be good. It serves ``"raise"`` only.
- 2: an index with a damage list, built under ``on_damage="stop"``/``"skip"`` by a
  scan that checks every data CRC.
- 3: the layout of version 1 (clean, no damage list), with every data CRC checked: an
  index written with the data (``TFRecordWriter(..., index=True)``) or a clean file
  indexed under ``"stop"``/``"skip"``.

The flags are added so that builds that predate one refuse the index ("version N is not
supported") and index the file again, rather than misread it: +16 (member starts: such
builds would read a marked offset as a full flush), +32 (a content check: every
index built or written since it exists carries one; indexes without it, older ones,
still load and are checked with their fingerprint and sampled record headers) and +128
(index columns: chosen scalar features of every record, see :mod:`.columns`; an index
without them is written byte for byte as before, and every older index loads as it
did; 64 is not used).
"""

from __future__ import annotations

import os
import struct
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from ..errors import IndexFormatError
from ..records import framing
from ..records.compression import Compression
from ..records.recovery import DamagePolicy, DamageReport
from .columns import IndexColumn, decode_columns, encode_columns
from .damage import decode_damage, encode_damage
from .identity import KINDS, ContentCheck

__all__ = [
    "COLUMNS_VERSION_OFFSET",
    "CONTENT_CHECK_VERSION_OFFSET",
    "DAMAGE_FORMAT_VERSION",
    "FORMAT_VERSION",
    "MEMBER_STARTS_VERSION_OFFSET",
    "VERIFIED_FORMAT_VERSION",
    "Fields",
    "decode",
    "encode",
]

FORMAT_VERSION: Final = 1
#: The version of sidecars that carry a damage list.
DAMAGE_FORMAT_VERSION: Final = 2
#: The version of clean sidecars whose every data CRC was checked (layout of version 1).
VERIFIED_FORMAT_VERSION: Final = 3
VERSIONS: Final = (FORMAT_VERSION, DAMAGE_FORMAT_VERSION, VERIFIED_FORMAT_VERSION)
#: Added to the version of an index whose restart table marks member starts.
MEMBER_STARTS_VERSION_OFFSET: Final = 16
#: Added to the version of an index that carries a content check.
CONTENT_CHECK_VERSION_OFFSET: Final = 32
#: Added to the version of an index that carries index columns.
COLUMNS_VERSION_OFFSET: Final = 128
_FLAGS: Final = MEMBER_STARTS_VERSION_OFFSET | CONTENT_CHECK_VERSION_OFFSET | COLUMNS_VERSION_OFFSET
#: Bit of a restart's compressed offset (in the file) that marks a member start.
MEMBER_BIT: Final = np.uint64(1 << 63)
_MAGIC: Final = b"TFEIDX\r\n"
_HEAD = struct.Struct("<8sIIQQQQ")
_CONTENT = struct.Struct("<IIQ")
_CRC = struct.Struct("<I")
_CODES: Final = {Compression.NONE: 0, Compression.ZLIB: 1, Compression.GZIP: 2}
_KINDS: Final = {v: k for k, v in _CODES.items()}

U64Array = npt.NDArray[np.uint64]


class Fields(NamedTuple):
    """An index's fields as the format stores them (the arguments of ``Index``)."""

    compression: Compression
    data_size: int
    fingerprint: int
    offsets: U64Array
    lengths: U64Array
    restarts: U64Array
    member_starts: npt.NDArray[np.bool_]
    damage: tuple[DamageReport, ...]
    damage_policy: DamagePolicy
    data_verified: bool
    content: ContentCheck | None
    columns: tuple[IndexColumn, ...] = ()


def encode(f: Fields) -> bytes:
    """Serializes an index: version 2 with damage, else 3 if data-verified, else 1;
    plus the flags its restart table and content check call for."""
    if f.damage:
        version = DAMAGE_FORMAT_VERSION
    else:
        version = VERIFIED_FORMAT_VERSION if f.data_verified else FORMAT_VERSION
    restarts = f.restarts.astype("<u8")
    if bool(f.member_starts.any()):
        version += MEMBER_STARTS_VERSION_OFFSET
        restarts = restarts.copy()
        restarts[f.member_starts, 0] |= MEMBER_BIT
    content = b""
    if f.content is not None:
        version += CONTENT_CHECK_VERSION_OFFSET
        content = _CONTENT.pack(*f.content)
    columns = b""
    if f.columns:
        version += COLUMNS_VERSION_OFFSET
        columns = encode_columns(f.columns, len(f.offsets))
    head = _HEAD.pack(
        _MAGIC,
        version,
        _CODES[f.compression],
        f.data_size,
        f.fingerprint,
        len(f.offsets),
        len(f.restarts),
    )
    body = b"".join(
        (
            head,
            content,
            f.offsets.astype("<u8").tobytes(),
            f.lengths.astype("<u8").tobytes(),
            restarts.tobytes(),
            columns,
            encode_damage(f.damage_policy, f.damage) if f.damage else b"",
        )
    )
    return body + _CRC.pack(framing.mask_crc(framing.crc32c(body)))


def _split_version(version: int, source: str) -> tuple[int, bool, bool, bool]:
    """``(base version, member starts marked, content check present, columns present)``."""
    base = version & ~_FLAGS
    if base not in VERSIONS:
        raise IndexFormatError(
            f"{source}: index format version {version} is not supported "
            f"(this build reads versions {FORMAT_VERSION}, {DAMAGE_FORMAT_VERSION} and "
            f"{VERIFIED_FORMAT_VERSION}, each also with member starts, "
            f"+{MEMBER_STARTS_VERSION_OFFSET}, with a content check, "
            f"+{CONTENT_CHECK_VERSION_OFFSET}, and with index columns, "
            f"+{COLUMNS_VERSION_OFFSET})"
        )
    return (
        base,
        bool(version & MEMBER_STARTS_VERSION_OFFSET),
        bool(version & CONTENT_CHECK_VERSION_OFFSET),
        bool(version & COLUMNS_VERSION_OFFSET),
    )


def decode(blob: bytes, data_path: str | os.PathLike[str], source: str) -> Fields:
    """Parses a binary index; checks its own checksum, not the data file.

    Raises:
        IndexFormatError: wrong magic, unknown version, bad size or checksum.
    """
    if len(blob) < _HEAD.size + _CRC.size or blob[:8] != _MAGIC:
        raise IndexFormatError(f"{source}: not a tfrecord-engine index (bad magic)")
    _, version, code, data_size, fp, count, nrestarts = _HEAD.unpack_from(blob, 0)
    version, marked, checked, with_columns = _split_version(version, source)
    # The checksum first: no field is trusted before it matches.
    (stored,) = _CRC.unpack_from(blob, len(blob) - _CRC.size)
    if framing.mask_crc(framing.crc32c(blob[: -_CRC.size])) != stored:
        raise IndexFormatError(f"{source}: damaged index (checksum mismatch)")
    start = _HEAD.size + (_CONTENT.size if checked else 0)
    expected = start + 16 * count + 16 * nrestarts + _CRC.size
    damaged = version == DAMAGE_FORMAT_VERSION
    columns: tuple[IndexColumn, ...] = ()
    if with_columns:
        # The section says its own size; what follows it is laid out as without it.
        if len(blob) < expected:
            raise IndexFormatError(
                f"{source}: damaged index ({len(blob)} bytes, too short for {count} records)"
            )
        columns, end = decode_columns(
            blob, expected - _CRC.size, len(blob) - _CRC.size, count, source
        )
        expected = end + _CRC.size
    if (len(blob) < expected if damaged else len(blob) != expected) or code not in _KINDS:
        raise IndexFormatError(
            f"{source}: damaged index ({len(blob)} bytes, expected {expected} for {count} records)"
        )
    content: ContentCheck | None = None
    if checked:
        content = ContentCheck(*_CONTENT.unpack_from(blob, _HEAD.size))
        if content.kind not in KINDS or content.crc >= 1 << 32:
            raise IndexFormatError(f"{source}: damaged index (unknown content check {content})")
    arrays = np.frombuffer(blob, dtype="<u8", count=2 * count + 2 * nrestarts, offset=start)
    policy: DamagePolicy = "raise"
    damage: tuple[DamageReport, ...] = ()
    if damaged:
        policy, damage = decode_damage(
            blob,
            expected - _CRC.size,
            len(blob) - _CRC.size,
            path=os.fspath(data_path),
            source=source,
        )
    restarts = arrays[2 * count :].reshape(-1, 2)
    starts = (restarts[:, 0] & MEMBER_BIT) != 0
    if bool(starts.any()) and not marked:
        raise IndexFormatError(f"{source}: damaged index (a restart offset beyond 2**63)")
    return Fields(
        compression=_KINDS[code],
        data_size=data_size,
        fingerprint=fp,
        offsets=arrays[:count],
        lengths=arrays[count : 2 * count],
        restarts=np.stack([restarts[:, 0] & ~MEMBER_BIT, restarts[:, 1]], axis=1),
        member_starts=starts,
        damage=damage,
        damage_policy=policy,
        data_verified=version != FORMAT_VERSION,
        content=content,
        columns=columns,
    )
