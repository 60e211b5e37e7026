"""Bounds-checked reading of the Example / SequenceExample wire format.

The messages (``proto/feature.proto``, ``proto/example.proto``)::

    Example         { Features features = 1; }
    SequenceExample { Features context = 1; FeatureLists feature_lists = 2; }
    Features        { map<string, Feature> feature = 1; }        // entry: key = 1, value = 2
    FeatureLists    { map<string, FeatureList> feature_list = 1; }
    FeatureList     { repeated Feature feature = 1; }
    Feature         { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
                                   Int64List int64_list = 3; } }

This module follows TensorFlow's fast parser (``example_proto_fast_parsing.cc``), not
generic protobuf, because parsing parity is the point:

- the top level may hold several ``features`` fields (concatenated Examples merge);
  unknown top-level fields are skipped by wire type, groups are rejected;
- inside ``Features`` only map entries are allowed; an entry holds exactly two fields,
  key and value, in either order; a later duplicate key replaces an earlier one;
- a Feature's kind is read from its first byte; an empty Feature has no kind and is
  treated as missing; Int64List/FloatList accept packed and unpacked values,
  read from the first element's tag (see :func:`decode_feature`).

- a nested message (Features, map entry, list, packed int64s) is read under a protobuf
  ``PushLimit`` that never reaches past the enclosing one, so a length that overruns it
  means "to the end"; strings, bytes and packed floats are checked strictly.

Nothing is sliced or allocated from an unchecked length, varints are at most 10 bytes,
and nothing recurses, so hostile input raises
:class:`~tfrecord_engine.errors.MalformedExampleError` and never anything else.
``decode_example`` uses :mod:`.pbwire` instead, which follows protobuf itself.
Feature values are decoded lazily (:func:`decode_feature`) so that, as in TensorFlow, a
malformed value under a key nobody asked for is not an error.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from ..errors import MalformedExampleError
from .varints import NUMPY_MIN_BYTES, decode_packed, varint_reader

__all__ = [
    "KIND_BYTES",
    "KIND_FLOAT",
    "KIND_INT64",
    "KIND_NONE",
    "NOT_A_STEP",
    "PARSE_FAILED",
    "Duplicates",
    "FeatureMap",
    "RawValues",
    "Span",
    "decode_feature",
    "example_feature_map",
    "feature_kind",
    "feature_list_steps",
    "sequence_example_maps",
]

# The Feature oneof field numbers double as kind codes.
KIND_NONE = 0
KIND_BYTES = 1
KIND_FLOAT = 2
KIND_INT64 = 3

Span = tuple[int, int]
"""A half-open byte range ``[start, end)`` within one serialized record."""
FeatureMap = dict[bytes, Span]
"""Feature key (raw UTF-8 bytes) -> span of its serialized ``Feature`` message."""
RawValues = npt.NDArray[np.int64] | list[int] | npt.NDArray[np.float32] | list[bytes]
"""int64 values (an array, or a list of ints for short lists), float32 array, or bytes."""

_MASK32 = (1 << 32) - 1


#: The start of every message :func:`_fail` builds.
PARSE_FAILED = "Could not parse example input: "


def _fail(reason: str, offset: int) -> MalformedExampleError:
    return MalformedExampleError(f"{PARSE_FAILED}{reason} at byte {offset}", offset=offset)


#: Reads a varint of at most 10 bytes in ``buf[pos:end]``; returns (value, new pos).
_varint = varint_reader(_fail)


def _length(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Reads a length prefix and checks it against the bytes left before ``end``."""
    n, pos = _varint(buf, pos, end)
    # protobuf reads lengths as 32-bit varints (higher bits dropped).
    n &= _MASK32
    if n > end - pos:
        raise _fail(f"length {n} exceeds the {end - pos} bytes remaining", pos)
    return n, pos


