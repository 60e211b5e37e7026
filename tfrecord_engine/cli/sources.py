"""Inputs of ``tfr convert``: numpy arrays, CSV tables and image folders as Examples.

Each source knows its record count before writing starts (shard sizes depend on it)
and yields serialized ``tf.train.Example`` records in a fixed order:

- ``.npz``: every array is split along axis 0, one feature per array (all arrays need
  the same first dimension); ``.npy``: one array, one feature (``--key``, default the
  file's stem). Rows are flattened; bool and integer arrays become int64 (uint8 arrays
  optionally one bytes value per row: ``--uint8-as-bytes``), floats become
  float32 (an Example has no float64: float64 values are rounded, and a note says so),
  bytes/str arrays become bytes.
- CSV/TSV: a header row names the columns; a column whose non-empty cells are all
  integers is int64, all numbers float32, anything else bytes (UTF-8). An empty cell of
  a numeric column leaves the feature out of that record; an empty string cell is an
  empty bytes value.
- an image folder: ``root/<class>/**/<file>`` (class names sorted -> labels 0, 1, ...),
  features ``image`` (the file's bytes, not decoded), ``label`` (int64) and, unless
  turned off, ``class`` (the class name); files with other extensions are counted and
  reported, not read.

Each source also says how to read its records back (:class:`Spec`, what ``tfr convert``
prints): an Example stores a row's values flat, so the shape of an array's rows (an
``(N, 8, 8)`` array: ``FixedLenFeature([8, 8])``) is known only here, not to ``tfr
schema`` reading the output.
"""

from __future__ import annotations

import csv
import dataclasses
import os
from collections.abc import Iterator
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from ..example import encode_example
from .common import BadInput, Failure

__all__ = [
    "CsvSource",
    "ImageFolderSource",
    "NumpySource",
    "Source",
    "Spec",
    "open_source",
]

IMAGE_EXTENSIONS: Final = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff")


_ZEROS: Final = {"int64": "0", "float32": "0.0", "string": 'b""'}


@dataclasses.dataclass(frozen=True, slots=True)
class Spec:
    """How one converted feature reads back: its shape per record and dtype.

    Attributes:
        shape: the values of one record, in the input's shape (``()``: one value).
        dtype: ``"int64"``, ``"float32"`` or ``"string"``; with ``raw``, the array's.
        raw: one bytes value per record holding the array (``--uint8-as-bytes``).
        default: missing in some records (an empty CSV cell): a zero default fills it.
    """

    shape: tuple[int, ...]
    dtype: str
    raw: bool = False
    default: bool = False

    def expression(self) -> str:
        """The spec as Python, e.g. ``tfe.FixedLenFeature([8, 8], "float32")``.

        >>> Spec((8, 8), "float32").expression()
        'tfe.FixedLenFeature([8, 8], "float32")'
        >>> Spec((), "int64", default=True).expression()
        'tfe.FixedLenFeature([], "int64", default_value=0)'
        """
        shape = "[" + ", ".join(map(str, self.shape)) + "]"
        if self.raw:
            return f'tfe.RawFeature({shape}, "{self.dtype}")'
        default = f", default_value={_ZEROS[self.dtype]}" if self.default else ""
        return f'tfe.FixedLenFeature({shape}, "{self.dtype}"{default})'


class Source(Protocol):
    """A convert input: a known number of records and the records themselves."""

    path: str
    notes: list[str]
    #: Per feature, how its records read back (``None``: known per value only).
    specs: dict[str, Spec | None]

    def __len__(self) -> int: ...

    def records(self) -> Iterator[bytes]:
        """Yields the serialized Examples, ``len(self)`` of them."""
        ...


