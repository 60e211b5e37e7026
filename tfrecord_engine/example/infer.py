"""Inferring a feature spec from decoded records: types, lengths and presence per key.

What ``tfr schema`` prints and ``tfe.infer_features`` returns. The rules, per key of an
``Example`` or a context:

- one type, present in every record, always L values: ``FixedLenFeature([L])``
  (``[]`` when L is 1);
- one type, present in every record, varying length: ``VarLenFeature``;
- missing in some records, always 1 value: ``FixedLenFeature([], default_value=<zero>)``
  (the default fills the gaps; the comment says how many there were);
- missing in some records, otherwise: ``VarLenFeature`` (a fixed shape would need a
  default of L values);
- several types: no spec parses every record; the key is commented out (as is a
  feature list that only ever held empty steps: its type is unknown).

A bytes key with one value in every record of an ``Example``, every value an encoded
image (PNG, JPEG, GIF, WebP, TIFF by their magic bytes, and the first ones decoded by
Pillow where it is installed), gets ``ImageFeature()``: the pixels, decoded in batches
(``tfe.ImageFeature``; not for a SequenceExample's context, which
``parse_sequence_example`` reads as bytes).

A bytes key with one value in every record, every value of the same size of at least
``RAW_HINT_BYTES`` bytes (an array stored with ``tobytes()``, typically), keeps its
``FixedLenFeature([], "string")`` suggestion; the comment adds that
``RawFeature([size], "uint8")`` reads it as an array (the dtype and shape are the
writer's to say). Only for binary values: not when most values are text (printable
UTF-8, :func:`is_text`: captions of one length are strings, not arrays; the comment
says "text"), nor when the values are encoded files (PNG, JPEG, GIF, WebP, ... :
:func:`encoded_format` recognises their magic bytes): encoded files of equal size are
still variable-format bytes to decode, never a fixed array, so the comment names the
format instead.

Per key of a ``SequenceExample``'s feature lists: every step of every record holds L
values -> ``FixedLenSequenceFeature([L])`` (``allow_missing=True`` if some records lack
the list); otherwise ``VarLenFeature``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ..errors import MissingDependencyError
from .image import ImageFeature, decode_image_bytes
from .specs import FeatureSpec, FixedLenFeature, FixedLenSequenceFeature, VarLenFeature

__all__ = [
    "IMAGE_FORMATS",
    "RAW_HINT_BYTES",
    "FeatureStats",
    "SchemaStats",
    "Suggestion",
    "encoded_format",
    "is_text",
]

#: Fixed-size bytes values at least this long get the RawFeature hint.
RAW_HINT_BYTES: Final = 16

# Magic bytes of encoded files stored as bytes features, by first byte. Only magics of
# three bytes or more: a raw array starts so by chance once in 16 million values.
_MAGICS: Final[dict[int, tuple[tuple[bytes, str], ...]]] = {
    0x89: ((b"\x89PNG\r\n\x1a\n", "PNG"),),
    0xFF: ((b"\xff\xd8\xff", "JPEG"),),
    0x47: ((b"GIF87a", "GIF"), (b"GIF89a", "GIF")),
    0x49: ((b"II*\x00", "TIFF"), (b"ID3", "MP3")),
    0x4D: ((b"MM\x00*", "TIFF"),),
    0x00: ((b"\x00\x00\x00\x0cjP  \r\n\x87\n", "JPEG 2000"),),
    0x1F: ((b"\x1f\x8b\x08", "GZIP"),),
    0x25: ((b"%PDF-", "PDF"),),
    0x50: ((b"PK\x03\x04", "ZIP"),),
    0x66: ((b"fLaC", "FLAC"),),
    0x4F: ((b"OggS", "Ogg"),),
    0x93: ((b"\x93NUMPY", "NPY"),),
}
# RIFF containers: the format is at bytes 8-12.
_RIFF: Final = {b"WEBP": "WebP", b"WAVE": "WAV", b"AVI ": "AVI"}


def encoded_format(value: bytes) -> str | None:
    """The file format ``value`` starts with (its magic bytes), or ``None``.

    >>> encoded_format(b"\\x89PNG\\r\\n\\x1a\\n..."), encoded_format(b"RIFF\\0\\0\\0\\0WEBPVP8 ")
    ('PNG', 'WebP')
    >>> encoded_format(bytes(784)) is None
    True
    """
    if not value:
        return None
    if value[:4] == b"RIFF":
        return _RIFF.get(value[8:12])
    if value[4:8] == b"ftyp":  # ISO base media: AVIF, HEIC, MP4, MOV
        return "ISO-BMFF (AVIF/HEIC/MP4)"
    for magic, name in _MAGICS.get(value[0], ()):
        if value.startswith(magic):
            return name
    return None


def is_text(value: bytes) -> bool:
    """Whether ``value`` is printable UTF-8 text (tabs and line breaks allowed).

    A raw array is binary: a zero byte, a control byte or invalid UTF-8 in 16 bytes is
    all but certain (16 random bytes are printable ASCII about once in eight million).

    >>> is_text("a photo of a cat".encode()), is_text(bytes(16)), is_text(b"\\xff\\xfe")
    (True, False, False)
    """
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return text.isprintable() or all(c.isprintable() or c in "\t\n\r" for c in text)


_DTYPES: Final = {"int64": "int64", "float": "float32", "bytes": "string"}
_TF_DTYPES: Final = {"int64": "tf.int64", "float": "tf.float32", "bytes": "tf.string"}
_ZEROS: Final = {"int64": "0", "float": "0.0", "bytes": 'b""'}


def _type_of(values: npt.NDArray[Any]) -> str:
    if values.dtype == np.int64:
        return "int64"
    if values.dtype == np.float32:
        return "float"
    return "bytes"


@dataclasses.dataclass
class FeatureStats:
    """What was seen of one key: types (with record counts), value counts, presence."""

    types: dict[str, int] = dataclasses.field(default_factory=dict)
    present: int = 0
    min_len: int | None = None
    max_len: int | None = None
    # Feature lists only: steps per record.
    min_steps: int | None = None
    max_steps: int | None = None
    # Bytes values only: the smallest and largest value sizes seen.
    min_bytes: int | None = None
    max_bytes: int | None = None
    # Bytes values only: how many values start as an encoded file of each format.
    formats: dict[str, int] = dataclasses.field(default_factory=dict)
    # Bytes values only: how many are text (see is_text).
    texts: int = 0
    # Bytes values only: the first few encoded files seen (to check that they decode).
    examples: list[bytes] = dataclasses.field(default_factory=list, repr=False)

    def add_formats(self, values: Iterable[bytes]) -> None:
        """Counts the bytes values that are encoded files (see :func:`encoded_format`)
        and those that are text (see :func:`is_text`)."""
        for value in values:
            name = encoded_format(value)
            if name is not None:
                self.formats[name] = self.formats.get(name, 0) + 1
                if len(self.examples) < _CHECKED_IMAGES:
                    self.examples.append(value)
            elif is_text(value):
                self.texts += 1

    def add_sizes(self, sizes: npt.NDArray[np.int64]) -> None:
        """Counts the byte sizes of bytes values."""
        if sizes.size:
            lo, hi = int(sizes.min()), int(sizes.max())
            self.min_bytes = lo if self.min_bytes is None else min(self.min_bytes, lo)
            self.max_bytes = hi if self.max_bytes is None else max(self.max_bytes, hi)

    def add(self, values: npt.NDArray[Any]) -> None:
        """Counts one value list (one record's feature, or one step of a list)."""
        t = _type_of(values)
        self.types[t] = self.types.get(t, 0) + 1
        n = len(values)
        self.min_len = n if self.min_len is None else min(self.min_len, n)
        self.max_len = n if self.max_len is None else max(self.max_len, n)
        if t == "bytes":
            flat = values.tolist()
            self.add_sizes(np.fromiter(map(len, flat), np.int64, n))
            self.add_formats(flat)

    def add_many(self, type_name: str, lengths: npt.NDArray[np.int64] | None) -> None:
        """Counts ``len(lengths)`` records holding this key with ``type_name`` values.

        ``lengths`` may be ``None`` (with a count of one record) when only the type is
        known.
        """
        count = 1 if lengths is None else len(lengths)
        if count == 0:
            return
        self.types[type_name] = self.types.get(type_name, 0) + count
        self.present += count
        if lengths is not None:
            lo, hi = int(lengths.min()), int(lengths.max())
            self.min_len = lo if self.min_len is None else min(self.min_len, lo)
            self.max_len = hi if self.max_len is None else max(self.max_len, hi)

    def add_steps(self, steps: list[npt.NDArray[Any]]) -> None:
        """Counts one record's feature list."""
        self.present += 1
        n = len(steps)
        self.min_steps = n if self.min_steps is None else min(self.min_steps, n)
        self.max_steps = n if self.max_steps is None else max(self.max_steps, n)
        for s in steps:
            # A step with no list has no type: it is an empty step of any type.
            if len(s) or s.dtype != np.object_:
                self.add(s)
            else:
                self.min_len = 0 if self.min_len is None else min(self.min_len, 0)
                self.max_len = 0 if self.max_len is None else self.max_len


@dataclasses.dataclass
class SchemaStats:
    """Per-key statistics of ``records`` decoded records."""

    records: int = 0
    features: dict[str, FeatureStats] = dataclasses.field(default_factory=dict)
    lists: dict[str, FeatureStats] = dataclasses.field(default_factory=dict)
    sequence: bool = False

    def add(
        self,
        features: Mapping[str, npt.NDArray[Any]],
        lists: Mapping[str, list[npt.NDArray[Any]]] | None,
    ) -> None:
        """Counts one decoded record (``lists`` is ``None`` for an Example)."""
        self.records += 1
        for key, values in features.items():
            stats = self.features.setdefault(key, FeatureStats())
            stats.present += 1
            stats.add(values)
        if lists is not None:
            self.sequence = True
            for key, steps in lists.items():
                self.lists.setdefault(key, FeatureStats()).add_steps(steps)

    def decide(self, key: str, *, sequence: bool, tf: bool = False) -> Suggestion:
        """What ``key`` should be parsed with (see the module rules)."""
        s = (self.lists if sequence else self.features)[key]
        rate = s.present / self.records if self.records else 0.0
        where = "" if s.present == self.records else f"; in {rate:.1%} of records"
        if not s.types:
            return Suggestion(
                "none", "", (), "no values seen (empty lists only): the type is unknown"
            )
        if len(s.types) != 1:
            kinds = ", ".join(f"{t} in {n}" for t, n in sorted(s.types.items()))
            return Suggestion(
                "none", "", (), f"conflicting types ({kinds}): no single spec parses every record"
            )
        (t,) = s.types
        lo, hi = s.min_len or 0, s.max_len or 0
        fixed = lo == hi
        shape = () if lo == 1 else (lo,)
        if sequence:
            steps = f"{s.min_steps}-{s.max_steps} steps" + where
            if fixed:
                missing = s.present < self.records
                return Suggestion(
                    "sequence", t, shape, f"{_values(lo)} per step, {steps}", missing=missing
                )
            return Suggestion("varlen", t, (), f"{lo}-{hi} values per step, {steps}")
        if fixed and s.present == self.records:
            note = f"always {_values(lo)}"
            if t == "bytes" and lo == 1 and not tf:
                images = None if self.sequence else _images(s)
                if images is not None:
                    return Suggestion(
                        "image", t, (), f"{note}, encoded {images} images: decoded to pixels"
                    )
                note += _raw_hint(s)
            return Suggestion("fixed", t, shape, note)
        if fixed and lo == 1:
            return Suggestion("default", t, (), f"1 value{where}; the default fills the rest")
        return Suggestion("varlen", t, (), f"{lo}-{hi} values{where}")

    def suggest(self, key: str, *, sequence: bool, tf: bool = False) -> tuple[str | None, str]:
        """``(spec expression or None, comment)`` for one key (see the module rules)."""
        found = self.decide(key, sequence=sequence, tf=tf)
        return found.expression(tf=tf), found.note

    def spec(self, key: str, *, sequence: bool) -> FeatureSpec | None:
        """The spec object for one key, or ``None`` where no spec parses every record."""
        return self.decide(key, sequence=sequence).spec()


@dataclasses.dataclass(frozen=True)
class Suggestion:
    """One key's inferred spec: its kind, type and shape, and the comment that says why.

    ``kind``: ``"fixed"``, ``"default"`` (a scalar with a zero default), ``"varlen"``,
    ``"sequence"`` (``FixedLenSequenceFeature``), ``"image"`` or ``"none"`` (no spec
    parses every record). ``dtype`` is the values' type (``"int64"``, ``"float"`` or
    ``"bytes"``).

    >>> s = Suggestion("fixed", "float", (3,), "always 3 values")
    >>> s.expression(tf=False), s.spec().shape
    ('tfe.FixedLenFeature([3], "float32")', (3,))
    """

    kind: str
    dtype: str
    shape: tuple[int, ...]
    note: str
    missing: bool = False

    def expression(self, *, tf: bool) -> str | None:
        """The spec as Python source (``tfe.`` or, with ``tf``, ``tf.io.``)."""
        if self.kind == "none":
            return None
        prefix = "tf.io." if tf else "tfe."
        dtype = _TF_DTYPES[self.dtype] if tf else f'"{_DTYPES[self.dtype]}"'
        shape = f"[{self.shape[0]}]" if self.shape else "[]"
        if self.kind == "image":
            return "tfe.ImageFeature()"
        if self.kind == "sequence":
            missing = ", allow_missing=True" if self.missing else ""
            return f"{prefix}FixedLenSequenceFeature({shape}, {dtype}{missing})"
        if self.kind == "fixed":
            return f"{prefix}FixedLenFeature({shape}, {dtype})"
        if self.kind == "default":
            return f"{prefix}FixedLenFeature([], {dtype}, default_value={_ZEROS[self.dtype]})"
        return f"{prefix}VarLenFeature({dtype})"

    def spec(self) -> FeatureSpec | None:
        """The spec object (``tfe``'s), or ``None`` for ``"none"``."""
        dtype = _DTYPES.get(self.dtype, "string")
        if self.kind == "none":
            return None
        if self.kind == "image":
            return ImageFeature()
        if self.kind == "sequence":
            return FixedLenSequenceFeature(list(self.shape), dtype, allow_missing=self.missing)
        if self.kind == "fixed":
            return FixedLenFeature(list(self.shape), dtype)
        if self.kind == "default":
            return FixedLenFeature([], dtype, default_value=_ZERO_VALUES[self.dtype])
        return VarLenFeature(dtype)


#: Encoded formats :class:`ImageFeature` proposes to decode (Pillow reads them all).
IMAGE_FORMATS: Final = frozenset({"PNG", "JPEG", "GIF", "WebP", "TIFF"})
#: Values kept per key to check that they decode, where Pillow is installed.
_CHECKED_IMAGES: Final = 2
_ZERO_VALUES: Final[dict[str, Any]] = {"int64": 0, "float": 0.0, "bytes": b""}


def _images(s: FeatureStats) -> str | None:
    """The formats of a key whose every value is an encoded image, or ``None``."""
    if not s.formats or sum(s.formats.values()) != s.present:
        return None
    if not set(s.formats) <= IMAGE_FORMATS:
        return None
    try:
        for value in s.examples:
            decode_image_bytes(value, ImageFeature())
    except ValueError:
        return None  # magic bytes of an image, but not one: the bytes stay bytes
    except MissingDependencyError:
        pass  # (ImageFeature then says which extra to install)
    return "/".join(sorted(s.formats))


def _raw_hint(s: FeatureStats) -> str:
    """The RawFeature hint for single bytes values of one size (see the module rules)."""
    size = s.min_bytes
    if size is None or size != s.max_bytes or size < RAW_HINT_BYTES:
        return ""
    if s.formats:
        # Encoded files of one size are a coincidence of the encoder, not an array.
        kinds = "/".join(sorted(s.formats))
        return f" of {size} bytes, encoded {kinds} data: decode it (not a RawFeature array)"
    if 2 * s.texts > s.present:
        # Text of one length (captions, ids, hashes in hex) is a string, not an array; a
        # majority, as an array may read as text by chance (a row of one printable byte).
        return f" of {size} bytes, text"
    return f' of {size} bytes: tfe.RawFeature([{size}], "uint8") reads arrays'


def _values(n: int) -> str:
    return "1 value" if n == 1 else f"{n} values"
