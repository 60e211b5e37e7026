"""Inferring a feature spec from decoded records: types, lengths and presence per key.

The rules (what ``tfr schema`` suggests), per key of an ``Example`` or a context:

- one type, present in every record, always L values: ``FixedLenFeature([L])``
  (``[]`` when L is 1);
- one type, present in every record, varying length: ``VarLenFeature``;
- missing in some records, always 1 value: ``FixedLenFeature([], default_value=<zero>)``
  (the default fills the gaps; the comment says how many there were);
- missing in some records, otherwise: ``VarLenFeature`` (a fixed shape would need a
  default of L values);
- several types: no spec parses every record; the key is commented out (as is a
  feature list that only ever held empty steps: its type is unknown).

A bytes key with one value in every record, every value of the same size of at least
``RAW_HINT_BYTES`` bytes (an array stored with ``tobytes()``, typically), keeps its
``FixedLenFeature([], "string")`` suggestion; the comment adds that
``RawFeature([size], "uint8")`` reads it as an array (the dtype and shape are the
writer's to say). Only for binary values: not when most values are text (printable
UTF-8, :func:`is_text`: captions of one length are strings, not arrays; the comment
says "text"), nor when the values are encoded files (PNG, JPEG, GIF, WebP, ... :
:func:`encoded_format` recognises their magic bytes): encoded images of equal size are
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

__all__ = [
    "RAW_HINT_BYTES",
    "FeatureStats",
    "SchemaStats",
    "encoded_format",
    "is_text",
    "quote_key",
    "render_json",
    "render_python",
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

    def add_formats(self, values: Iterable[bytes]) -> None:
        """Counts the bytes values that are encoded files (see :func:`encoded_format`)
        and those that are text (see :func:`is_text`)."""
        for value in values:
            name = encoded_format(value)
            if name is not None:
                self.formats[name] = self.formats.get(name, 0) + 1
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

    def suggest(self, key: str, *, sequence: bool, tf: bool = False) -> tuple[str | None, str]:
        """``(spec expression or None, comment)`` for one key (see the module rules)."""
        s = (self.lists if sequence else self.features)[key]
        prefix = "tf.io." if tf else "tfe."
        rate = s.present / self.records if self.records else 0.0
        where = "" if s.present == self.records else f"; in {rate:.1%} of records"
        if not s.types:
            return None, "no values seen (empty lists only): the type is unknown"
        if len(s.types) != 1:
            kinds = ", ".join(f"{t} in {n}" for t, n in sorted(s.types.items()))
            return None, f"conflicting types ({kinds}): no single spec parses every record"
        (t,) = s.types
        dtype = _TF_DTYPES[t] if tf else f'"{_DTYPES[t]}"'
        lo, hi = s.min_len or 0, s.max_len or 0
        fixed = lo == hi
        if sequence:
            steps = f"{s.min_steps}-{s.max_steps} steps" + where
            if fixed:
                shape = "[]" if lo == 1 else f"[{lo}]"
                missing = ", allow_missing=True" if s.present < self.records else ""
                expr = f"{prefix}FixedLenSequenceFeature({shape}, {dtype}{missing})"
                return expr, f"{_values(lo)} per step, {steps}"
            return f"{prefix}VarLenFeature({dtype})", f"{lo}-{hi} values per step, {steps}"
        if fixed and s.present == self.records:
            shape = "[]" if lo == 1 else f"[{lo}]"
            note = f"always {_values(lo)}"
            if t == "bytes" and lo == 1 and not tf:
                note += _raw_hint(s)
            return f"{prefix}FixedLenFeature({shape}, {dtype})", note
        if fixed and lo == 1:
            expr = f"{prefix}FixedLenFeature([], {dtype}, default_value={_ZEROS[t]})"
            return expr, f"1 value{where}; the default fills the rest"
        return f"{prefix}VarLenFeature({dtype})", f"{lo}-{hi} values{where}"


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


def _block(name: str, stats: SchemaStats, *, sequence: bool, tf: bool) -> list[str]:
    keys = sorted(stats.lists if sequence else stats.features)
    lines = [f"{name} = {{"]
    for key in keys:
        expr, comment = stats.suggest(key, sequence=sequence, tf=tf)
        if expr is None:
            lines.append(f"    # {key!r}: {comment}")
        else:
            lines.append(f"    {quote_key(key)}: {expr},  # {comment}")
    lines.append("}")
    return lines


def quote_key(key: str) -> str:
    """``key`` as a Python string literal, double-quoted where it can be."""
    # repr() gives a valid Python literal for any key; prefer double quotes (ruff style).
    text = repr(key)
    return f'"{key}"' if text == f"'{key}'" and '"' not in key and "\\" not in key else text


def render_python(stats: SchemaStats, *, source: str, tf: bool = False) -> str:
    """Ready-to-paste Python for the inferred spec (``tfe`` or, with ``tf``, ``tf.io``)."""
    head = ["import tensorflow as tf" if tf else "import tfrecord_engine as tfe", ""]
    head.append(f"# Inferred by `tfr schema` from {source}.")
    if not stats.sequence:
        return "\n".join([*head, *_block("features", stats, sequence=False, tf=tf)]) + "\n"
    body = [
        *_block("context_features", stats, sequence=False, tf=tf),
        *_block("sequence_features", stats, sequence=True, tf=tf),
    ]
    return "\n".join([*head, *body]) + "\n"


def _describe(stats: SchemaStats, key: str, *, sequence: bool) -> dict[str, Any]:
    s = (stats.lists if sequence else stats.features)[key]
    expr, comment = stats.suggest(key, sequence=sequence)
    out: dict[str, Any] = {
        "types": dict(sorted(s.types.items())),
        "present": s.present,
        "presence": s.present / stats.records if stats.records else 0.0,
        "min_length": s.min_len,
        "max_length": s.max_len,
        "fixed_length": s.min_len == s.max_len,
        "suggested": expr,
        "note": comment,
    }
    if sequence:
        out["min_steps"], out["max_steps"] = s.min_steps, s.max_steps
    return out


def render_json(stats: SchemaStats, *, source: str) -> dict[str, Any]:
    """The inferred statistics and suggestions as a JSON-ready dict."""
    out: dict[str, Any] = {
        "source": source,
        "records": stats.records,
        "kind": "sequence_example" if stats.sequence else "example",
        "features": {k: _describe(stats, k, sequence=False) for k in sorted(stats.features)},
    }
    if stats.sequence:
        out["feature_lists"] = {k: _describe(stats, k, sequence=True) for k in sorted(stats.lists)}
    return out
