"""Decoded Examples / SequenceExamples as human-readable text or JSON objects.

Bytes values (``--bytes``): ``auto`` shows printable UTF-8 as text and anything else as
base64 (in JSON as ``{"base64": "..."}``, so the two never mix up); ``base64`` and
``hex`` encode every value. Floats are float32 values, written with the shortest text
that reads back to the same float32; non-finite ones as ``"NaN"``, ``"Infinity"``,
``"-Infinity"`` (strict JSON has no such numbers).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from ..errors import MalformedExampleError
from ..example import decode_example, decode_sequence_example

__all__ = ["BytesMode", "Decoded", "Kind", "decode_record", "to_json", "to_text"]

Kind = Literal["auto", "example", "sequence"]
BytesMode = Literal["auto", "base64", "hex"]
Array = npt.NDArray[Any]
#: Values shown per feature (and steps per feature list) in text mode without --full.
_TEXT_VALUES: Final = 16
_TEXT_BYTES: Final = 48


@dataclasses.dataclass(frozen=True, slots=True)
class Decoded:
    """One decoded record: ``lists`` is ``None`` for an ``Example``."""

    features: dict[str, Array]
    lists: dict[str, list[Array]] | None


def decode_record(record: bytes, kind: Kind, *, where: str) -> Decoded:
    """Decodes ``record`` as an Example, a SequenceExample, or (``auto``) whichever fits.

    ``auto`` reads a record with feature lists as a SequenceExample and anything else
    as an Example (the two share field 1, so an Example is a SequenceExample with
    context only).

    Raises:
        MalformedExampleError: not a valid (Sequence)Example; the message names ``where``.
    """
    try:
        if kind == "example":
            return Decoded(decode_example(record), None)
        context, lists = decode_sequence_example(record)
    except MalformedExampleError as exc:
        what = "Example" if kind == "example" else "SequenceExample" if kind == "sequence" else ""
        raise MalformedExampleError(
            f"{where}: not a tf.train.{what or 'Example'} ({exc}); "
            "use --raw or --payload for other records",
            offset=exc.offset,
        ) from exc
    if kind == "sequence" or lists:
        return Decoded(context, lists)
    return Decoded(context, None)


def _type_name(values: Array) -> str:
    if values.dtype == np.int64:
        return "int64"
    if values.dtype == np.float32:
        return "float"
    return "bytes"


def _float(v: float) -> float | str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    # str() of a float32 is its shortest round-tripping text (0.1, not 0.10000000149).
    return float(str(np.float32(v)))


def _printable(value: bytes) -> str | None:
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if all(c.isprintable() or c in "\t\n\r" for c in text) else None


def _bytes_json(value: bytes, mode: BytesMode) -> object:
    if mode == "hex":
        return value.hex()
    if mode == "auto":
        text = _printable(value)
        if text is not None:
            return text
        return {"base64": base64.b64encode(value).decode("ascii")}
    return base64.b64encode(value).decode("ascii")


def _values_json(values: Array, mode: BytesMode) -> dict[str, list[Any]]:
    name = _type_name(values)
    if name == "int64":
        return {name: values.tolist()}
    if name == "float":
        return {name: [_float(v) for v in values.tolist()]}
    return {name: [_bytes_json(v, mode) for v in values.tolist()]}


def to_json(decoded: Decoded, *, path: str, index: int, mode: BytesMode) -> dict[str, Any]:
    """The JSON object of one record (``path``, ``index`` and its features)."""
    feats = {k: _values_json(decoded.features[k], mode) for k in sorted(decoded.features)}
    if decoded.lists is None:
        return {"file": path, "index": index, "features": feats}
    lists = {
        k: [_values_json(step, mode) for step in decoded.lists[k]] for k in sorted(decoded.lists)
    }
    return {"file": path, "index": index, "context": feats, "feature_lists": lists}


def _bytes_text(value: bytes, mode: BytesMode, full: bool) -> str:
    if mode == "auto":
        text = _printable(value)
        if text is not None:
            shown = json.dumps(text, ensure_ascii=False)
            if full or len(shown) <= _TEXT_BYTES + 2:
                return shown
            return f'{shown[: _TEXT_BYTES + 1]}..." ({len(value)} bytes)'
    encoded = value.hex() if mode == "hex" else base64.b64encode(value).decode("ascii")
    tag = "hex" if mode == "hex" else "b64"
    if full or len(encoded) <= _TEXT_BYTES:
        return f"{tag}:{encoded}"
    return f"{tag}:{encoded[:_TEXT_BYTES]}... ({len(value)} bytes)"


def _values_text(values: Array, mode: BytesMode, full: bool) -> str:
    name = _type_name(values)
    shown = values if full else values[:_TEXT_VALUES]
    if name == "int64":
        items = [str(v) for v in shown.tolist()]
    elif name == "float":
        items = [str(np.float32(v)) for v in shown.tolist()]
    else:
        items = [_bytes_text(v, mode, full) for v in shown.tolist()]
    more = f" ... ({len(values)} values)" if len(shown) < len(values) else ""
    return f"{name}[{len(values)}] {' '.join(items)}{more}".rstrip()


def to_text(
    decoded: Decoded, *, path: str, index: int, mode: BytesMode, full: bool = False
) -> list[str]:
    """Human-readable lines of one record; long values are cut with a visible count."""
    feats = decoded.features
    if decoded.lists is None:
        lines = [f"{path}[{index}]: Example, {len(feats)} features"]
        lines += [f"  {k}: {_values_text(feats[k], mode, full)}" for k in sorted(feats)]
        return lines
    lists = decoded.lists
    lines = [
        f"{path}[{index}]: SequenceExample, {len(feats)} context features, "
        f"{len(lists)} feature lists"
    ]
    lines += [f"  context {k}: {_values_text(feats[k], mode, full)}" for k in sorted(feats)]
    for k in sorted(lists):
        steps = lists[k]
        lines.append(f"  list {k}: {len(steps)} steps")
        shown = steps if full else steps[:_TEXT_VALUES]
        lines += [f"    [{i}] {_values_text(s, mode, full)}" for i, s in enumerate(shown)]
        if len(shown) < len(steps):
            lines.append(f"    ... ({len(steps) - len(shown)} more steps)")
    return lines
