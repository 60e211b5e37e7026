"""Template decoding: records that share one byte layout, decoded as fixed-offset gathers.

Files are usually written by one program from one schema, so most records of a chunk
have the *same layout*: the same length, the same keys in the same order, the same
tags and length bytes, and differ only in the contents of their values. For such
records the lockstep walk (:mod:`.lockstep`) repeats identical work per record. Here
one record is walked once to build a :class:`Template`; every other record of the same
length is then checked against it in one gather (all structural bytes equal, and the
continuation bits of packed int64 payloads equal, so every varint has the same width),
and the values of all matching records are read at fixed offsets: a strided gather per
float or bytes feature, a fixed-width 7-bit recombination per int64 feature.

A record matches only if every byte that decides its parse equals the template's, so
a matching record parses exactly as the template record did — the same keys, kinds,
value counts and value spans — and its values are decoded by the same arithmetic as
the lockstep path. Records that match no template go through the lockstep walk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from . import lockstep
from .lockstep import KIND_BYTES, KIND_FLOAT, KIND_NONE

__all__ = ["FieldLayout", "Template", "build_template", "match_template"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
Bool = npt.NDArray[np.bool_]

# Templates hold varints of up to 8 bytes (values < 2**56); wider ones (negative int64
# among them) are left to the lockstep path, whose arithmetic covers every width.
_MAX_TEMPLATE_VARINT = 8


@dataclass(frozen=True)
class FieldLayout:
    """Where one requested key's values sit in every record of a template.

    Attributes:
        kind: the Feature kind (``KIND_NONE``: the key is missing or its Feature empty).
        offset: the values' first byte, relative to the record's start.
        size: payload bytes (floats, int64) — for bytes values, the values' lengths.
        count: number of values.
        value_offsets: bytes values' offsets (relative to the record's start); for int64,
            each varint's offset within the payload.
        widths: int64 varint widths (bytes).
    """

    kind: int
    offset: int = 0
    size: int = 0
    count: int = 0
    value_offsets: tuple[int, ...] = ()
    widths: tuple[int, ...] = ()


@dataclass(frozen=True, eq=False)
class Template:
    """The layout shared by a group of records (see the module docstring).

    The bytes that decide the parse are checked as little-endian 8-byte words: word
    ``k`` is read at ``word_at[k]`` (relative to the record's start) and must equal
    ``word[k]`` under ``mask[k]``, which is ``0xFF`` for a structural byte, ``0x80``
    (the continuation bit) for a packed int64 payload byte and ``0x00`` for value
    contents.

    Attributes:
        length: the records' length in bytes (at least 8).
        word_at: record-relative start of every checked word.
        word: the template record's words.
        mask: which bits of each word must match.
        fields: one :class:`FieldLayout` per requested key, in request order.
    """

    length: int
    word_at: I64
    word: npt.NDArray[np.uint64]
    mask: npt.NDArray[np.uint64]
    fields: tuple[FieldLayout, ...]


def build_template(
    buf: U8, start: int, end: int, keys: list[bytes], kinds: list[int]
) -> Template | None:
    """The template of record ``buf[start:end]``, or None if it cannot be one.

    A record qualifies when the lockstep walk takes it without fallback, every requested
    key it holds has the requested kind (a mismatch must raise, on the lockstep path),
    and its int64 varints are at most 9 bytes wide.
    """
    if end - start < 8:
        return None  # too short for word checks; such records are cheap to walk anyway
    s = np.array([start], np.int64)
    e = np.array([end], np.int64)
    table = lockstep.walk_examples(buf, s, e, keys)
    if bool(table.fallback[0]):
        return None
    length = end - start
    free = np.zeros(length, np.bool_)  # value contents: any byte goes
    is_cont = np.zeros(length, np.bool_)  # int64 payloads: continuation bits must match
    fields: list[FieldLayout] = []
    for i, want in enumerate(kinds):
        sel = np.flatnonzero(table.key_id == i)
        if sel.size == 0 or int(table.kind[sel[0]]) == KIND_NONE:
            fields.append(FieldLayout(KIND_NONE))
            continue
        j = int(sel[0])
        kind = int(table.kind[j])
        if kind != want:
            return None
        ls, le = table.list_start[j : j + 1], table.list_end[j : j + 1]
        layout = _field(buf, kind, ls, le, start)
        if layout is None:
            return None
        fields.append(layout)
        if kind == KIND_BYTES:
            for off, size in zip(layout.value_offsets, layout.widths, strict=True):
                free[off : off + size] = True
        elif kind == KIND_FLOAT:
            free[layout.offset : layout.offset + layout.size] = True
        else:
            is_cont[layout.offset : layout.offset + layout.size] = True
    bits = np.where(free, 0x00, np.where(is_cont, 0x80, 0xFF)).astype(np.uint8)
    word_at = _cover(np.flatnonzero(bits), length)
    window = np.lib.stride_tricks.as_strided(
        buf[start:end], shape=(length - 7, 8), strides=(1, 1), writeable=False
    )
    masks = np.lib.stride_tricks.as_strided(bits, shape=(length - 7, 8), strides=(1, 1))
    return Template(
        length=length,
        word_at=word_at,
        word=window[word_at].copy().view("<u8").reshape(-1),
        mask=masks[word_at].copy().view("<u8").reshape(-1),
        fields=tuple(fields),
    )


def _cover(positions: I64, length: int) -> I64:
    """Starts of 8-byte words covering every position (each word inside the record)."""
    starts: list[int] = []
    covered = -1
    for p in positions.tolist():
        if p > covered:
            at = min(p, length - 8)
            starts.append(at)
            covered = at + 7
    return np.asarray(starts, np.int64)


def _field(buf: U8, kind: int, ls: I64, le: I64, base: int) -> FieldLayout | None:
    """The layout of one list payload ``[ls, le)`` (a one-element batch)."""
    if kind == KIND_BYTES:
        vs, ve, counts, ok = lockstep.bytes_values(buf, ls, le)
        if not bool(ok[0]):
            return None
        offsets = tuple(int(v) - base for v in vs.tolist())
        sizes = tuple(int(v) for v in (ve - vs).tolist())
        return FieldLayout(kind, count=int(counts[0]), value_offsets=offsets, widths=sizes)
    if int(ls[0]) == int(le[0]):  # an empty list: present, no values
        return FieldLayout(kind, offset=int(ls[0]) - base, size=0, count=0)
    p_start, p_end, ok = lockstep.packed_span(buf, ls, le)
    if not bool(ok[0]):
        return None
    offset, size = int(p_start[0]) - base, int(p_end[0] - p_start[0])
    if kind == KIND_FLOAT:
        if size % 4:
            return None
        return FieldLayout(kind, offset=offset, size=size, count=size // 4)
    payload = buf[int(p_start[0]) : int(p_end[0])]
    ends = np.flatnonzero(payload < 0x80)
    if ends.size == 0 or int(ends[-1]) != size - 1:
        return None
    begins = np.concatenate(([0], ends[:-1] + 1))
    widths = ends - begins + 1
    if int(widths.max()) > _MAX_TEMPLATE_VARINT:
        return None
    return FieldLayout(
        kind,
        offset=offset,
        size=size,
        count=int(ends.size),
        value_offsets=tuple(begins.tolist()),
        widths=tuple(widths.tolist()),
    )


def match_template(buf: U8, starts: I64, ends: I64, template: Template) -> npt.NDArray[np.intp]:
    """Positions (in ``starts``) of the records that have ``template``'s layout."""
    cand = np.flatnonzero(ends - starts == template.length)
    if cand.size == 0 or template.word_at.size == 0:
        return cand
    window = np.lib.stride_tricks.as_strided(
        buf, shape=(buf.shape[0] - 7, 8), strides=(1, 1), writeable=False
    )
    words = window[starts[cand][:, None] + template.word_at].view("<u8")[..., 0]
    ok = ((words ^ template.word) & template.mask == 0).all(axis=1)
    hit: npt.NDArray[np.intp] = cand[ok]
    return hit


def template_values(buf: U8, starts: I64, layout: FieldLayout) -> npt.NDArray[np.generic]:
    """The values of ``layout`` for the records at ``starts``, ``[len(starts), count]``.

    Float and int64 values come as numeric arrays; bytes values as an object array.
    """
    m = starts.shape[0]
    if layout.kind == KIND_BYTES:
        out = np.empty((m, layout.count), dtype=object)
        for j, (off, size) in enumerate(zip(layout.value_offsets, layout.widths, strict=True)):
            if size == 0:
                out[:, j] = b""
                continue
            # A void view turns each row into one bytes object in C (an "S" view
            # would strip trailing NUL bytes).
            out[:, j] = _rows(buf, starts + off, size).view(f"V{size}").reshape(-1).tolist()
        return out
    raw = _rows(buf, starts + layout.offset, layout.size)
    if layout.kind == KIND_FLOAT:
        floats: npt.NDArray[np.float32] = raw.view("<f4").astype(np.float32, copy=False)
        return floats
    if max(layout.widths, default=1) == 1:
        return raw.astype(np.int64)
    # Every varint has the same offset and width in every record: read 8 bytes at each
    # and pack their 7-bit groups (lockstep.swar_varints).
    at = starts[:, None] + (layout.offset + np.asarray(layout.value_offsets, np.int64))
    widths = np.asarray(layout.widths, np.int64)
    values: npt.NDArray[np.int64] = lockstep.swar_varints(_words(buf, at), widths).view(np.int64)
    return values


def _words(buf: U8, at: I64) -> npt.NDArray[np.uint64]:
    """The 8 bytes at each position as a little-endian uint64 (zeros past the end)."""
    last = buf.shape[0] - 8
    if buf.shape[0] >= 8 and int(at.max()) <= last:
        return _rows(buf, at, 8).view("<u8")[..., 0]
    # Near the end of the buffer (the last record of a joined batch): pad a copy of
    # the tail; the widths mask the padding out.
    tail_start = max(0, min(int(at.min()), buf.shape[0] - 8))
    tail = np.concatenate([buf[tail_start:], np.zeros(8, np.uint8)])
    return _rows(tail, at - tail_start, 8).view("<u8")[..., 0]


def _rows(buf: U8, at: I64, size: int) -> U8:
    """``buf[at[j] : at[j] + size]`` for every j, as a ``[*at.shape, size]`` array.

    Every span must lie inside ``buf`` (8-byte words of a varint near a record's end
    run into the next record's bytes or the file's footer, never past the buffer).
    """
    if size == 0:
        return np.zeros((*at.shape, 0), np.uint8)
    window = np.lib.stride_tricks.as_strided(
        buf, shape=(buf.shape[0] - size + 1, size), strides=(1, 1), writeable=False
    )
    rows: U8 = window[at]
    return rows