def _array_spec(array: npt.NDArray[Any], *, uint8_bytes: bool) -> Spec | None:
    """How a row of ``array`` reads back, as :func:`_row_converter` stores it."""
    shape = tuple(int(d) for d in array.shape[1:])
    if uint8_bytes and array.dtype == np.uint8:
        return Spec(shape, "uint8", raw=True)
    kind = array.dtype.kind
    if kind in "biu":
        return Spec(shape, "int64")
    if kind == "f":
        return Spec(shape, "float32")
    if kind in "SU":
        return Spec(shape, "string")
    return None  # object arrays: each value's type decides


def _row_converter(
    name: str, array: npt.NDArray[Any], notes: list[str], *, uint8_bytes: bool = False
) -> Any:
    """How one row of ``array`` becomes a feature value (checked once per array)."""
    kind = array.dtype.kind
    if uint8_bytes and array.dtype == np.uint8:
        # One bytes value per row (raw pixels), as image datasets usually store them.
        return lambda row: [row.tobytes()]
    if kind == "b" or (kind == "u" and array.dtype.itemsize < 8):
        return lambda row: row.astype(np.int64)
    if kind == "f" and array.dtype.itemsize > 4:
        notes.append(f"{name}: {array.dtype} values stored as float32 (Example has no float64)")
    if kind in "SU":
        return lambda row: row.astype(object)
    if kind not in "iufO":
        raise Failure(f"{name}: cannot store a {array.dtype} array in an Example")
    return lambda row: row


class NumpySource:
    """Records from a ``.npz`` (one feature per array) or ``.npy`` file (one feature)."""

    def __init__(self, path: str, key: str | None = None, *, uint8_bytes: bool = False) -> None:
        self.path = path
        self.notes: list[str] = []
        if path.endswith(".npz"):
            with np.load(path, allow_pickle=False) as npz:
                arrays = {k: npz[k] for k in npz.files}
        else:
            # A memory map: rows are read as they are converted, not all up front.
            name = key or os.path.splitext(os.path.basename(path))[0]
            arrays = {name: np.load(path, mmap_mode="r", allow_pickle=False)}
        if not arrays:
            raise Failure(f"{path}: no arrays")
        lengths = {k: (a.shape[0] if a.ndim else None) for k, a in arrays.items()}
        if None in lengths.values() or len(set(lengths.values())) != 1:
            raise Failure(
                f"{path}: every array needs the same first dimension (one row per record), "
                f"got {lengths}"
            )
        self._arrays = arrays
        self._convert = {
            k: _row_converter(f"{path}: {k}", a, self.notes, uint8_bytes=uint8_bytes)
            for k, a in arrays.items()
        }
        self.specs = {k: _array_spec(a, uint8_bytes=uint8_bytes) for k, a in arrays.items()}
        self._n = next(iter(lengths.values())) or 0

    def __len__(self) -> int:
        return self._n

    def records(self) -> Iterator[bytes]:
        """Yields one Example per row."""
        for i in range(self._n):
            yield encode_example(
                {k: self._convert[k](a[i : i + 1].reshape(-1)) for k, a in self._arrays.items()}
            )


def _is_int(cell: str) -> bool:
    try:
        value = int(cell)
    except ValueError:
        return False
    return -(1 << 63) <= value < (1 << 63)


