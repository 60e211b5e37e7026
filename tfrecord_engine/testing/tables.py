"""Hypothesis strategies for the CLI's inputs: record tables, CSV text and ranges."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st

__all__ = ["Table", "csv_tables", "example_tables", "slice_bounds"]

Table = list[dict[str, npt.NDArray[Any]]]
_KEYS = st.text("abcdefgh_", min_size=1, max_size=6)


def _column(draw: st.DrawFn, dtype: str, length: int) -> npt.NDArray[Any]:
    if dtype == "int64":
        return np.array(
            draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=length, max_size=length)),
            dtype=np.int64,
        )
    if dtype == "float32":
        values = st.floats(width=32, allow_nan=False)
        return np.array(draw(st.lists(values, min_size=length, max_size=length)), np.float32)
    items = draw(st.lists(st.binary(max_size=12), min_size=length, max_size=length))
    out = np.empty(length, dtype=object)
    out[:] = items
    return out


@st.composite
def example_tables(draw: st.DrawFn, *, max_records: int = 12, max_keys: int = 4) -> Table:
    """Rows of Example features, one dtype per key, some keys fixed-length, some not.

    Each key is ``always`` present, ``sometimes`` missing, and has either one length
    in every row or varying lengths, so every rule of ``tfr schema`` gets exercised.
    A ``sometimes`` key is present in the first row, so it has a type to infer.
    """
    keys = draw(st.lists(_KEYS, min_size=1, max_size=max_keys, unique=True))
    n = draw(st.integers(1, max_records))
    plans = []
    for _ in keys:
        dtype = draw(st.sampled_from(["int64", "float32", "string"]))
        always = draw(st.booleans())
        fixed = draw(st.one_of(st.none(), st.integers(1, 4)))
        plans.append((dtype, always, fixed))
    rows: Table = []
    for i in range(n):
        row = {}
        for key, (dtype, always, fixed) in zip(keys, plans, strict=True):
            if not always and i > 0 and draw(st.booleans()):
                continue
            length = fixed if fixed is not None else draw(st.integers(0, 4))
            row[key] = _column(draw, dtype, length)
        rows.append(row)
    return rows


@st.composite
def csv_tables(draw: st.DrawFn, *, max_rows: int = 8) -> tuple[list[str], list[list[str]]]:
    """A CSV header and rows: int, float and text columns, with empty cells."""
    names = draw(st.lists(_KEYS, min_size=1, max_size=4, unique=True))
    kinds = [draw(st.sampled_from(["int", "float", "text"])) for _ in names]
    cells = {
        "int": st.integers(-(2**63), 2**63 - 1).map(str),
        "float": st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
        "text": st.text("xyz ,\"'\n", max_size=5),
    }
    rows = [
        [draw(st.one_of(st.just(""), cells[k])) for k in kinds]
        for _ in range(draw(st.integers(0, max_rows)))
    ]
    return names, rows


def slice_bounds(n: int) -> st.SearchStrategy[tuple[int | None, int | None]]:
    """``(start, stop)`` pairs for a sequence of ``n`` items, negatives and ``None`` included."""
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    return st.tuples(bound, bound)
