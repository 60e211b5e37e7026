"""``tfr schema``'s output: the inferred spec as Python (``tfe`` or ``tf.io``) or JSON.

The inference itself (per-key statistics and the rules that turn them into specs) is
:mod:`tfrecord_engine.example.infer`, shared with ``tfe.infer_features``; its names are
re-exported here.
"""

from __future__ import annotations

from typing import Any

from ..example.infer import (
    RAW_HINT_BYTES,
    FeatureStats,
    SchemaStats,
    encoded_format,
    is_text,
)

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
    """``key`` as a Python string literal, double-quoted where it can be.

    >>> print(quote_key("label"), quote_key('say "hi"'))
    "label" 'say "hi"'
    """
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