def _is_float(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


class CsvSource:
    """Records from a CSV (or, by extension or ``delimiter``, TSV) file with a header."""

    def __init__(self, path: str, delimiter: str | None = None) -> None:
        self.path = path
        self.notes: list[str] = []
        self._delimiter = delimiter or ("\t" if path.endswith(".tsv") else ",")
        # First pass: column types and the row count (shard sizes need it up front).
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f, delimiter=self._delimiter)
            header = next(reader, None)
            if not header:
                raise Failure(f"{path}: no header row")
            if len(set(header)) != len(header):
                raise Failure(f"{path}: duplicate column names in the header")
            ints = [True] * len(header)
            floats = [True] * len(header)
            seen = [False] * len(header)
            empty = [False] * len(header)
            n = 0
            for row in reader:
                if len(row) != len(header):
                    raise Failure(
                        f"{path}: line {reader.line_num} has {len(row)} cells, "
                        f"the header has {len(header)}"
                    )
                n += 1
                for j, cell in enumerate(row):
                    if cell == "":
                        empty[j] = True
                        continue
                    seen[j] = True
                    if ints[j] and not _is_int(cell):
                        ints[j] = False
                    if floats[j] and not ints[j] and not _is_float(cell):
                        floats[j] = False
        self.header = header
        # A column with no value at all is text: nothing says it is a number.
        self.types = [
            "int64" if i and v else "float" if fl and v else "bytes"
            for i, fl, v in zip(ints, floats, seen, strict=True)
        ]
        self._n = n
        # An empty cell of a numeric column leaves the feature out of that record.
        self.specs: dict[str, Spec | None] = {
            name: Spec((), "string")
            if kind == "bytes"
            else Spec((), "int64" if kind == "int64" else "float32", default=e)
            for name, kind, e in zip(header, self.types, empty, strict=True)
        }

    def __len__(self) -> int:
        return self._n

    def records(self) -> Iterator[bytes]:
        """Yields one Example per data row."""
        with open(self.path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f, delimiter=self._delimiter)
            next(reader)
            for row in reader:
                feats: dict[str, object] = {}
                for name, kind, cell in zip(self.header, self.types, row, strict=True):
                    if kind == "bytes":
                        feats[name] = [cell.encode("utf-8")]
                    elif cell != "":
                        feats[name] = (
                            np.array([int(cell)], np.int64)
                            if kind == "int64"
                            else np.array([float(cell)], np.float32)
                        )
                yield encode_example(feats)


class ImageFolderSource:
    """Records from ``root/<class>/...`` image files (bytes, label, class name)."""

    def __init__(
        self,
        root: str,
        *,
        extensions: tuple[str, ...] = IMAGE_EXTENSIONS,
        class_names: bool = True,
    ) -> None:
        self.path = root
        self.notes: list[str] = []
        self.classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
        if not self.classes:
            raise Failure(f"{root}: no class sub-folders")
        self._files: list[tuple[str, int]] = []
        skipped = 0
        for label, name in enumerate(self.classes):
            for folder, dirs, names in os.walk(os.path.join(root, name)):
                dirs.sort()
                for file in sorted(names):
                    if file.lower().endswith(extensions):
                        self._files.append((os.path.join(folder, file), label))
                    else:
                        skipped += 1
        if skipped:
            self.notes.append(
                f"{root}: {skipped} file(s) without an image extension "
                f"({' '.join(extensions)}) not converted"
            )
        self._class_names = class_names
        self.specs: dict[str, Spec | None] = {
            "image": Spec((), "string"),
            "label": Spec((), "int64"),
        }
        if class_names:
            self.specs["class"] = Spec((), "string")

    def __len__(self) -> int:
        return len(self._files)

    def records(self) -> Iterator[bytes]:
        """Yields one Example per image file, class by class, files sorted."""
        for path, label in self._files:
            with open(path, "rb") as f:
                feats: dict[str, object] = {"image": [f.read()], "label": label}
            if self._class_names:
                feats["class"] = self.classes[label]
            yield encode_example(feats)


def open_source(path: str, kind: str, **options: Any) -> Source:
    """The source for ``path``: ``kind`` or (``auto``) from a folder or the extension."""
    if kind == "auto":
        ext = os.path.splitext(path)[1].lower()
        if os.path.isdir(path):
            kind = "images"
        elif ext in (".npz", ".npy"):
            kind = "numpy"
        elif ext in (".csv", ".tsv"):
            kind = "csv"
        else:
            raise BadInput(f"{path}: cannot tell the input type from the name; use --from")
    if kind == "numpy":
        return NumpySource(path, options.get("key"), uint8_bytes=options.get("uint8_bytes", False))
    if kind == "csv":
        return CsvSource(path, options.get("delimiter"))
    return ImageFolderSource(
        path,
        extensions=options.get("extensions") or IMAGE_EXTENSIONS,
        class_names=options.get("class_names", True),
    )
