"""The per-call path of ``ds[i]`` with ``features``: one record straight to its sample.

``parse_single_example`` followed by :func:`~.samples.sample_of` is exact for every spec
and every malformed input, but costs a feature plan and per-feature numpy assembly on
each call (~50 µs a record). :class:`SingleDecoder` builds its plan once per spec (see
:mod:`.single_steps`) and handles the records writers emit for the common kinds
(``FixedLenFeature``, ``RawFeature``, ``VarLenFeature``, ``RaggedFeature`` with any
partitions) with a few Python operations per feature. Anything else, a missing or
empty feature (defaults), a duplicate key with an unreadable earlier entry, a count or
kind mismatch, a malformed Example, a key two specs request, makes
:meth:`SingleDecoder.sample` return ``None``, and the caller takes the exact path, which
returns the same sample or raises TensorFlow's error. The fast path never accepts a
record the exact path rejects, and returns the same values, types and shapes
(tests/test_single.py and tests/test_single_ragged.py check both on generated specs and
records, in random key orders).

Four tiers, fastest first:

1. a *layout* per record length: the bytes of a record the walk below accepted, less its
   values, compiled to straight-line code that compares the fixed bytes and reads the
   values (see :class:`_Layout`; only for specs of scalars, at most 64 lengths);
2. the compiled decode of one record (:func:`~..kernels.single.decode_one`, once the
   kernels are loaded; for every spec that is not all scalars, and for scalars where
   the layouts do not serve): every numeric key's values decoded in one call, then the
   spec's straight-line code (:mod:`.single_take`) makes the sample, with one step per
   string list (tabular records: ~3.5 µs against the Python walk's ~10 µs);
3. :meth:`SingleDecoder.values`: one straight walk in Python over the layout writers
   emit (one ``features`` field, entries of key then value, each requested Feature one
   list that fills it), scalars read inline;
4. the feature map and :func:`~..example.wire.decode_feature` per feature.

Numeric lists are read without Python lists (:mod:`.single_steps`). :meth:`columns`
builds ``parse_example``'s output for a small batch from the per-record values
(``ds[list]`` of at most ``SMALL_BATCH`` records); :meth:`SingleDecoder.samples` (scalar
specs) and :meth:`SingleDecoder.sample_list` (any planned spec) give ``__getitems__``'s
samples; :attr:`SingleDecoder.prefers_walk` says when a batch decode beats them.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from ..errors import MalformedExampleError
from ..kernels.single import one_table
from .single_steps import TAKE_READ, Read, plan, read_varint
from .single_take import compile_take, compile_take_all, compile_take_at, varlen_views
from .specs import FeatureSpec, FixedLenFeature
from .wire import (
    KIND_BYTES,
    KIND_FLOAT,
    KIND_INT64,
    Duplicates,
    decode_feature,
    example_feature_map,
)

__all__ = ["SingleDecoder"]

I64 = npt.NDArray[np.int64]
#: A buffer whose slices are ``bytes`` and whose items are ints: ``bytes``, or a map
#: (a file's copy in memory).
Sliced = bytes | mmap.mmap

# How each feature is read: a scalar inline (codes below _OTHER_INT), else generically.
_INT, _FLOAT, _BYTES, _OTHER_INT, _OTHER_FLOAT, _OTHER_BYTES = range(6)
_MASK64 = (1 << 64) - 1


def _code(scalar: bool, kind: int) -> int:
    """How :meth:`SingleDecoder.values` reads a key: a scalar inline, else its step."""
    if scalar:
        return {KIND_INT64: _INT, KIND_FLOAT: _FLOAT, KIND_BYTES: _BYTES}[kind]
    return {KIND_INT64: _OTHER_INT, KIND_FLOAT: _OTHER_FLOAT, KIND_BYTES: _OTHER_BYTES}[kind]


def _int_at(rec: bytes, start: int, end: int) -> int | None:
    """The int64 of the varint filling ``rec[start:end]``, or ``None`` if it does not."""
    try:
        value, stop = read_varint(rec, start, len(rec))
    except (IndexError, MalformedExampleError):
        return None
    if stop != end:
        return None
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


#: At most this many record layouts are kept per decoder (records of varying lengths
#: beyond it are walked each time).
_MAX_LAYOUTS = 64
#: From this many keys on, a batch walk beats the per-record walk (see prefers_walk),
#: and the compiled decode the per-length layouts of scalars.
_WALK_KEYS = 16
#: From this many records on, a small batch of a spec of many keys is batch-decoded.
_WIDE_COLUMNS_MAX = 16
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
        planned = plan(features)
        #: False when some spec always takes the exact path.
        self.steps, outputs = planned if planned is not None else ([], [])
        self.enabled = bool(self.steps)
        # The walk's plan, built once: key -> (slot, code, read); key names by slot.
        self._plan: dict[bytes, tuple[int, int, Read]] = {}
        self._names: list[str] = []
        self._codes: list[int] = []
        scalars = {
            name
            for name, spec in features.items()
            if isinstance(spec, FixedLenFeature) and not spec.shape
        }
        for slot, step in enumerate(self.steps):
            code = _code(step.name in scalars, step.kind)
            self._plan[step.key] = (slot, code, step.read)
            self._names.append(step.name)
            self._codes.append(code)
        # The sample's features: a key's value as is, or built from several (ragged).
        self._outputs = outputs
        self._direct = (
            all(o.finish is None for o in outputs) and [o.name for o in outputs] == self._names
        )
        #: True when the take of every key slices the record (no reader walks it):
        #: :meth:`sample_spans` then takes records from any buffer whose slices are
        #: ``bytes`` (a file's copy in memory), not only from ``bytes`` or a map.
        self.slices_only = self.enabled and all(
            step.compiled.take != TAKE_READ for step in self.steps
        )
        #: True when every feature is a scalar int64, float32 or string (``FixedLenFeature([])``):
        #: :meth:`columns` then decodes small batches.
        self.scalars = self.enabled and all(c < _OTHER_INT for c in self._codes)
        # Record length -> the byte layout of a record of that length the walk accepted.
        self._layouts: dict[int, _Layout | None] = {}
        self._ints = [j for j, c in enumerate(self._codes) if c == _INT]
        self._floats = [j for j, c in enumerate(self._codes) if c == _FLOAT]
        # The compiled decode's table, and how each key's value is taken from it.
        compiled = [s.compiled for s in self.steps]
        self._one = (
            one_table(
                [s.key for s in self.steps],
                [c.code for c in compiled],
                [c.count for c in compiled],
            )
            if self.enabled
            else None
        )
        self._take = compile_take(self.steps, outputs) if self.enabled else None
        # Whether records may go to the layouts before the compiled decode (scalars of
        # a few keys; see _compiled_first).
        self._layouts_first = self.scalars and len(self.steps) < _WALK_KEYS
        self._take_at = compile_take_at(self.steps, outputs) if self.enabled else None
        self._take_all = compile_take_all(self.steps, outputs) if self.enabled else None

    @property
    def prefers_walk(self) -> bool:
        """Whether a batch of a dozen records or more is cheaper cut from one compiled
        batch walk than decoded here record by record: always for specs that are not all
        scalars; for scalars, where records have many keys (``_WALK_KEYS``) or lengths too
        varied for the per-length layouts (all ``_MAX_LAYOUTS`` taken: images, captions).
        Small records of a few lengths (the layouts' straight-line code) stay here."""
        return (
            not self.scalars or len(self.steps) >= _WALK_KEYS or len(self._layouts) >= _MAX_LAYOUTS
        )

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
            size, pos = read_varint(rec, 1, n)
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
                size, pos = read_varint(rec, pos + 1, n)
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
                size, vpos = read_varint(rec, kend + 1, n)
                vend = vpos + size
            if vend != entry_end:
                return None
            step = plan.get(rec[pos + 2 : kend])
            pos = entry_end
            if step is None:
                continue  # a feature nobody asked for: its value is never read
            slot, code, read = step
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
                    value, end = read_varint(rec, vpos + 4, n)
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
                    b, at = read_varint(rec, vpos + 1, n)
                if at + b != vend or rec[at] != 0x0A:
                    return None
                b = rec[at + 1]
                if b < 0x80:
                    at += 2
                else:
                    b, at = read_varint(rec, at + 1, n)
                if at + b != vend:
                    return None
                out[slot] = rec[at:vend]
            else:
                if vpos == vend:
                    return None  # an empty Feature: defaults, the exact path
                value = read(rec, vpos, vend)
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
        if self._compiled_first(len(record)):
            got = self._compiled_sample(record)
            if got is not None:
                return got
        vals = self.values(record)
        if vals is None:
            return self._sample_general(record)
        int64 = np.int64
        for j in self._ints:
            vals[j] = int64(vals[j])
        for j in self._floats:
            vals[j] = np.frombuffer(vals[j], "<f4")[0]
        return self._sample_of(vals)

    def _compiled_first(self, size: int) -> bool:
        """Whether a record of ``size`` bytes goes to the compiled decode first: always
        for specs that are not all scalars or have many keys; for scalars, once the
        layouts are all taken and none is of that size (else the layouts and the Python
        walk, cheaper on small records of a few lengths)."""
        layouts = self._layouts
        return not self._layouts_first or (
            len(layouts) >= _MAX_LAYOUTS and layouts.get(size) is None
        )

    def takes_held(self) -> bool:
        """Whether :meth:`sample_at` may take records now: the spec's takes only slice
        the record, and records go to the compiled decode first (not while a spec of a
        few scalars still fills its per-length layouts, which read the record out)."""
        return self.slices_only and (not self._layouts_first or len(self._layouts) >= _MAX_LAYOUTS)

    def sample_at(
        self, data: Sliced, array: npt.NDArray[np.uint8], start: int, end: int
    ) -> dict[str, Any] | None:
        """:meth:`sample` of the record ``data[start:end]`` of a file's copy in memory
        (``array``: ``data`` as ``uint8``; ``data`` slices to ``bytes``), decoded where
        it lies: only its values are copied out. ``None`` where this does not take it
        (a spec whose takes walk the record, a record the layouts serve, one the
        compiled decode declines): the caller then reads the record and calls
        :meth:`sample`."""
        # (_compiled_first written out for the specs that never fill layouts, as this is
        # ds[i]'s per-call path and a call costs ~60 ns of it; the specs that do are
        # scalars, whose takes only slice.)
        if not self._layouts_first:
            if not self.slices_only:
                return None
        elif not self._compiled_first(end - start):
            return None
        assert self._one is not None
        assert self._take is not None
        got = self._one.decode_at(array, start, end)
        if got is None:
            return None
        try:
            return self._take(data, *got)  # type: ignore[arg-type]  # (slices as bytes do)
        except (IndexError, MalformedExampleError):
            return None

    def _compiled_sample(self, record: bytes) -> dict[str, Any] | None:
        """The sample through the compiled decode of the record (numbers decoded there)
        and the spec's straight-line take (:mod:`.single_take`), or ``None``: the
        kernels are not loaded, or the Python walk decides."""
        assert self._one is not None
        assert self._take is not None
        got = self._one.decode(record)
        if got is None:
            return None
        try:
            return self._take(record, *got)
        except (IndexError, MalformedExampleError):
            return None

    def _sample_of(self, vals: list[Any]) -> dict[str, Any] | None:
        """The sample from every key's value (by slot), or ``None`` for the exact path."""
        if self._direct:
            return dict(zip(self._names, vals, strict=True))
        out: dict[str, Any] = {}
        for output in self._outputs:
            if output.finish is None:
                out[output.name] = vals[output.slot]
            else:
                value = output.finish(vals)
                if value is None:
                    return None
                out[output.name] = value
        return out

    def columns(self, records: list[bytes]) -> dict[str, Any] | None:
        """``parse_example``'s output for a small batch of ``records`` (all features
        scalars, see :attr:`scalars`), or ``None`` where some record needs the exact path
        or a batch decode costs less: specs of many keys (``_WALK_KEYS``) from
        ``_WIDE_COLUMNS_MAX`` records on (wide records of 200 keys: ~200 µs a record
        walked here, against 260 µs for 8 records in a batch decode, 50 for 64, 28 for
        128).
        """
        if not self.scalars or (
            len(self.steps) >= _WALK_KEYS and len(records) >= _WIDE_COLUMNS_MAX
        ):
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
        if len(self.steps) >= _WALK_KEYS:
            return self.sample_list(records)  # (the compiled walk, where loaded)
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

    def sample_batch(self, records: list[bytes]) -> list[dict[str, Any]] | None:
        """:meth:`sample_list` with every record's numbers decoded by one compiled call
        (:meth:`~..kernels.single.OneTable.decode_many` over the records joined), then
        the spec's take per record: one kernel dispatch a batch, not one a record. A
        record that call does not take goes through :meth:`sample` (the layouts and the
        Python walk); ``None`` as :meth:`sample_list` (the exact path decides for all).
        Numeric values are views of the batch's arrays, as a batch decode's samples are.
        """
        if not self.enabled:
            return None
        m = len(records)
        if m == 0:
            return []
        data = b"".join(records)
        lengths = np.fromiter(map(len, records), np.int64, m)
        ends = np.cumsum(lengths)
        return self.sample_spans(data, np.frombuffer(data, np.uint8), ends - lengths, ends)

    def sample_spans(
        self, data: Sliced, array: npt.NDArray[np.uint8], starts: I64, ends: I64
    ) -> list[dict[str, Any]] | None:
        """:meth:`sample_batch` of the records ``data[starts[j]:ends[j]]``, spans of one
        buffer (``array`` is ``data`` as ``uint8``; ``data`` slices to ``bytes`` and,
        unless :attr:`slices_only`, indexes to ints, as ``bytes`` and maps do): the
        records are not joined or copied first, only their values are made. ``None`` as
        :meth:`sample_list`."""
        if not self.enabled:
            return None
        assert self._one is not None
        assert self._take_at is not None
        if len(starts) == 0:
            return []
        got = self._one.decode_many(array, starts, ends)
        if got is None:
            spans = zip(starts.tolist(), ends.tolist(), strict=True)
            return self.sample_list([data[a:b] for a, b in spans])
        out, places, ints, floats = got
        take_at = self._take_at
        vints, vfloats = varlen_views(ints, floats)
        record = cast("bytes", data)  # (a map slices and indexes as bytes do)
        take_all = self._take_all
        if take_all is not None:
            # Every record at once (no call per record), unless one is not taken.
            try:
                everything = take_all(record, array, out, places, ints, floats, vints, vfloats)
            except (IndexError, MalformedExampleError):
                everything = None
            if everything is not None:
                return everything
        samples = []
        # (One tolist for the batch's spans; each record's values are cut from the
        # batch's arrays at its offsets: no view per record first.)
        for j, (rows, (i0, f0, _ni, _nf)) in enumerate(
            zip(out.tolist(), places.tolist(), strict=True)
        ):
            sample = None
            if i0 >= 0:
                try:
                    sample = take_at(record, rows, ints, floats, i0, f0, vints, vfloats)
                except (IndexError, MalformedExampleError):
                    sample = None
            if sample is None:
                sample = self.sample(data[int(starts[j]) : int(ends[j])])
                if sample is None:
                    return None
            samples.append(sample)
        return samples

    def _sample_general(self, record: bytes) -> dict[str, Any] | None:
        dups = Duplicates()
        vals: list[Any] = []
        try:
            fmap = example_feature_map(record, dups)
            if dups.unsupported:
                return None  # an earlier entry with an invalid kind: TensorFlow's rules
            for step in self.steps:
                span = fmap.get(step.key)
                if span is None or span[0] == span[1] or record[span[0]] != step.tag:
                    return None  # missing, empty (defaults, shadowed entries), another kind
                value = step.convert(decode_feature(record, span, step.kind))
                if value is None:
                    return None
                vals.append(value)
        except MalformedExampleError:
            return None
        return self._sample_of(vals)
