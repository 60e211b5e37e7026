"""Index columns: chosen scalar features of every record, kept in the index.

An index column holds, for each record of a file, the value of one scalar feature
(int64 or bytes) and a status byte saying whether the record has exactly one such
value (see :mod:`.scalars` for the statuses). It is filled while the file is written
(``TFRecordWriter(..., index=True, index_columns=[...])``, through
:class:`ColumnRecorder`) or by reading the file once (``Index.build(path,
columns=[...])``, ``Index.with_columns``, ``tfr index --columns``, through
:func:`read_columns`), and read back with the index, without touching the records.

A record that lacks the value is recorded as such, never as a made-up value: whoever
asks for the values decides (``RecordDataset.index_column(name, missing=...)``: an
error naming the record by default, or a fill value given explicitly).

The sidecar section (format flag +128, see :mod:`.format`), 8-byte aligned, little-endian::

    size         uint64    bytes of the section after this field
    count        uint32    number of columns c; then uint32 0
    c columns    name_size uint32, kind uint32 (1 int64, 2 bytes),
                 name (UTF-8) padded to 8 bytes,
                 status uint8[n] padded to 8 bytes,
                 int64: values int64[n] (0 where status != 0)
                 bytes: ends uint64[n] (value j is data[ends[j-1]:ends[j]]), then
                        data padded to 8 bytes (empty where status != 0)
"""

from __future__ import annotations

import dataclasses
import itertools
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from ..errors import ExampleParseError, IndexFormatError, InvalidArgumentError, StaleIndexError
from ..records import framing
from ..records.compression import Compression
from ..records.reader import read_records
from ..records.recovery import DamagePolicy, DamageReport
from ..storage.options import StorageOptionsArg
from .identity import DataBytes
from .scalars import KIND_BYTES, KIND_INT64, OK, OTHER_KIND, REASONS, scalars_of

__all__ = [
    "RAISE",
    "ColumnKind",
    "ColumnRecorder",
    "ColumnSpec",
    "ColumnsArg",
    "IndexColumn",
    "decode_columns",
    "encode_columns",
    "missing_error",
    "normalize_columns",
    "read_columns",
]

ColumnKind = Literal["int64", "bytes"]
#: Column names (each column's kind taken from the first record holding one value), or
#: name -> ``"int64"`` / ``"bytes"`` (alias ``"string"``), or ``(name, kind)`` pairs
#: (kind ``None``: from the data).
ColumnsArg = str | Sequence[str | tuple[str, str | None]] | Mapping[str, str]
#: ``(name, kind)`` of a column to record; ``kind`` ``None``: from the data.
ColumnSpec = tuple[tuple[str, ColumnKind | None], ...]

_KIND_CODES: Final[dict[ColumnKind, int]] = {"int64": 1, "bytes": 2}
_CODE_KINDS: Final[dict[int, ColumnKind]] = {1: "int64", 2: "bytes"}
_WIRE_KINDS: Final[dict[int, ColumnKind]] = {KIND_INT64: "int64", KIND_BYTES: "bytes"}
_KIND_NAMES: Final[dict[str, ColumnKind]] = {"int64": "int64", "bytes": "bytes", "string": "bytes"}
_SIZE = struct.Struct("<Q")
_HEAD = struct.Struct("<II")
#: Records whose data CRCs are checked together when columns are read from a file.
_CHUNK = 1 << 14

I64Array = npt.NDArray[np.int64]
U64Array = npt.NDArray[np.uint64]
U8Array = npt.NDArray[np.uint8]


class _Raise:
    """The default of ``missing=``: raise for a record without a value."""

    def __repr__(self) -> str:
        return "RAISE"


#: ``values_or(missing=RAISE)``: a record without exactly one value raises.
RAISE: Final = _Raise()


