"""Hypothesis strategies for mixes (``tfe.sample_from_datasets``) and a bound checker."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st

from ..data.interleave import Schedule
from .epochs import shuffle_modes

__all__ = ["max_window_error", "mix_plans", "weight_lists"]


def weight_lists(count: int) -> st.SearchStrategy[list[float]]:
    """``count`` weights >= 0, not all zero: decimals, integers, arbitrary floats, zeros."""
    one = st.one_of(
        st.sampled_from([0.0, 0.1, 0.25, 0.3, 0.5, 0.7, 1.0]),
        st.integers(0, 12).map(float),
        st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False),
    )
    return st.lists(one, min_size=count, max_size=count).filter(lambda w: sum(w) > 0)


@st.composite
def mix_plans(draw: st.DrawFn, max_sources: int = 5, max_records: int = 60) -> dict[str, Any]:
    """A mix's sizes, weights, seeds and stop rule, and the epoch arguments of one read."""
    m = draw(st.integers(1, max_sources))
    count = draw(st.integers(1, 4))
    return {
        "sizes": draw(st.lists(st.integers(0, max_records), min_size=m, max_size=m)),
        "weights": draw(st.one_of(st.none(), weight_lists(m))),
        "seed": draw(st.integers(0, 2**31)),
        "stop": draw(st.booleans()),
        "shuffle": draw(shuffle_modes()),
        "batch_seed": draw(st.integers(0, 2**31)),
        "epoch": draw(st.integers(0, 3)),
        "batch_size": draw(st.integers(1, 9)),
        "shard_count": count,
        "remainder": draw(st.sampled_from(["keep", "drop", "pad"])),
    }


def max_window_error(plan: Schedule, sources: npt.NDArray[np.int64]) -> float:
    """The largest ``|count_j - w_j W|`` over every window of every phase of ``plan``.

    ``sources[p]`` is the source of position ``p`` (``plan.sources``, or the sources of
    the records a mix delivered, in order); ``w_j`` is the phase's own weight.
    """
    worst = 0.0
    for phase in plan.phases:
        seg = sources[phase.start : phase.stop]
        total = sum(phase.units.values())
        for j, a in phase.units.items():
            prefix = np.concatenate([[0], np.cumsum(seg == j)]).astype(np.float64)
            n = np.arange(len(prefix), dtype=np.float64)
            # count in [s, e) minus w * (e - s), for every pair s <= e
            excess = (prefix - n * a / total)[None, :] - (prefix - n * a / total)[:, None]
            upper = np.triu(np.ones_like(excess, dtype=np.bool_))
            if upper.any():
                worst = max(worst, float(np.abs(excess[upper]).max()))
    return worst
