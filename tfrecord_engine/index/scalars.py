"""Reading one scalar feature out of a serialized ``Example``, for index columns.

The index layer sits below the Example codec (:mod:`tfrecord_engine.example`), so the
columns of an index (:mod:`.columns`) are read with this small reader of the wire format
instead. It follows TensorFlow's parser where an index column needs it, so that a value
it stores is what ``parse_single_example(record, {key: FixedLenFeature([], dtype)})``
returns (``tests/test_index_columns.py`` checks the two against each other):

- the top level may hold several ``features`` fields, which merge; other fields are
  skipped by wire type (a group makes the record malformed);
- a map entry holds a key and a value in either order; a later duplicate key replaces
  an earlier one;
- a Feature's kind is read from its first byte, and only its first list is read; an
  empty Feature is a missing one; an Int64List is packed or unpacked, read from its
  first element's tag.

What it returns for each record and key is a status (:data:`OK` and the value, or why
there is no single value) rather than an exception: a record without the feature is
data, not an error, until someone asks for its value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ..kernels.varint import Buffer, varint_reader

__all__ = [
    "ABSENT",
    "KIND_BYTES",
    "KIND_INT64",
    "MALFORMED",
    "OK",
    "OTHER_COUNT",
    "OTHER_KIND",
    "REASONS",
    "Found",
    "scalars_of",
]

#: One value of the column's kind.
OK: Final = 0
#: No such feature (or an empty Feature, which TensorFlow treats as missing).
ABSENT: Final = 1
#: The feature holds a list of another length than 1.
OTHER_COUNT: Final = 2
#: The feature holds values of another kind (floats, or bytes in an int64 column...).
OTHER_KIND: Final = 3
#: The record is not a valid serialized Example.
MALFORMED: Final = 4
#: What each status means, for messages ("record 7: feature 'label' is missing").
REASONS: Final = {
    ABSENT: "is missing",
    OTHER_COUNT: "does not hold exactly one value",
    OTHER_KIND: "holds values of another kind",
    MALFORMED: "cannot be read: the record is not a valid serialized Example",
}

#: The Feature oneof's field numbers, as kind codes (0x0A bytes_list, 0x12 float_list,
#: 0x1A int64_list are their tags).
KIND_BYTES: Final = 1
KIND_FLOAT: Final = 2
KIND_INT64: Final = 3
_KIND_OF_TAG: Final = {0x0A: KIND_BYTES, 0x12: KIND_FLOAT, 0x1A: KIND_INT64}
_MASK32: Final = (1 << 32) - 1

#: ``(status, kind, value)`` of one key in one record: ``value`` is an int or bytes
#: when ``status`` is :data:`OK` (``kind`` then says which), else ``None``.
Found = tuple[int, int, int | bytes | None]
_MISSING: Final[Found] = (ABSENT, 0, None)
_BROKEN: Final[Found] = (MALFORMED, 0, None)


class _Malformed(Exception):
    """The record is not a valid Example (turned into :data:`MALFORMED`, never raised
    out of this module)."""


def _malformed(reason: str, offset: int) -> _Malformed:
    del reason, offset  # a status, not a message: the record is MALFORMED
    return _Malformed()


#: One varint in ``buf[pos:end]``: ``(value, new pos)`` (the package's one reader).
_varint = varint_reader(_malformed)


def _limit(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """A nested message's end (clipped to the enclosing one, as a protobuf
    ``PushLimit``) and where its bytes start."""
    n, pos = _varint(buf, pos, end)
    return min(pos + (n & _MASK32), end), pos


def _skip(buf: Buffer, pos: int, end: int) -> int:
    """Skips one unknown top-level field by its wire type."""
    tag, pos = _varint(buf, pos, end)
    wire = tag & 7
    if wire == 0:
        return _varint(buf, pos, end)[1]
    if wire == 1 and end - pos >= 8:
        return pos + 8
    if wire == 2:
        return _limit(buf, pos, end)[0]
    if wire == 5 and end - pos >= 4:
        return pos + 4
    raise _Malformed  # a group, or a truncated fixed-size field


def _entries(buf: Buffer, wanted: Mapping[bytes, int]) -> dict[int, tuple[int, int]]:
    """The span of the ``Feature`` value of each wanted key found.

    As TensorFlow's single-record and dense paths: the last entry of a key wins, but an
    empty Feature does not replace an earlier non-empty one. An entry whose first byte
    names no kind spoils its key (TensorFlow reads the kind of every entry of a key it
    was asked for): its span is then ``(-1, -1)``.
    """
    found: dict[int, tuple[int, int]] = {}
    spoiled: set[int] = set()
    pos = 0
    end = len(buf)
    while pos < end:
        if buf[pos] != 0x0A:
            pos = _skip(buf, pos, end)
            continue
        features_end, pos = _limit(buf, pos + 1, end)
        while pos < features_end:
            if buf[pos] != 0x0A:
                raise _Malformed
            # One-byte lengths inline: this loop runs for every entry of every record.
            b = buf[pos + 1] if pos + 2 < features_end else 0x80
            if b < 0x80:
                pos += 2
                entry_end = min(pos + b, features_end)
            elif buf[pos + 2] < 0x80:
                entry_end = min(pos + 3 + ((b & 0x7F) | (buf[pos + 2] << 7)), features_end)
                pos += 3
            else:
                entry_end, pos = _limit(buf, pos + 1, features_end)
            key: Buffer = b""
            value = (0, 0)
            for _ in range(2):
                if pos + 1 >= entry_end:
                    raise _Malformed
                tag = buf[pos]
                n = buf[pos + 1]
                if tag < 0x80 and n < 0x80:
                    pos += 2
                elif tag < 0x80 and pos + 2 < entry_end and buf[pos + 2] < 0x80:
                    n = (n & 0x7F) | (buf[pos + 2] << 7)
                    pos += 3
                else:
                    tag, pos = _varint(buf, pos, entry_end)
                    n, pos = _varint(buf, pos, entry_end)
                    n &= _MASK32
                if n > entry_end - pos:
                    raise _Malformed
                if tag == 0x0A:
                    key = buf[pos : pos + n]
                elif tag == 0x12:
                    value = (pos, pos + n)
                else:
                    raise _Malformed
                pos += n
            if pos != entry_end:
                raise _Malformed
            column = wanted.get(bytes(key))
            if column is None:
                continue
            if value[0] == value[1]:
                found.setdefault(column, value)
                continue
            if buf[value[0]] not in _KIND_OF_TAG:
                spoiled.add(column)
            found[column] = value
        pos = features_end
    for column in spoiled:
        found[column] = (-1, -1)
    return found


def _value(buf: Buffer, start: int, end: int) -> Found:
    """The single value of the ``Feature`` at ``buf[start:end]``, or why there is none."""
    if start == end:
        return _MISSING
    kind = _KIND_OF_TAG.get(buf[start]) if start >= 0 else None
    if kind is None:
        return _BROKEN  # TensorFlow: "Unsupported datatype."
    list_end, pos = _limit(buf, start + 1, end)
    if kind == KIND_FLOAT:
        return (OTHER_KIND, kind, None)
    values: list[int | bytes] = []
    if kind == KIND_BYTES:
        while pos < list_end:
            if buf[pos] != 0x0A:
                raise _Malformed
            n, pos = _varint(buf, pos + 1, list_end)
            n &= _MASK32
            if n > list_end - pos:
                raise _Malformed
            values.append(bytes(buf[pos : pos + n]))
            pos += n
    elif pos < list_end and buf[pos] == 0x0A:
        # A packed run is read alone; whatever follows it in the list is not parsed.
        run_end, pos = _limit(buf, pos + 1, list_end)
        while pos < run_end and len(values) < 2:
            v, pos = _varint(buf, pos, run_end)
            values.append(v)
    else:
        while pos < list_end:
            if buf[pos] != 0x08:
                raise _Malformed
            v, pos = _varint(buf, pos + 1, list_end)
            values.append(v)
    if len(values) != 1:
        return (OTHER_COUNT, kind, None)
    value = values[0]
    if isinstance(value, int) and value >> 63:
        value -= 1 << 64  # int64 is two's complement on the wire
    return (OK, kind, value)


def scalars_of(record: Buffer, wanted: Mapping[bytes, int]) -> dict[int, Found]:
    """The value (or status) of each wanted key in one serialized Example.

    Args:
        record: one serialized ``Example``.
        wanted: feature key (UTF-8 bytes) -> column number.

    Returns:
        column number -> :data:`Found`, for every column of ``wanted``.

    Example:
        >>> rec = bytes.fromhex("0a0c0a0a0a016c12051a030a0107")  # {"l": int64 [7]}
        >>> scalars_of(rec, {b"l": 0, b"m": 1})
        {0: (0, 3, 7), 1: (1, 0, None)}
    """
    try:
        spans = _entries(record, wanted)
    except (_Malformed, IndexError):
        return dict.fromkeys(wanted.values(), _BROKEN)
    out = dict.fromkeys(wanted.values(), _MISSING)
    for column, (start, end) in spans.items():
        out[column] = _checked_value(record, start, end)
    return out


def _checked_value(buf: Buffer, start: int, end: int) -> Found:
    """:func:`_value`, a malformed one :data:`MALFORMED`: it spoils only its own key
    (TensorFlow parses the values of the keys it is asked for, and only those)."""
    try:
        return _value(buf, start, end)
    except (_Malformed, IndexError):
        return _BROKEN