def normalize_columns(columns: ColumnsArg | None) -> ColumnSpec:
    """Checks an ``index_columns``/``columns`` argument; ``()`` for ``None``.

    >>> normalize_columns(["label", "id"])
    (('label', None), ('id', None))
    >>> normalize_columns({"id": "string"})
    (('id', 'bytes'),)
    """
    if columns is None:
        return ()
    pairs: list[tuple[str, Any]]
    if isinstance(columns, str):
        pairs = [(columns, None)]
    elif isinstance(columns, Mapping):
        pairs = list(columns.items())
    else:
        pairs = [(c, None) if isinstance(c, str) else tuple(c) for c in columns]  # type: ignore[misc]
    items: list[tuple[str, ColumnKind | None]] = []
    for name, kind in pairs:
        if kind is not None and kind not in _KIND_NAMES:
            raise InvalidArgumentError(
                f"index column {name!r}: kind must be 'int64' or 'bytes', got {kind!r}"
            )
        items.append((name, None if kind is None else _KIND_NAMES[kind]))
    names = [name for name, _ in items]
    for name in names:
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(
                f"index column names must be non-empty strings, got {name!r}"
            )
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"index columns named twice: {names}")
    return tuple(items)


@dataclasses.dataclass(frozen=True, eq=False, slots=True)
class IndexColumn:
    """One scalar feature of every record of a file, as its index keeps it.

    Attributes:
        name: the feature key.
        kind: ``"int64"`` (``values`` is ``int64[n]``) or ``"bytes"`` (an object array
            of ``bytes``).
        values: record ``i``'s value where ``status[i] == 0`` (``0`` / ``b""`` elsewhere).
        status: ``uint8[n]``: 0 one value of ``kind``; 1 missing (or an empty Feature);
            2 a list of another length; 3 values of another kind; 4 the record is not a
            valid Example (see :mod:`.scalars`).
    """

    name: str
    kind: ColumnKind
    values: npt.NDArray[Any]
    status: U8Array

    def __len__(self) -> int:
        return len(self.status)

    @property
    def present(self) -> npt.NDArray[np.bool_]:
        """Whether each record holds exactly one value of the column's kind."""
        present: npt.NDArray[np.bool_] = self.status == OK
        return present

    def head(self, n: int) -> IndexColumn:
        """The column of the first ``n`` records."""
        return IndexColumn(self.name, self.kind, self.values[:n], self.status[:n])

    def same_as(self, other: IndexColumn) -> bool:
        """Whether ``other`` holds the same name, kind, values and statuses."""
        return (
            self.name == other.name
            and self.kind == other.kind
            and np.array_equal(self.status, other.status)
            and bool(np.all(self.values == other.values))
            and len(self.values) == len(other.values)
        )

    def reason(self, i: int) -> str:
        """Why record ``i`` has no value (for messages)."""
        status = int(self.status[i])
        if status == OTHER_KIND:
            return f"holds values of another kind than {self.kind}"
        return REASONS.get(status, "has no value")


def missing_error(
    column: IndexColumn,
    at: int,
    *,
    path: str,
    record: int,
    offset: int,
    dataset_index: int | None = None,
) -> ExampleParseError:
    """The error for entry ``at`` of ``column`` (record ``record`` of ``path``, at
    ``offset``), which has no value: it names the place as parse errors do."""
    err = ExampleParseError(
        f"feature {column.name!r} {column.reason(at)} (index column of {column.kind} values)",
        key=column.name,
    )
    err.locate(
        path,
        record,
        offset,
        dataset_index=dataset_index,
        hint="Pass missing=<value> to fill such records, or select the records that have "
        "one first (ds.filter(..., missing=...)).",
    )
    return err


class ColumnRecorder:
    """Collects index columns from records as they are written (or read)."""

    def __init__(self, spec: ColumnSpec) -> None:
        self._spec = spec
        self._wanted = {name.encode("utf-8"): j for j, (name, _) in enumerate(spec)}
        self._kinds: list[ColumnKind | None] = [kind for _, kind in spec]
        self._values: list[list[int | bytes | None]] = [[] for _ in spec]
        self._status: list[bytearray] = [bytearray() for _ in spec]

    @property
    def spec(self) -> ColumnSpec:
        """The columns recorded."""
        return self._spec

    def add(self, records: Iterable[bytes | bytearray | memoryview]) -> None:
        """Reads the columns of each record, in order."""
        wanted = self._wanted
        kinds = self._kinds
        values = self._values
        status = self._status
        for record in records:
            for j, (found, wire, value) in scalars_of(record, wanted).items():
                if found == OK:
                    kind = _WIRE_KINDS[wire]
                    if kinds[j] is None:
                        kinds[j] = kind  # the first record holding a value decides
                    if kind != kinds[j]:
                        status[j].append(OTHER_KIND)
                        values[j].append(None)
                        continue
                status[j].append(found)
                values[j].append(value)

    def finish(self) -> tuple[IndexColumn, ...]:
        """The columns of every record added (int64 for a column with no value at all
        and no declared kind)."""
        out = []
        for (name, _), found, values, status in zip(
            self._spec, self._kinds, self._values, self._status, strict=True
        ):
            kind: ColumnKind = found or "int64"
            out.append(IndexColumn(name, kind, _array(kind, values), _status(status)))
        return tuple(out)