def _limit(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Reads the length of a nested message; returns (its end, new pos).

    TensorFlow reads nested messages under a protobuf ``PushLimit``, which never reaches
    past the enclosing limit: a length that overruns it just means "to the end". Strings
    and raw bytes (:func:`_length`) are checked strictly instead.
    """
    n, pos = _varint(buf, pos, end)
    return min(pos + (n & _MASK32), end), pos


def _skip_unknown(buf: bytes, pos: int, end: int) -> int:
    """Skips one unknown field by wire type, as TensorFlow's ``SkipExtraneousTag``."""
    start = pos
    tag, pos = _varint(buf, pos, end)
    wire_type = tag & 7
    if wire_type == 0:
        _, pos = _varint(buf, pos, end)
        return pos
    if wire_type == 1:
        if end - pos < 8:
            raise _fail("truncated fixed64 field", start)
        return pos + 8
    if wire_type == 2:
        n, pos = _varint(buf, pos, end)
        # TensorFlow ignores a failed skip here: an overlong unknown field ends the input.
        return min(pos + (n & _MASK32), end)
    if wire_type == 5:
        if end - pos < 4:
            raise _fail("truncated fixed32 field", start)
        return pos + 4
    raise _fail(f"unsupported wire type {wire_type} (groups are not supported)", start)


def _read_features(
    buf: bytes, pos: int, end: int, out: FeatureMap, dups: Duplicates | None
) -> None:
    """Reads the map entries of one ``Features`` message in ``buf[pos:end]`` into ``out``."""
    while pos < end:
        if buf[pos] != 0x0A:
            raise _fail("expected a feature map entry", pos)
        pos += 1
        # Inline 1-byte varints: this loop is the per-record hot path.
        if pos < end and buf[pos] < 0x80:
            entry_end = pos + 1 + buf[pos]
            pos += 1
        elif pos + 1 < end and buf[pos + 1] < 0x80:
            entry_end = pos + 2 + ((buf[pos] & 0x7F) | (buf[pos + 1] << 7))
            pos += 2
        else:
            entry_end, pos = _limit(buf, pos, end)
        entry_end = min(entry_end, end)
        # Fast path for what writers emit: key (1-byte length), then value.
        if pos + 1 < entry_end and buf[pos] == 0x0A and buf[pos + 1] < 0x80:
            kend = pos + 2 + buf[pos + 1]
            if kend + 1 < entry_end and buf[kend] == 0x12:
                b = buf[kend + 1]
                if b < 0x80:
                    vstart = kend + 2
                    vend = vstart + b
                elif kend + 2 < entry_end and buf[kend + 2] < 0x80:
                    vstart = kend + 3
                    vend = vstart + ((b & 0x7F) | (buf[kend + 2] << 7))
                else:
                    vend = -1
                if vend == entry_end:
                    _store(buf, out, dups, buf[pos + 2 : kend], (vstart, vend))
                    pos = entry_end
                    continue
        key = b""
        value: Span = (0, 0)
        for _ in range(2):
            if pos >= entry_end:
                raise _fail("a feature map entry needs a key and a value", pos)
            tag = buf[pos]
            if tag < 0x80 and pos + 1 < entry_end and buf[pos + 1] < 0x80:
                n = buf[pos + 1]
                pos += 2
                if n > entry_end - pos:
                    raise _fail(f"length {n} exceeds the {entry_end - pos} bytes remaining", pos)
            elif tag < 0x80 and pos + 2 < entry_end and buf[pos + 2] < 0x80:
                n = (buf[pos + 1] & 0x7F) | (buf[pos + 2] << 7)
                pos += 3
                if n > entry_end - pos:
                    raise _fail(f"length {n} exceeds the {entry_end - pos} bytes remaining", pos)
            else:
                tag, pos = _varint(buf, pos, entry_end)
                n, pos = _length(buf, pos, entry_end)
            if tag == 0x0A:
                key = buf[pos : pos + n]
            elif tag == 0x12:
                value = (pos, pos + n)
            else:
                raise _fail(f"unexpected tag {tag} in a feature map entry", pos)
            pos += n
        if pos != entry_end:
            raise _fail("extra fields in a feature map entry", pos)
        _store(buf, out, dups, key, value)


_KIND_TAGS = (0x0A, 0x12, 0x1A)


class Duplicates:
    """What TensorFlow still sees of entries that a later duplicate key replaced.

    Attributes:
        shadowed: for a key whose last entry is an empty Feature, the last non-empty
            entry before it (TensorFlow's single-record and dense paths skip empty
            Features instead of letting them win).
        unsupported: keys with an earlier entry whose kind byte is invalid: TensorFlow
            reads the kind of every entry of a requested key, so that still fails.
    """

    __slots__ = ("shadowed", "unsupported")

    def __init__(self) -> None:
        self.shadowed: FeatureMap = {}
        self.unsupported: set[bytes] = set()


def _store(buf: bytes, out: FeatureMap, dups: Duplicates | None, key: bytes, value: Span) -> None:
    # Last one wins; re-insert so that iteration order follows the winning entry.
    prior = out.pop(key, None)
    out[key] = value
    if dups is None or prior is None:
        return
    if prior[0] != prior[1] and buf[prior[0]] not in _KIND_TAGS:
        dups.unsupported.add(key)
    if value[0] != value[1]:
        dups.shadowed.pop(key, None)
    elif prior[0] != prior[1]:
        dups.shadowed[key] = prior


def example_feature_map(buf: bytes, dups: Duplicates | None = None) -> FeatureMap:
    """Splits a serialized ``Example`` into its features, without decoding values.

    Args:
        buf: one serialized Example (concatenated Examples merge, later keys win).
        dups: if given, receives what TensorFlow still sees of replaced duplicates.

    Returns:
        Feature key (UTF-8 bytes) -> span of the serialized ``Feature``.

    Raises:
        MalformedExampleError: the bytes are not a valid Example.

    Example:
        >>> example_feature_map(b"\\n\\t\\n\\x07\\n\\x01x\\x12\\x02\\x1a\\x00")
        {b'x': (9, 11)}
    """
    out: FeatureMap = {}
    pos = 0
    end = len(buf)
    while pos < end:
        if buf[pos] == 0x0A:
            features_end, pos = _limit(buf, pos + 1, end)
            _read_features(buf, pos, features_end, out, dups)
            pos = features_end
        else:
            pos = _skip_unknown(buf, pos, end)
    return out


def _read_map_in_order(buf: bytes, pos: int, end: int, out: FeatureMap) -> None:
    """Reads a map whose entries must be exactly ``key`` then ``value``.

    TensorFlow's SequenceExample parser is stricter than its Example parser here.
    """
    while pos < end:
        if buf[pos] != 0x0A:
            raise _fail("expected a map entry", pos)
        entry_end, pos = _limit(buf, pos + 1, end)
        if pos >= entry_end or buf[pos] != 0x0A:
            raise _fail("a map entry must start with its key", pos)
        n, pos = _length(buf, pos + 1, entry_end)
        key = buf[pos : pos + n]
        pos += n
        if pos >= entry_end or buf[pos] != 0x12:
            raise _fail("a map entry must hold a value after its key", pos)
        n, pos = _length(buf, pos + 1, entry_end)
        value = (pos, pos + n)
        pos += n
        if pos != entry_end:
            raise _fail("extra fields in a map entry", pos)
        out.pop(key, None)
        out[key] = value


def sequence_example_maps(buf: bytes) -> tuple[FeatureMap, FeatureMap]:
    """Splits a serialized ``SequenceExample`` into context features and feature lists.

    Returns:
        ``(context, feature_lists)``: key -> span of a serialized ``Feature`` (context)
        or ``FeatureList`` (feature_lists).

    Raises:
        MalformedExampleError: the bytes are not a valid SequenceExample.
    """
    context: FeatureMap = {}
    lists: FeatureMap = {}
    pos = 0
    end = len(buf)
    while pos < end:
        tag = buf[pos]
        if tag in (0x0A, 0x12):
            map_end, pos = _limit(buf, pos + 1, end)
            _read_map_in_order(buf, pos, map_end, context if tag == 0x0A else lists)
            pos = map_end
        else:
            pos = _skip_unknown(buf, pos, end)
    return context, lists


#: :func:`feature_list_steps`'s reason for a step that is not tagged as a Feature.
NOT_A_STEP = "expected a Feature in a FeatureList"


def feature_list_steps(buf: bytes, span: Span) -> Iterator[Span]:
    """The spans of the ``Feature`` messages (steps) of one serialized ``FeatureList``.

    As TensorFlow's SequenceExample parser: after a step whose Int64List/FloatList
    starts with a packed run, the FeatureList is read on from the end of that run, not
    from the end of the step. Whatever followed the run in its list is read as further
    steps (an empty packed run ``0a 00`` reads as an empty step; anything but a ``0x0A``
    tag fails). Writers put nothing after the run, where both readings agree.

    Raises:
        MalformedExampleError: a step does not start with a ``Feature`` tag
            (:data:`NOT_A_STEP`), or its length overruns the FeatureList (TensorFlow
            checks that strictly here).
    """
    pos, end = span
    while pos < end:
        if buf[pos] != 0x0A:
            raise _fail(NOT_A_STEP, pos)
        n, pos = _length(buf, pos + 1, end)
        step_end = pos + n
        yield pos, step_end
        pos = _packed_run_end(buf, pos, step_end)


def _packed_run_end(buf: bytes, pos: int, end: int) -> int:
    """Where the packed run that starts the numeric list of ``buf[pos:end]`` ends.

    ``end`` if the Feature is empty, a BytesList, or its list does not start with a
    packed run (a malformed header is left to :func:`decode_feature` to report).
    """
    if end - pos < 3 or buf[pos] not in (0x12, 0x1A):
        return end
    try:
        list_end, start = _limit(buf, pos + 1, end)
        if start >= list_end or buf[start] != 0x0A:
            return end
        return _packed_run(buf, start, list_end)[1]
    except MalformedExampleError:
        return end


def _varints(buf: bytes, pos: int, end: int) -> npt.NDArray[np.int64] | list[int]:
    """Decodes the packed varints in ``buf[pos:end]`` as int64 (two's complement).

    Short runs come back as a list of ints: converting each record's few ints to an
    array costs more than one conversion per batch later.
    """
    if end - pos >= NUMPY_MIN_BYTES:
        return decode_packed(buf, pos, end, _fail).view(np.int64)
    values: list[int] = []
    append = values.append
    while pos < end:
        b = buf[pos]
        if b < 0x80:
            append(b)
            pos += 1
            continue
        v, pos = _varint(buf, pos, end)
        append(v - (1 << 64) if v >> 63 else v)
    return values


# TensorFlow reads a list from its first element's tag: a packed run is read alone and
# whatever follows it in the list is never parsed; an unpacked element means all must be
# unpacked.
def _packed_run(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """``(start, end)`` of the packed run whose tag is at ``buf[pos]``.

    TensorFlow reads it under a ``PushLimit``: a length past the list means "to the end
    of the list" (only its Example parser checks a packed FloatList's length strictly,
    which the caller does).
    """
    run_end, pos = _limit(buf, pos + 1, end)
    return pos, run_end


def _decode_int64(buf: bytes, pos: int, end: int) -> npt.NDArray[np.int64] | list[int]:
    if pos >= end:
        return []
    if buf[pos] == 0x0A:  # packed: one run, the rest is ignored
        run_start, run_end = _packed_run(buf, pos, end)
        return _varints(buf, run_start, run_end)
    values: list[int] = []
    while pos < end:
        tag = buf[pos]
        if tag != 0x08:
            if tag == 0x0A:
                raise _fail("a packed run after unpacked values in an Int64List", pos)
            raise _fail(f"unexpected tag {tag} in an Int64List", pos)
        v, pos = _varint(buf, pos + 1, end)
        values.append(v - (1 << 64) if v >> 63 else v)
    return values


def _decode_float(buf: bytes, pos: int, end: int, strict: bool) -> npt.NDArray[np.float32]:
    if pos >= end:
        return np.zeros(0, dtype=np.float32)
    if buf[pos] == 0x0A:  # packed: one run, the rest is ignored
        if strict:
            # SequenceExample: the run is read under a limit, 4 bytes a value.
            run_start, run_end = _packed_run(buf, pos, end)
            n = run_end - run_start
            if n % 4:
                raise _fail(f"a packed FloatList of {n} bytes (not a multiple of 4)", run_start)
        else:
            # Example: the length is checked strictly; a ragged tail of a run is skipped.
            n, run_start = _length(buf, pos + 1, end)
        out = np.frombuffer(buf, dtype="<f4", count=n // 4, offset=run_start)
        return out.astype(np.float32, copy=False)
    count = 0
    start = pos
    while pos < end:
        tag = buf[pos]
        if tag != 0x0D:
            if tag == 0x0A:
                raise _fail("a packed run after unpacked values in a FloatList", pos)
            raise _fail(f"unexpected tag {tag} in a FloatList", pos)
        if end - pos < 5:
            raise _fail("truncated float", pos)
        pos += 5
        count += 1
    # Unpacked floats sit every 5 bytes after their tag: one strided view reads them all.
    raw = np.frombuffer(buf, dtype=np.uint8, count=5 * count, offset=start).reshape(count, 5)
    values: npt.NDArray[np.float32] = raw[:, 1:].copy().view("<f4").reshape(count)
    return values.astype(np.float32, copy=False)


def _decode_bytes(buf: bytes, pos: int, end: int) -> list[bytes]:
    out: list[bytes] = []
    while pos < end:
        if buf[pos] != 0x0A:
            raise _fail(f"unexpected tag {buf[pos]} in a BytesList", pos)
        # A value under 128 bytes that fits (its length one byte) is read here; any other
        # length, and every error, the way _length reads it (840 -> 500 ns for 4 tags).
        n = buf[pos + 1] if pos + 1 < end else 0x80
        if n < 0x80 and n <= end - pos - 2:
            pos += 2
        else:
            n, pos = _length(buf, pos + 1, end)
        out.append(buf[pos : pos + n])
        pos += n
    return out


def feature_kind(buf: bytes, span: Span) -> int:
    """The kind of the ``Feature`` at ``span`` from its first byte (``KIND_NONE`` if empty).

    Raises:
        MalformedExampleError: the first byte names no known kind ("Unsupported datatype").
    """
    start, end = span
    if start == end:
        return KIND_NONE
    tag = buf[start]
    if tag == 0x1A:
        return KIND_INT64
    if tag == 0x12:
        return KIND_FLOAT
    if tag == 0x0A:
        return KIND_BYTES
    raise MalformedExampleError("Unsupported datatype.", offset=start)


def decode_feature(
    buf: bytes, span: Span, kind: int, *, strict: bool = False, whole: bool = False
) -> RawValues:
    """Decodes the values of the ``Feature`` at ``span`` whose kind is ``kind``.

    Only the first list is read (TensorFlow reads the kind from the first byte and ignores
    what follows the list). ``kind`` must come from :func:`feature_kind` and not be
    ``KIND_NONE``. ``strict`` rejects list lengths that overrun the Feature (TensorFlow's
    SequenceExample parser does; its Example parser reads to the end instead).
    ``whole`` rejects a Feature with anything after its list (a second list, an unknown
    field): TensorFlow's SequenceExample parser refuses such a step of a FeatureList.

    An Int64List/FloatList is read as TensorFlow does, from its first element's tag: a
    packed first element is read alone and the rest of the list is ignored unparsed
    (but see :func:`feature_list_steps`); an unpacked first element requires every
    element to be unpacked.

    Returns:
        int64 values (array, or list for short lists), float32 array (a read-only view of
        ``buf`` when packed), or a list of bytes.
    """
    start, end = span
    pos = start + 1
    if pos < end and buf[pos] < 0x80:
        list_end = pos + 1 + buf[pos]
        pos += 1
        if list_end > end:
            if strict:
                raise _fail(f"length {list_end - pos} exceeds the {end - pos} bytes remaining", pos)
            list_end = end
    elif strict:
        n, pos = _length(buf, pos, end)
        list_end = pos + n
    else:
        list_end, pos = _limit(buf, pos, end)
    if whole and list_end != end:
        raise _fail(f"{end - list_end} bytes of other fields follow the value list", list_end)
    if kind == KIND_INT64:
        # Fast path: one packed run filling the list (what every writer emits).
        if pos + 1 < list_end and buf[pos] == 0x0A and pos + 2 + buf[pos + 1] == list_end:
            return _varints(buf, pos + 2, list_end)
        return _decode_int64(buf, pos, list_end)
    if kind == KIND_FLOAT:
        return _decode_float(buf, pos, list_end, strict)
    return _decode_bytes(buf, pos, list_end)
