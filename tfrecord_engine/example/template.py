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

A *flexible* template lets one packed int64 list vary in length (ids drawn from a
large range have varints of different widths, so no two records need share a
length). The bytes before that list are checked from the record's start, the bytes
after it from the record's end, and every length field that encloses it (the
Example's, the map entry's, the Feature's, the list's, the packed field's) must hold
the template's value plus the record's length difference, in the same number of bytes.
The list itself is decoded like any packed run (:func:`lockstep.varint_runs`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..kernels.words import read_rows
from . import lockstep
from .lockstep import KIND_BYTES, KIND_FLOAT, KIND_INT64, KIND_NONE

__all__ = [
    "FieldLayout",
    "Group",
    "Template",
    "TemplateCosts",
    "build_template",
    "match_template",
    "template_rows",
    "template_values",
]

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
        offset: the values' first byte, from the record's start (from its end, as a
            negative number, when ``from_end``).
        size: payload bytes (floats, int64).
        count: number of values.
        value_offsets: bytes values' offsets (like ``offset``); for int64, each
            varint's offset within the payload.
        widths: int64 varint widths, or bytes values' lengths.
        from_end: the field lies after a flexible template's variable list.
        variable: this is the flexible template's variable int64 list.
    """

    kind: int
    offset: int = 0
    size: int = 0
    count: int = 0
    value_offsets: tuple[int, ...] = ()
    widths: tuple[int, ...] = ()
    from_end: bool = False
    variable: bool = False


@dataclass(frozen=True, eq=False)
class Template:
    """The layout shared by a group of records (see the module docstring).

    The bytes that decide the parse are checked as little-endian 8-byte words: word
    ``k`` is read at ``head_at[k]`` from the record's start (``tail_at[k]``, negative,
    from its end) and must equal the template's word under its mask, which is ``0xFF``
    for a structural byte, ``0x80`` (the continuation bit) for an int64 payload byte or
    a length field that varies, and ``0x00`` for value contents.

    Attributes:
        length: the template record's length in bytes (at least 8).
        head_at, head_word, head_mask: words checked from the start.
        tail_at, tail_word, tail_mask: words checked from the end (flexible only).
        var_start: the variable list's payload start (flexible only, else -1).
        var_tail: bytes from the variable list's end to the record's end.
        var_lengths: ``(position, width, value)`` of each enclosing length field.
        fields: one :class:`FieldLayout` per requested key, in request order.
    """

    length: int
    head_at: I64
    head_word: npt.NDArray[np.uint64]
    head_mask: npt.NDArray[np.uint64]
    tail_at: I64
    tail_word: npt.NDArray[np.uint64]
    tail_mask: npt.NDArray[np.uint64]
    var_start: int
    var_tail: int
    var_lengths: tuple[tuple[int, int, int], ...]
    fields: tuple[FieldLayout, ...]

    @property
    def flexible(self) -> bool:
        """Whether one int64 list may vary in length."""
        return self.var_start >= 0


@dataclass(frozen=True)
class Group:
    """The records of a chunk that match a template.

    Attributes:
        pos: their positions in the chunk.
        template: the template.
        var_values, var_counts: the variable list's values and counts (flexible only).
    """

    pos: npt.NDArray[np.intp]
    template: Template
    var_values: npt.NDArray[np.int64] | None = None
    var_counts: npt.NDArray[np.int64] | None = None


def build_template(
    buf: U8, start: int, end: int, keys: list[bytes], kinds: list[int], *, flexible: bool = False
) -> Template | None:
    """The template of record ``buf[start:end]``, or None if it cannot be one.

    A record qualifies when the lockstep walk takes it without fallback, every requested
    key it holds has the requested kind (a mismatch must raise, on the lockstep path),
    and its int64 varints are at most 8 bytes wide. A flexible template also needs a
    non-empty packed int64 list (the longest one becomes the variable one).
    """
    length = end - start
    if length < 8:
        return None  # too short for word checks; such records are cheap to walk anyway
    table = lockstep.walk_examples(
        buf, np.array([start], np.int64), np.array([end], np.int64), keys
    )
    if bool(table.fallback[0]):
        return None
    lists: list[tuple[int, I64, I64] | None] = []
    for i, want in enumerate(kinds):
        sel = np.flatnonzero(table.key_id == i)
        if sel.size == 0 or int(table.kind[sel[0]]) == KIND_NONE:
            lists.append(None)
            continue
        j = int(sel[0])
        if int(table.kind[j]) != want:
            return None
        lists.append((want, table.list_start[j : j + 1], table.list_end[j : j + 1]))
    var = -1
    if flexible:
        sizes = [
            int(item[2][0] - item[1][0]) if item is not None and item[0] == KIND_INT64 else 0
            for item in lists
        ]
        var = int(np.argmax(sizes)) if max(sizes, default=0) > 0 else -1
        if var < 0:
            return None
    fields: list[FieldLayout] = []
    for i, item in enumerate(lists):
        layout = None if item is None else _field(buf, *item, start, variable=i == var)
        if item is not None and layout is None:
            return None
        fields.append(layout or FieldLayout(KIND_NONE))
    bits = _bits(fields, length)
    record = buf[start:end]
    if var < 0:
        head_at = _cover(np.flatnonzero(bits), 0, length)
        word, mask = _words_of(record, bits, head_at)
        return Template(length, head_at, word, mask, *_no_words(), -1, 0, (), tuple(fields))
    v = fields[var]
    var_start, var_end = v.offset, v.offset + v.size
    enclosing = _enclosing(bytes(record), var_start, var_end)
    if enclosing is None:
        return None
    for pos, width, _ in enclosing:
        bits[pos : pos + width] = 0x80  # the width is checked; the value is computed
    head = np.flatnonzero(bits[:var_start])
    tail = np.flatnonzero(bits[var_end:]) + var_end
    head_at = _cover(head, 0, length)
    tail_at = _cover(tail, 0, length)
    fields = [
        _from_end(f, length) if f.kind != KIND_NONE and not f.variable and _after(f, var_end) else f
        for f in fields
    ]
    return Template(
        length,
        head_at,
        *_words_of(record, _keep(bits, 0, var_start), head_at),
        tail_at - length,
        *_words_of(record, _keep(bits, var_end, length), tail_at),
        var_start,
        length - var_end,
        tuple(enclosing),
        tuple(fields),
    )


def _after(field: FieldLayout, var_end: int) -> bool:
    """Whether a field's values lie after the variable list (checked from the end)."""
    if field.kind == KIND_BYTES:
        return bool(field.value_offsets) and field.value_offsets[0] >= var_end
    return field.offset >= var_end