def _status(raw: bytes | bytearray) -> U8Array:
    status: U8Array = np.frombuffer(bytes(raw), dtype=np.uint8).copy()
    return status


def _array(kind: ColumnKind, values: Sequence[int | bytes | None]) -> npt.NDArray[Any]:
    if kind == "int64":
        return np.array([0 if v is None else v for v in values], dtype=np.int64)
    out = np.empty(len(values), dtype=object)
    out[:] = [b"" if v is None else v for v in values]
    return out


# ---- the sidecar section -------------------------------------------------------------


def _pad(n: int) -> int:
    return -n % 8


def encode_columns(columns: Sequence[IndexColumn], count: int) -> bytes:
    """The sidecar section of ``columns`` (each of ``count`` records), size first."""
    parts = [_HEAD.pack(len(columns), 0)]
    for column in columns:
        if len(column) != count:
            raise InvalidArgumentError(
                f"index column {column.name!r} has {len(column)} values for {count} records"
            )
        name = column.name.encode("utf-8")
        parts += [_HEAD.pack(len(name), _KIND_CODES[column.kind]), name, bytes(_pad(len(name)))]
        parts += [column.status.astype(np.uint8).tobytes(), bytes(_pad(count))]
        if column.kind == "int64":
            parts.append(column.values.astype("<i8").tobytes())
        else:
            data = b"".join(column.values.tolist())
            ends = np.fromiter(map(len, column.values.tolist()), np.uint64, count=count)
            parts += [np.cumsum(ends, dtype=np.uint64).astype("<u8").tobytes(), data]
            parts.append(bytes(_pad(len(data))))
    body = b"".join(parts)
    return _SIZE.pack(len(body)) + body


def decode_columns(
    blob: bytes, pos: int, limit: int, count: int, source: str
) -> tuple[tuple[IndexColumn, ...], int]:
    """Parses a section written by :func:`encode_columns` at ``blob[pos:]`` (not past
    ``limit``); returns the columns and where the section ends.

    Raises:
        IndexFormatError: a size or kind the section cannot have.
    """

    def damaged(what: str) -> IndexFormatError:
        return IndexFormatError(f"{source}: damaged index (index columns: {what})")

    def take(n: int) -> int:
        nonlocal pos
        if n < 0 or n > end - pos:
            raise damaged(f"{n} bytes needed at byte {pos}, the section ends at {end}")
        at = pos
        pos += n
        return at

    if limit - pos < _SIZE.size:
        raise damaged("no section size")
    (size,) = _SIZE.unpack_from(blob, pos)
    pos += _SIZE.size
    end = pos + size
    if end > limit or size % 8:
        raise damaged(f"a section of {size} bytes")
    ncols, _ = _HEAD.unpack_from(blob, take(_HEAD.size))
    out: list[IndexColumn] = []
    for _ in range(ncols):
        name_size, code = _HEAD.unpack_from(blob, take(_HEAD.size))
        kind = _CODE_KINDS.get(code)
        if kind is None:
            raise damaged(f"unknown kind {code}")
        at = take(name_size)
        try:
            name = blob[at : at + name_size].decode("utf-8")
        except UnicodeDecodeError:
            raise damaged("a name that is not UTF-8") from None
        take(_pad(name_size))
        status = np.frombuffer(blob, np.uint8, count=count, offset=take(count)).copy()
        take(_pad(count))
        values: npt.NDArray[Any]
        if kind == "int64":
            values = np.frombuffer(blob, "<i8", count=count, offset=take(8 * count))
            values = values.astype(np.int64)
        else:
            ends = np.frombuffer(blob, "<u8", count=count, offset=take(8 * count))
            total = int(ends[-1]) if count else 0
            if count and bool(np.any(np.diff(ends.astype(np.int64), prepend=0) < 0)):
                raise damaged(f"column {name!r}: value ends out of order")
            at = take(total)
            take(_pad(total))
            bounds = [0, *ends.tolist()]
            values = np.empty(count, dtype=object)
            values[:] = [blob[at + a : at + b] for a, b in itertools.pairwise(bounds)]
        out.append(IndexColumn(name, kind, values, status))
    if pos != end:
        raise damaged(f"{end - pos} bytes left after the last column")
    return tuple(out), end


