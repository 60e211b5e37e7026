"""The per-call path of ``ds[i]`` with ``features``: one record straight to its sample.

``parse_single_example`` followed by :func:`~.samples.sample_of` is exact for every spec
and every malformed input, but costs a feature plan and per-feature numpy assembly on
each call (~50 µs a record). :class:`SingleDecoder` builds its plan once per spec and
handles the records writers emit for the common kinds (``FixedLenFeature``,
``RawFeature``, ``VarLenFeature``) with a few Python operations per feature. Anything
else, a missing or empty feature (defaults), a duplicate key with an unreadable earlier
entry, a count or kind mismatch, a malformed Example, makes :meth:`SingleDecoder.sample`
return ``None``, and the caller takes the exact path, which returns the same sample or
raises TensorFlow's error. The fast path never accepts a record the exact path rejects,
and returns the same values, types and shapes (tests/test_single.py checks both on
generated specs and records).

Three tiers, fastest first (~0.5 µs, ~2.5 µs and ~5 µs for an MNIST-like record):

1. a *layout* per record length: the bytes of a record the walk below accepted, less its
   values, compiled to straight-line code that compares the fixed bytes and reads the
   values (see :class:`_Layout`; only for specs of scalars, at most 64 lengths);
2. :meth:`SingleDecoder.values`: one straight walk over the layout writers emit (one
   ``features`` field, entries of key then value, each requested Feature one list that
   fills it), scalars read inline;
3. the feature map and :func:`~..example.wire.decode_feature` per feature.

:meth:`SingleDecoder.columns` builds ``parse_example``'s output for a small batch from
the per-record values (``ds[list]`` of at most ``SMALL_BATCH`` records);
:meth:`SingleDecoder.samples` (scalar specs, through those columns) and
:meth:`SingleDecoder.sample_list` (any planned spec) give ``__getitems__``'s samples.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..errors import MalformedExampleError
from ..example.records import KIND_OF
from ..example.specs import FeatureSpec, FixedLenFeature, RawFeature, VarLenFeature
from ..example.wire import (
    KIND_BYTES,
    KIND_FLOAT,
    KIND_INT64,
    Duplicates,
    RawValues,
    decode_feature,
    example_feature_map,
)
from .varlen import VarLenList, varlen_array

__all__ = ["SingleDecoder"]

#: A feature's sample from its decoded values, or ``None`` for the exact path.
Convert = Callable[[RawValues], Any]
_TAG_OF = {KIND_BYTES: 0x0A, KIND_FLOAT: 0x12, KIND_INT64: 0x1A}
_NUMPY = {"int64": np.int64, "float32": np.float32}


def _fixed(spec: FixedLenFeature) -> Convert | None:
    count = math.prod(spec.shape)
    if count == 0:
        return None
    shape = spec.shape
    if spec.dtype == "string":
        if not shape:
            return lambda v: v[0] if len(v) == 1 else None

        def strings(v: RawValues) -> Any:
            if len(v) != count:
                return None
            out = np.empty(count, dtype=object)
            out[:] = v
            return out.reshape(shape).tolist()

        return strings
    scalar = _NUMPY[spec.dtype]
    if not shape:
        return lambda v: scalar(v[0]) if len(v) == 1 else None
    dtype = np.dtype(scalar)
    return lambda v: np.array(v, dtype).reshape(shape) if len(v) == count else None


def _raw(spec: RawFeature) -> Convert | None:
    nbytes = spec.nbytes
    if nbytes == 0:
        return None
    dtype = np.dtype(spec.dtype)
    little = spec.wire_dtype  # the stored byte order, as tf.io.decode_raw's little_endian
    shape = spec.shape
    fit = spec.fit

    def raw(v: RawValues) -> Any:
        if len(v) != 1:
            return None
        data: bytes = fit(v[0])  # type: ignore[arg-type]  # a bytes list (KIND_BYTES)
        if len(data) != nbytes:
            return None
        # astype copies: the sample owns writable memory (torch.from_numpy wants it).
        out = np.frombuffer(data, little).astype(dtype)
        return out.reshape(shape) if shape else out[0]  # shape []: a numpy scalar

    return raw


def _varlen(spec: VarLenFeature) -> Convert:
    # Typed as variable-length values, as samples.sample_of gives them (see .varlen).
    if spec.dtype == "string":
        return VarLenList
    dtype = np.dtype(_NUMPY[spec.dtype])
    return lambda v: varlen_array(np.array(v, dtype))


def _step(name: str, spec: FeatureSpec) -> tuple[str, bytes, int, int, Convert] | None:
    convert: Convert | None
    if isinstance(spec, FixedLenFeature):
        convert = _fixed(spec)
    elif isinstance(spec, RawFeature):
        convert = _raw(spec)
    elif isinstance(spec, VarLenFeature):
        convert = _varlen(spec)
    else:
        return None
    if convert is None:
        return None
    kind = KIND_BYTES if isinstance(spec, RawFeature) else KIND_OF[spec.dtype]
    return name, name.encode("utf-8"), kind, _TAG_OF[kind], convert


# How each feature is read: a scalar inline (codes below _OTHER_INT), else generically.
_INT, _FLOAT, _BYTES, _OTHER_INT, _OTHER_FLOAT, _OTHER_BYTES = range(6)
_KIND_OF_CODE = {_OTHER_INT: KIND_INT64, _OTHER_FLOAT: KIND_FLOAT, _OTHER_BYTES: KIND_BYTES}
_MASK64 = (1 << 64) - 1


def _code(spec: FeatureSpec, kind: int) -> int:
    """How :meth:`SingleDecoder.values` reads a feature: a scalar inline, else generic."""
    if isinstance(spec, FixedLenFeature) and not spec.shape:
        return {KIND_INT64: _INT, KIND_FLOAT: _FLOAT, KIND_BYTES: _BYTES}[kind]
    return {KIND_INT64: _OTHER_INT, KIND_FLOAT: _OTHER_FLOAT, KIND_BYTES: _OTHER_BYTES}[kind]


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """A varint of at most 10 bytes at ``buf[pos]``: (value, position after it), unmasked.

    Raises:
        IndexError: it runs past the end of ``buf``.
        MalformedExampleError: longer than 10 bytes.
    """
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise MalformedExampleError("varint longer than 10 bytes", offset=pos)


def _int_at(rec: bytes, start: int, end: int) -> int | None:
    """The int64 of the varint filling ``rec[start:end]``, or ``None`` if it does not."""
    try:
        value, stop = _uvarint(rec, start)
    except (IndexError, MalformedExampleError):
        return None
    if stop != end:
        return None
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


#: At most this many record layouts are kept per decoder (records of varying lengths
#: beyond it are walked each time).
_MAX_LAYOUTS = 64
#: A layout keeps (and compares) at most this many bytes besides the values.
_MAX_FIXED = 4096


class _Layout:
    """The bytes of one accepted record of a given length, less its values.

    :meth:`SingleDecoder._walk` reads only tags, lengths and keys (the bytes kept here)
    and, for scalars, the continuation bits of an int64's varint; the payloads of
    strings and floats it never inspects. So a record of the same length whose other
    bytes all equal these, and whose varints have the same byte counts, walks the same
    way: its values are read straight from the same positions.
    """

    __slots__ = ("compiled", "fixed", "reads")

    @classmethod
    def of(cls, record: bytes, regions: list[tuple[int, int, int, int]]) -> _Layout | None:
        """The layout of ``record``, or ``None`` when its fixed bytes exceed
        ``_MAX_FIXED`` (large unrequested features: kept per layout and compared per
        record, they would cost more than the walk, which skips them by length)."""
        if len(record) - sum(end - start for start, end, _slot, _code in regions) > _MAX_FIXED:
            return None
        return cls(record, regions)

    def __init__(self, record: bytes, regions: list[tuple[int, int, int, int]]) -> None:
        regions = sorted(regions)
        fixed: list[tuple[int, int, bytes]] = []
        at = 0
        for start, end, _slot, _code in regions:
            if start > at:
                fixed.append((at, start, record[at:start]))
            at = end
        if at < len(record):
            fixed.append((at, len(record), record[at:]))
        self.fixed = fixed
        self.reads = [(start, end, slot, code) for start, end, slot, code in regions]
        self.compiled = self._compile()

    def _compile(self) -> Callable[[bytes], list[Any] | None]:
        """:meth:`values` as straight-line code for this layout (no loops, no lookups).

        Only integers and names go into the source; the fixed bytes are passed in.
        """
        names: dict[str, Any] = {"_int_at": _int_at}
        lines = ["def values(rec):"]
        checks = []
        for k, (start, end, part) in enumerate(self.fixed):
            names[f"F{k}"] = part
            checks.append(f"rec[{start}:{end}] != F{k}")
        if checks:
            lines.append(f"    if {' or '.join(checks)}: return None")
        for start, end, slot, code in self.reads:
            v = f"v{slot}"
            if code != _INT:
                lines.append(f"    {v} = rec[{start}:{end}]")
            elif end - start == 1:
                lines += [f"    {v} = rec[{start}]", f"    if {v} >= 0x80: return None"]
            elif end - start == 2:
                lines += [
                    f"    a = rec[{start}]; b = rec[{start + 1}]",
                    "    if a < 0x80 or b >= 0x80: return None",
                    f"    {v} = (a & 0x7F) | (b << 7)",
                ]
            elif end - start == 3:
                lines += [
                    f"    a = rec[{start}]; b = rec[{start + 1}]; c = rec[{start + 2}]",
                    "    if a < 0x80 or b < 0x80 or c >= 0x80: return None",
                    f"    {v} = (a & 0x7F) | ((b & 0x7F) << 7) | (c << 14)",
                ]
            else:
                lines += [
                    f"    {v} = _int_at(rec, {start}, {end})",
                    f"    if {v} is None: return None",
                ]
        slots = sorted(slot for _start, _end, slot, _code in self.reads)
        lines.append(f"    return [{', '.join(f'v{slot}' for slot in slots)}]")
        exec("\n".join(lines), names)  # (generated from integers only)
        fn: Callable[[bytes], list[Any] | None] = names["values"]
        return fn

    def values(self, rec: bytes, count: int) -> list[Any] | None:
        """The values of ``rec`` (of this layout's length), or ``None`` if it differs.

        The reference for :attr:`compiled` (tests check that the two agree).
        """
        for start, end, part in self.fixed:
            if rec[start:end] != part:
                return None
        out: list[Any] = [None] * count
        for start, end, slot, code in self.reads:
            value = rec[start:end] if code != _INT else _int_at(rec, start, end)
            if value is None:
                return None
            out[slot] = value
        return out


class SingleDecoder:
    """One record to its sample for the common specs, planned once per spec.

    >>> from tfrecord_engine.example.encode import encode_example
    >>> d = SingleDecoder({"x": FixedLenFeature([2], "int64")})
    >>> d.sample(encode_example({"x": [3, 4]}))["x"].tolist()
    [3, 4]
    >>> d.sample(encode_example({"y": [1]})) is None   # missing: the exact path decides
    True
    """

    def __init__(self, features: Mapping[str, FeatureSpec]) -> None:
        steps = [_step(name, spec) for name, spec in features.items()]
        self.steps = [s for s in steps if s is not None]
        #: False when some spec always takes the exact path.
        self.enabled = bool(steps) and len(self.steps) == len(steps)
        # The walk's plan, built once: key -> (slot, code, convert); names by slot.
        self._plan: dict[bytes, tuple[int, int, Convert]] = {}
        self._names: list[str] = []
        self._codes: list[int] = []
        for slot, (name, key, kind, _tag, convert) in enumerate(self.steps):
            code = _code(features[name], kind)
            self._plan[key] = (slot, code, convert)
            self._names.append(name)
            self._codes.append(code)
        #: True when every feature is a scalar int64, float32 or string (``FixedLenFeature([])``):
        #: :meth:`columns` then decodes small batches.
        self.scalars = self.enabled and all(c < _OTHER_INT for c in self._codes)
        # Record length -> the byte layout of a record of that length the walk accepted.
        self._layouts: dict[int, _Layout | None] = {}
        self._ints = [j for j, c in enumerate(self._codes) if c == _INT]
        self._floats = [j for j, c in enumerate(self._codes) if c == _FLOAT]

    def values(self, record: bytes) -> list[Any] | None:
        """One value per feature (in spec order), or ``None`` where the exact path decides.

        A straight walk over the layout writers emit: one ``features`` field filling the
        record, entries of key then value, each requested Feature one list filling it, no
        requested key twice. Scalars come back raw: an ``int`` (int64), the 4 bytes of a
        float32, the ``bytes`` of a string; other kinds as their sample value.
        """
        if not self.enabled:
            return None
        layouts = self._layouts
        size = len(record)
        layout = layouts.get(size)
        try:
            if layout is not None:
                got = layout.compiled(record)
                if got is not None:
                    return got
            elif self.scalars and size not in layouts and len(layouts) < _MAX_LAYOUTS:
                regions: list[tuple[int, int, int, int]] = []
                got = self._walk(record, regions)
                if got is not None:
                    # None (kept, so as not to try again): too many bytes to compare.
                    layouts[size] = _Layout.of(record, regions)
                return got
            return self._walk(record)
        except (IndexError, MalformedExampleError):
            return None  # a length or position past the record: the exact path reports

    def _walk(
        self, rec: bytes, regions: list[tuple[int, int, int, int]] | None = None
    ) -> list[Any] | None:
        plan = self._plan
        n = len(rec)
        if rec[0] != 0x0A:
            return None
        b = rec[1]
        if b < 0x80:
            size, pos = b, 2
        else:
            size, pos = _uvarint(rec, 1)
        if pos + size != n:
            return None  # not one Features message filling the record
        out: list[Any] = [None] * len(self._names)
        found = 0
        while pos < n:
            if rec[pos] != 0x0A:
                return None
            b = rec[pos + 1]
            if b < 0x80:
                pos += 2
                entry_end = pos + b
            else:
                size, pos = _uvarint(rec, pos + 1)
                entry_end = pos + size
            if entry_end > n or rec[pos] != 0x0A:
                return None
            kend = pos + 2 + rec[pos + 1]  # a key length >= 128 fails the next check
            if kend + 1 >= entry_end or rec[kend] != 0x12 or rec[pos + 1] >= 0x80:
                return None
            b = rec[kend + 1]
            if b < 0x80:
                vpos = kend + 2
                vend = vpos + b
            else:
                size, vpos = _uvarint(rec, kend + 1)
                vend = vpos + size
            if vend != entry_end:
                return None
            step = plan.get(rec[pos + 2 : kend])
            pos = entry_end
            if step is None:
                continue  # a feature nobody asked for: its value is never read
            slot, code, convert = step
            if out[slot] is not None:
                return None  # a requested key twice: TensorFlow's rules for duplicates
            if code == _INT:
                # Int64List { packed [one varint] }: 1A f 0A p <p bytes>, both filling.
                p = rec[vpos + 3]
                if (
                    rec[vpos] != 0x1A
                    or rec[vpos + 1] != p + 2
                    or rec[vpos + 2] != 0x0A
                    or vpos + 4 + p != vend
                ):
                    return None
                value = rec[vpos + 4]
                if p != 1 or value >= 0x80:
                    value, end = _uvarint(rec, vpos + 4)
                    if end != vend:
                        return None
                    value &= _MASK64
                    if value >> 63:
                        value -= 1 << 64
                out[slot] = value
                at = vpos + 4
            elif code == _FLOAT:
                # FloatList { packed [one float] }: 12 06 0A 04 <4 bytes>.
                if vend - vpos != 8 or rec[vpos : vpos + 4] != b"\x12\x06\x0a\x04":
                    return None
                out[slot] = rec[vpos + 4 : vend]
                at = vpos + 4
            elif code == _BYTES:
                # BytesList { one value }: 0A f 0A s <s bytes>, both filling.
                if rec[vpos] != 0x0A:
                    return None
                b = rec[vpos + 1]
                if b < 0x80:
                    at = vpos + 2
                else:
                    b, at = _uvarint(rec, vpos + 1)
                if at + b != vend or rec[at] != 0x0A:
                    return None
                b = rec[at + 1]
                if b < 0x80:
                    at += 2
                else:
                    b, at = _uvarint(rec, at + 1)
                if at + b != vend:
                    return None
                out[slot] = rec[at:vend]
            else:
                kind = _KIND_OF_CODE[code]
                if vpos == vend or rec[vpos] != _TAG_OF[kind]:
                    return None
                value = convert(decode_feature(rec, (vpos, vend), kind))
                if value is None:
                    return None
                out[slot] = value
                at = vpos
            if regions is not None:
                regions.append((at, vend, slot, code))
            found += 1
        return out if found == len(out) else None

    def sample(self, record: bytes) -> dict[str, Any] | None:
        """The sample of ``record``, or ``None`` where the exact path must decide."""
        if not self.enabled:
            return None
        vals = self.values(record)
        if vals is None:
            return self._sample_general(record)
        int64 = np.int64
        for j in self._ints:
            vals[j] = int64(vals[j])
        for j in self._floats:
            vals[j] = np.frombuffer(vals[j], "<f4")[0]
        return dict(zip(self._names, vals, strict=True))

    def columns(self, records: list[bytes]) -> dict[str, Any] | None:
        """``parse_example``'s output for a small batch of ``records`` (all features
        scalars, see :attr:`scalars`), or ``None`` where some record needs the exact path.
        """
        if not self.scalars:
            return None
        layouts = self._layouts
        rows: list[list[Any] | None] = []
        for record in records:
            layout = layouts.get(len(record))
            # (values() tries the layout again first: only where it declined, rarely)
            row = layout.compiled(record) if layout is not None else None
            rows.append(row if row is not None else self.values(record))
        if None in rows:
            return None
        out: dict[str, Any] = {}
        cols = zip(*rows, strict=True)  # (no None: checked)
        for name, code, col in zip(self._names, self._codes, cols, strict=True):
            if code == _INT:
                out[name] = np.array(col, np.int64)
            elif code == _FLOAT:
                out[name] = np.frombuffer(b"".join(col), "<f4").astype(np.float32)
            else:
                strings = np.empty(len(col), dtype=object)
                strings[:] = col
                out[name] = strings
        return out

    def samples(self, records: list[bytes]) -> list[dict[str, Any]] | None:
        """The sample of each of ``records`` (as :meth:`sample`; all features scalars), or
        ``None`` where some record needs the exact path."""
        columns = self.columns(records)
        if columns is None:
            return None
        names = self._names
        return [
            dict(zip(names, row, strict=True))
            for row in zip(*map(list, columns.values()), strict=True)
        ]

    def sample_list(self, records: list[bytes]) -> list[dict[str, Any]] | None:
        """The sample of each of ``records`` (as :meth:`sample`, any planned spec), or
        ``None`` where some record needs the exact path (which then decides for all)."""
        out = []
        for record in records:
            got = self.sample(record)
            if got is None:
                return None
            out.append(got)
        return out

    def _sample_general(self, record: bytes) -> dict[str, Any] | None:
        dups = Duplicates()
        out: dict[str, Any] = {}
        try:
            fmap = example_feature_map(record, dups)
            if dups.unsupported:
                return None  # an earlier entry with an invalid kind: TensorFlow's rules
            for name, key, kind, tag, convert in self.steps:
                span = fmap.get(key)
                if span is None or span[0] == span[1] or record[span[0]] != tag:
                    return None  # missing, empty (defaults, shadowed entries), another kind
                value = convert(decode_feature(record, span, kind))
                if value is None:
                    return None
                out[name] = value
        except MalformedExampleError:
            return None
        return out
