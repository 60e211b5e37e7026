"""The keys' values of a chunk by template first, the lockstep walk for the rest.

Records written by one program share one byte layout; the batch decoder's templates
(:mod:`tfrecord_engine.example.template`) recognise such records in one gather and
read their values at fixed offsets. Here the same templates serve the Arrow columns:
numbers as the template reads them, bytes values as spans at the template's offsets
(a bytes value of a fixed layout is a fixed span of its record: no walk, no copy
before the one gather that builds the Arrow array). Records no template takes are
walked (:func:`.walk.walk_examples`); the two are merged in record order.

Templates are remembered across chunks (a file keeps its few layouts); when they take
less than an eighth of a chunk, the next chunks are walked without trying them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ...example import template
from ...example.records import Request
from ...example.wire import KIND_BYTES, KIND_NONE
from .spans import Spans
from .walk import KeyValues, TypeMismatch, walk_examples

__all__ = ["TemplateWalker"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

#: Chunks at least this large try templates.
MIN_RECORDS: Final = 64
#: Layouts remembered, and the most new ones built per chunk.
MAX_TEMPLATES: Final = 8
MAX_NEW: Final = 3
#: After a chunk that templates barely helped, this many chunks skip them.
RETRY_AFTER: Final = 16

_Part = tuple[npt.NDArray[np.intp], npt.NDArray[Any] | Spans, I64]


class TemplateWalker:
    """Decodes the requested keys of chunks of Examples (see the module)."""

    def __init__(self, requests: Sequence[Request]) -> None:
        self.requests = list(requests)
        self._keys = [r.raw_key for r in self.requests]
        self._kinds = [r.kind for r in self.requests]
        self._templates: list[template.Template] = []
        self._skip = 0

    def walk(self, buf: U8, starts: I64, ends: I64) -> dict[str, KeyValues]:
        """The values of every requested key of the Examples ``buf[starts[i]:ends[i]]``.

        Raises:
            TypeMismatch / ExampleParseError: as :func:`.walk.walk_examples`.
        """
        n = int(starts.shape[0])
        if n < MIN_RECORDS or self._skip:
            self._skip = max(0, self._skip - 1)
            return walk_examples(buf, starts, ends, self.requests)
        groups, rest = self._match(buf, starts, ends)
        if rest.size * 8 > n * 7:
            self._skip = RETRY_AFTER  # records vary too much here for templates to pay
        if not groups:
            return walk_examples(buf, starts, ends, self.requests)
        walked = None
        if rest.size:
            try:
                walked = walk_examples(buf, starts[rest], ends[rest], self.requests)
            except TypeMismatch as exc:
                # (Its position among the records left: the chunk's is rest[...].)
                raise TypeMismatch(exc.key, int(rest[exc.record]), exc.found) from None
        out = {}
        for i, req in enumerate(self.requests):
            parts: list[_Part] = []
            present = np.zeros(n, np.bool_)
            for group in groups:
                got = _group_values(buf, starts, ends, group, i=i, req=req)
                if got is not None:
                    present[group.pos] = True
                    parts.append(got)
            if walked is not None:
                kv = walked[req.key]
                present[rest] = kv.present
                parts.append((rest, kv.values, kv.counts))
            out[req.key] = _merge(parts, n, present, req.kind, buf)
        return out

    def _match(
        self, buf: U8, starts: I64, ends: I64
    ) -> tuple[list[template.Group], npt.NDArray[np.intp]]:
        """Groups of records matching a template, and the positions matching none: the
        known layouts first, then new ones built from the first record left (fixed,
        or flexible when a fixed one takes less than an eighth of the chunk)."""
        n = int(starts.shape[0])
        rest: npt.NDArray[np.intp] = np.arange(n)
        groups: list[template.Group] = []
        known = list(self._templates)
        used: list[template.Template] = []
        fresh = 0
        flexible = False
        while rest.size and (known or fresh < MAX_NEW):
            if known:
                tpl: template.Template | None = known.pop(0)
                built = False
            else:
                j = int(rest[0])
                tpl = template.build_template(
                    buf, int(starts[j]), int(ends[j]), self._keys, self._kinds, flexible=flexible
                )
                fresh += 1
                built = True
            if tpl is None:
                break  # this record cannot be a template: the walk takes the rest
            group = template.match_template(buf, starts[rest], ends[rest], tpl)
            if group.pos.size == 0:
                continue
            groups.append(replace(group, pos=rest[group.pos]))
            used.append(tpl)
            keep = np.ones(rest.size, np.bool_)
            keep[group.pos] = False
            rest = rest[keep]
            if built and group.pos.size * 8 < n:
                if tpl.flexible:
                    break
                flexible = True
        self._templates = (used + [t for t in self._templates if t not in used])[:MAX_TEMPLATES]
        return groups, rest


def _group_values(
    buf: U8, starts: I64, ends: I64, group: template.Group, *, i: int, req: Request
) -> _Part | None:
    """Key ``i``'s values in a template group (``None``: the group lacks the key)."""
    layout = group.template.fields[i]
    if layout.kind == KIND_NONE:
        return None
    pos = group.pos
    m = pos.shape[0]
    if layout.kind != req.kind:  # (a template never holds a mismatch; kept as a guard)
        raise TypeMismatch(req.key, int(pos[0]), layout.kind)
    if layout.variable:
        assert group.var_values is not None
        assert group.var_counts is not None
        return pos, group.var_values, group.var_counts
    counts = np.full(m, layout.count, np.int64)
    if layout.kind == KIND_BYTES:
        base = ends[pos] if layout.from_end else starts[pos]
        at = base[:, None] + np.asarray(layout.value_offsets, np.int64)
        size = at + np.asarray(layout.widths, np.int64)
        return pos, Spans(buf, at.reshape(-1), size.reshape(-1)), counts
    values = template.template_values(buf, starts[pos], ends[pos], layout)
    return pos, values.reshape(-1), counts


def _merge(
    parts: list[_Part], n: int, present: npt.NDArray[np.bool_], kind: int, buf: U8
) -> KeyValues:
    """One key's values of all parts, in record order."""
    counts = np.zeros(n, np.int64)
    for pos, _, cnt in parts:
        counts[pos] = cnt
    if len(parts) == 1 and parts[0][0].shape[0] == n:
        return KeyValues(kind, parts[0][1], counts, present)
    offsets = np.cumsum(counts) - counts
    total = int(counts.sum())
    where: list[I64] = []
    for pos, values, cnt in parts:
        first = np.cumsum(cnt) - cnt
        where.append(np.repeat(offsets[pos] - first, cnt) + np.arange(len(values)))
    if kind == KIND_BYTES:
        # The walked part's buffer may be this one with values appended: it holds all.
        big = max((p[1].buf for p in parts if isinstance(p[1], Spans)), key=len, default=buf)
        vs = np.zeros(total, np.int64)
        ve = np.zeros(total, np.int64)
        for (_, values, _), at in zip(parts, where, strict=True):
            assert isinstance(values, Spans)
            vs[at] = values.starts
            ve[at] = values.ends
        return KeyValues(kind, Spans(big, vs, ve), counts, present)
    dtype = next(p[1].dtype for p in parts if not isinstance(p[1], Spans))
    out = np.empty(total, dtype)
    for (_, values, _), at in zip(parts, where, strict=True):
        out[at] = values
    return KeyValues(kind, out, counts, present)