# ---- reading the columns of a file ---------------------------------------------------


def read_columns(
    data: DataBytes,
    kind: Compression,
    offsets: U64Array,
    lengths: U64Array,
    spec: ColumnSpec,
    *,
    policy: DamagePolicy,
    max_record_bytes: int | None = None,
) -> tuple[tuple[IndexColumn, ...], bool]:
    """Reads the columns of every indexed record of ``data``, checking each record's
    data CRC; returns them and whether the file was read again by its path.

    A local uncompressed file is read from ``data``'s own map, at the indexed offsets.
    Any other is read once from start to end, as :func:`~tfrecord_engine.read_records`
    reads it under ``policy`` (which yields the records of an index built under it);
    its records must be the indexed ones, length for length.

    Raises:
        CorruptedRecordError: a record's data CRC fails (named by file, record, offset).
        StaleIndexError: the file does not hold the indexed records.
    """
    recorder = ColumnRecorder(spec)
    if kind is Compression.NONE and data.stat is not None:
        recorder.add(_mapped_records(data, offsets, lengths))
        return recorder.finish(), False
    recorder.add(
        _streamed_records(data.path, kind, lengths, policy, max_record_bytes, data.storage_options)
    )
    return recorder.finish(), True


def _mapped_records(data: DataBytes, offsets: U64Array, lengths: U64Array) -> Iterator[memoryview]:
    """The records of a mapped uncompressed file, data CRCs checked a chunk at a time."""
    if len(offsets) == 0:
        return
    raw = np.frombuffer(data.buf, dtype=np.uint8)
    view = memoryview(data.buf)
    try:
        for a in range(0, len(offsets), _CHUNK):
            starts = offsets[a : a + _CHUNK].astype(np.int64) + framing.HEADER_SIZE
            ends = starts + lengths[a : a + _CHUNK].astype(np.int64)
            at = ends[:, None] + np.arange(4, dtype=np.int64)
            stored = np.ascontiguousarray(raw[at]).view("<u4").reshape(-1)
            bad = np.flatnonzero(framing.crc_spans(raw, starts, ends) != stored)
            if len(bad):
                j = int(bad[0])
                s, e = int(starts[j]), int(ends[j])
                framing.check_data(
                    view[s:e],
                    int(stored[j]),
                    path=data.path,
                    record_index=a + j,
                    offset=s - framing.HEADER_SIZE,
                )
            for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
                yield view[s:e]
    finally:
        view.release()
        del raw


def _streamed_records(  # noqa: PLR0917 - one private call site
    path: str,
    kind: Compression,
    lengths: U64Array,
    policy: DamagePolicy,
    max_record_bytes: int | None,
    storage_options: StorageOptionsArg,
) -> Iterator[bytes]:
    """The records of a file read from start to end, checked against the index."""
    n = len(lengths)
    count = 0
    ignored: list[DamageReport] = []  # (the index already lists this file's damage)
    for record in read_records(
        path,
        kind,
        verify=True,
        on_damage=policy,
        on_damage_report=ignored.append,
        max_record_bytes=max_record_bytes,
        storage_options=storage_options,
    ):
        if count >= n or len(record) != int(lengths[count]):
            raise StaleIndexError(
                f"{path}: record {count} is not the indexed one (the file changed while "
                "its index columns were read?); index it again"
            )
        count += 1
        yield record
    if count != n:
        raise StaleIndexError(
            f"{path}: {count} records read, the index has {n} (the file changed while "
            "its index columns were read?); index it again"
        )