def _from_end(field: FieldLayout, length: int) -> FieldLayout:
    if field.kind == KIND_BYTES:
        offsets = tuple(o - length for o in field.value_offsets)
        return replace(field, value_offsets=offsets, from_end=True)
    return replace(field, offset=field.offset - length, from_end=True)


def _bits(fields: list[FieldLayout], length: int) -> U8:
    """Per byte of the record: 0xFF structural, 0x80 int64 payload, 0x00 contents."""
    bits = np.full(length, 0xFF, np.uint8)
    for f in fields:
        if f.kind == KIND_BYTES:
            for off, size in zip(f.value_offsets, f.widths, strict=True):
                bits[off : off + size] = 0x00
        elif f.kind == KIND_FLOAT or f.variable:
            bits[f.offset : f.offset + f.size] = 0x00
        elif f.kind == KIND_INT64:
            bits[f.offset : f.offset + f.size] = 0x80
    return bits


def _keep(bits: U8, lo: int, hi: int) -> U8:
    out = np.zeros_like(bits)
    out[lo:hi] = bits[lo:hi]
    return out


def _cover(positions: I64, lo: int, length: int) -> I64:
    """Starts of 8-byte words covering every position (each word inside the record)."""
    starts: list[int] = []
    covered = -1
    for p in positions.tolist():
        if p > covered:
            at = max(lo, min(p, length - 8))
            starts.append(at)
            covered = at + 7
    return np.asarray(starts, np.int64)


