"""Hypothesis strategies for the calls a reader makes on a remote file's range fetcher:
runs read in order (a sequential epoch), jumps, and scattered batches."""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["read_patterns"]

Call = tuple[list[int], list[int]]


@st.composite
def read_patterns(draw: st.DrawFn, size: int, max_calls: int = 20) -> list[Call]:
    """Calls ``(starts, ends)`` on a file of ``size`` bytes: in-order spans (sometimes
    split in touching ranges), a jump elsewhere, or a batch of scattered ranges."""
    calls: list[Call] = []
    pos = 0
    for _ in range(draw(st.integers(1, max_calls))):
        kind = draw(st.sampled_from(["next", "next", "next", "jump", "scatter"]))
        if kind == "jump":
            pos = draw(st.integers(0, size - 1))
        if kind == "scatter":
            starts = sorted(draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=5)))
            ends = [min(size, a + draw(st.integers(1, 50))) for a in starts]
            calls.append((starts, ends))
            continue
        if pos >= size:
            pos = 0
        end = min(size, pos + draw(st.integers(1, max(1, size // 4))))
        cut = draw(st.integers(pos, end))
        if pos < cut < end:
            calls.append(([pos, cut], [cut, end]))
        else:
            calls.append(([pos], [end]))
        pos = end
    return calls