def _words_of(
    record: U8, bits: U8, at: I64
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """The template record's words at ``at`` and the masks of the bits to compare."""
    word = read_rows(record, at, 8).view("<u8").reshape(-1)
    mask = read_rows(bits, at, 8).view("<u8").reshape(-1)
    return word, mask


def _no_words() -> tuple[I64, npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    return np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.uint64)


def _length_field(record: bytes, tag_at: int) -> tuple[int, int, int, int]:
    """``(length_position, width, payload_start, payload_end)`` of a field at ``tag_at``."""
    at = tag_at + 1
    value = shift = width = 0
    while True:
        byte = record[at + width]
        value |= (byte & 0x7F) << shift
        width += 1
        shift += 7
        if byte < 0x80:
            break
    return at, width, at + width, at + width + value


def _enclosing(record: bytes, a: int, b: int) -> list[tuple[int, int, int]] | None:
    """``(position, width, value)`` of every length field enclosing payload ``[a, b)``.

    The record is canonical (the lockstep walk took it): one ``features`` field, entries
    of key then value, a Feature holding one packed Int64List.
    """
    pos, width, start, end = _length_field(record, 0)
    out = [(pos, width, end - start)]
    at = start
    while at < end:
        pos, width, e_start, e_end = _length_field(record, at)
        if e_start <= a and b <= e_end:
            out.append((pos, width, e_end - e_start))
            _, _, _, key_end = _length_field(record, e_start)
            pos, width, v_start, v_end = _length_field(record, key_end)
            out.append((pos, width, v_end - v_start))
            pos, width, l_start, l_end = _length_field(record, v_start)
            out.append((pos, width, l_end - l_start))
            pos, width, p_start, p_end = _length_field(record, l_start)
            out.append((pos, width, p_end - p_start))
            if (p_start, p_end) != (a, b) or max(w for _, w, _ in out) > 8:
                return None
            return out
        at = e_end
    return None


def _field(
    buf: U8, kind: int, ls: I64, le: I64, base: int, *, variable: bool = False
) -> FieldLayout | None:
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
    if variable:
        return FieldLayout(kind, offset=offset, size=size, variable=True)
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


def _check(
    buf: U8, base: I64, at: I64, word: npt.NDArray[np.uint64], mask: npt.NDArray[np.uint64]
) -> Bool:
    if at.size == 0:
        return np.ones(base.shape[0], np.bool_)
    compiled = kernels.match_words(buf, base, at, word, mask)
    if compiled is not None:
        return compiled
    words = lockstep.read_words(buf, base[:, None] + at)
    ok: Bool = ((words ^ word) & mask == 0).all(axis=1)
    return ok


def match_template(buf: U8, starts: I64, ends: I64, template: Template) -> Group:
    """The records (positions in ``starts``) that have ``template``'s layout."""
    lengths = ends - starts
    t = template
    if not t.flexible:
        cand = np.flatnonzero(lengths == t.length)
        ok = _check(buf, starts[cand], t.head_at, t.head_word, t.head_mask)
        return Group(cand[ok], t)
    cand = np.flatnonzero(lengths >= max(8, t.var_start + t.var_tail))
    s, e = starts[cand], ends[cand]
    ok = _check(buf, s, t.head_at, t.head_word, t.head_mask)
    ok &= _check(buf, e, t.tail_at, t.tail_word, t.tail_mask)
    delta = lengths[cand] - t.length
    if not kernels.match_lengths(buf, s, ok, t.var_lengths, delta):
        for pos, width, value in t.var_lengths:
            got = lockstep.swar_varints(
                lockstep.read_words(buf, s + pos), np.full(s.shape[0], width, np.int64)
            )
            ok &= got.view(np.int64) == value + delta
    cand = cand[ok]
    values, counts, runs_ok = lockstep.varint_runs(
        buf, starts[cand] + t.var_start, ends[cand] - t.var_tail
    )
    if not runs_ok.all():
        values = values[np.repeat(runs_ok, counts)]
        cand, counts = cand[runs_ok], counts[runs_ok]
    return Group(cand, t, values, counts)


def template_values(
    buf: U8, starts: I64, ends: I64, layout: FieldLayout, *, as_void: bool = False
) -> npt.NDArray[Any]:
    """The values of ``layout`` for the records ``[starts, ends)``, ``[n, count]``.

    Float and int64 values come as numeric arrays; bytes values as an object array, or
    with ``as_void`` (when all of them have one size > 0) as a ``V<size>`` array that
    the caller turns into ``bytes`` later.
    """
    m = starts.shape[0]
    base = ends if layout.from_end else starts
    if layout.kind == KIND_BYTES and as_void and len(set(layout.widths)) == 1:
        size = layout.widths[0]
        if size > 0:
            at = base[:, None] + np.asarray(layout.value_offsets, np.int64)
            return read_rows(buf, at, size).view(f"V{size}").reshape(m, layout.count)
    if layout.kind == KIND_BYTES:
        out = np.empty((m, layout.count), dtype=object)
        for j, (off, size) in enumerate(zip(layout.value_offsets, layout.widths, strict=True)):
            if size == 0:
                out[:, j] = b""
                continue
            # A void view turns each row into one bytes object in C (an "S" view
            # would strip trailing NUL bytes).
            out[:, j] = _row_view(buf, base + off, size).view(f"V{size}").reshape(-1).tolist()
        return out
    raw = read_rows(buf, base + layout.offset, layout.size)
    if layout.kind == KIND_FLOAT:
        floats: npt.NDArray[np.float32] = raw.view("<f4").astype(np.float32, copy=False)
        return floats
    if max(layout.widths, default=1) == 1:
        return raw.astype(np.int64)
    # Every varint has the same offset and width in every record: read 8 bytes at each
    # and pack their 7-bit groups (lockstep.swar_varints).
    at = base[:, None] + (layout.offset + np.asarray(layout.value_offsets, np.int64))
    widths = np.asarray(layout.widths, np.int64)
    values: npt.NDArray[np.int64] = lockstep.swar_varints(
        lockstep.read_words(buf, at), widths
    ).view(np.int64)
    return values


def _row_view(buf: U8, at: I64, size: int) -> U8:
    """``read_rows(buf, at, size)``, as a view of ``buf`` where it can be one.

    Records of one size read back to back sit at equal steps, so their values do too:
    then the rows are a strided view (no copy; for a caller that copies them once more
    itself, e.g. into bytes objects). Otherwise (or for rows not all inside ``buf``) the
    copy of :func:`read_rows`.
    """
    n = int(at.shape[0])
    if n < 2 or size <= 0:
        return read_rows(buf, at, size)
    first, step = int(at[0]), int(at[1]) - int(at[0])
    last = first + step * (n - 1)
    if step <= 0 or first < 0 or last + size > buf.shape[0] or int(at[-1]) != last:
        return read_rows(buf, at, size)
    if not bool((np.diff(at) == step).all()):
        return read_rows(buf, at, size)
    rows: U8 = np.lib.stride_tricks.as_strided(
        buf[first:],
        shape=(n, size),
        strides=(step * buf.strides[0], buf.strides[0]),
        writeable=False,
    )
    return rows


def template_rows(
    buf: U8, starts: I64, ends: I64, layout: FieldLayout, width: int
) -> npt.NDArray[np.uint8] | None:
    """A bytes layout's values as uint8 rows ``[n, count, width]`` (a RawFeature's form).

    The same strided gather as :func:`template_values`, without making bytes objects.
    None when a value of the layout is not ``width`` bytes long.
    """
    if layout.kind != KIND_BYTES or any(size != width for size in layout.widths):
        return None
    base = ends if layout.from_end else starts
    if layout.count == 1:
        return read_rows(buf, base + layout.value_offsets[0], width)[:, None, :]
    at = base[:, None] + np.asarray(layout.value_offsets, np.int64)
    return read_rows(buf, at, width)


class TemplateCosts:
    """Whether a chunk should try templates, from what each way measured per record.

    Templates win on files of one layout (1.2-1.5x on fixed-length token lists and raw
    images) and lose on files whose layouts vary from record to record (detection
    boxes, token lists of varied lengths, ragged words: 1.1-1.3x slower than the walk
    alone, measured), where matching and merging cost more than the records they take.
    So the first chunk tries templates, the second walks, and later chunks take the
    cheaper way per record (a running mean of each), trying the other way again every
    ``probe_every`` chunks in case the records changed. A chunk smaller than
    ``chunk_records`` counts as its share of one: a try of templates costs a few
    milliseconds whatever the chunk (their layouts built and matched), so small batches
    (a random ``ds[list]`` of 64 records) try them as rarely per record as an epoch's
    chunks of 4,096 do. The values are the same either way; only the time differs.

    Example:
        >>> costs = TemplateCosts(probe_every=4)
        >>> costs.choose(), costs.choose()
        (True, False)
        >>> costs.record(True, 2.0, 1000); costs.record(False, 1.0, 1000)
        >>> [costs.choose() for _ in range(4)]
        [False, False, False, True]
    """

    def __init__(self, probe_every: int = 16, chunk_records: int = 4096) -> None:
        self.probe_every = probe_every
        self.chunk_records = chunk_records
        self._mean: dict[bool, float | None] = {True: None, False: None}
        self._pending: bool | None = None  # a way chosen but not measured yet
        self._since = 0.0  # chunks (or shares of one) since the other way was last tried

    def share(self, records: int | None) -> float:
        """What a chunk of ``records`` counts for (1: a full chunk, or size unknown)."""
        return 1.0 if records is None else min(1.0, records / self.chunk_records)

    def choose(self, records: int | None = None) -> bool:
        """True: the next chunk (of ``records``) tries templates; False: it walks them."""
        tried, walked = self._mean[True], self._mean[False]
        if tried is None or walked is None:
            # Measure each way once (the first chunk tries templates).
            way = tried is None and self._pending is not True
            self._pending = way
            return way
        cheaper = tried <= walked
        self._since += self.share(records)
        if self._since >= self.probe_every - 1e-9:
            self._since = 0.0
            return not cheaper
        return cheaper

    def record(self, templates: bool, seconds: float, records: int) -> None:
        """A chunk of ``records`` took ``seconds`` with (or without) templates."""
        if records <= 0:
            return
        cost = seconds / records
        old = self._mean[templates]
        self._mean[templates] = cost if old is None else (old + cost) / 2
        self._pending = None
