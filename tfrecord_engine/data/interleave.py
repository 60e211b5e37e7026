"""The interleave of a mix: which source each position of a pass draws its next record from.

A mix of sources with weights ``w_j`` (exact fractions ``a_j / Q``, see
:func:`integer_weights`) is a sequence of source ids, not random draws. Within a
*phase* (a stretch during which the same sources take part) it is the earliest-deadline
schedule of the Pfair windows: the ``k``-th record of source ``j`` (``k = 0, 1, ...``)
is a unit job released at slot ``floor(k Q / a_j)`` and due by slot
``ceil((k + 1) Q / a_j)``; at each slot the released job with the earliest deadline runs
(ties: the seeded rank of the source). The weights sum to one, so by Baruah et al.'s
Pfair theorem (feasibility) and the optimality of EDF for unit jobs on one processor,
every job runs inside its window. Hence, counting from the start of a phase:

    after N positions, source j has taken floor(w_j N) or ceil(w_j N) records,

so ``|c_j(N) - w_j N| < 1`` for every prefix, and in any window of ``W`` consecutive
positions of one phase ``|c_j - w_j W| < 2`` (the difference of two prefixes). The
schedule of a phase is periodic with period ``Q`` (at slot ``Q`` every count is exact,
so the state repeats), so one period is computed and tiled.

A phase ends at the first slot that would take a record from a source that has none
left (TensorFlow's "an empty dataset is selected"). ``stop_on_empty_dataset=True`` then
ends the pass there; otherwise the exhausted sources leave and a new phase starts
among the rest, with their weights renormalized (TensorFlow goes on the same way,
drawing again among the inputs not yet exhausted). Sources of weight 0 never take part
(TensorFlow drops them).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError

__all__ = ["MAX_DENOMINATOR", "Phase", "Schedule", "integer_weights", "period", "schedule"]

#: The largest common denominator ``Q`` of the weights: the interleave of a phase repeats
#: every ``Q`` positions, and one period is computed in Python (~1 µs a position).
MAX_DENOMINATOR = 1 << 16
# Weights within this relative distance of fractions with a small common denominator are
# taken as those fractions (float64 and float32 renderings of 0.7 are both 7/10).
_SNAP = 1e-6
IntArray = npt.NDArray[np.int64]


def integer_weights(weights: Sequence[float] | None, count: int) -> tuple[int, ...]:
    """The weights as integers ``a_j`` in the same proportions, ``sum(a) <= 65,536``.

    ``None`` is uniform. Weights that are (within one part in a million) fractions with
    a common denominator up to :data:`MAX_DENOMINATOR` are kept exactly (0.7 and 0.3 give
    ``(7, 3)``; integers summing to at most 65,536 stay as they are, reduced); others are
    rounded to multiples of ``1/65,536`` (largest remainder), every positive weight keeping
    at least one unit.

    >>> integer_weights([0.7, 0.3], 2), integer_weights(None, 3), integer_weights([2, 0, 4], 3)
    ((7, 3), (1, 1, 1), (1, 0, 2))

    Raises:
        InvalidArgumentError: not one finite weight >= 0 per dataset, or all zero.
    """
    if weights is None:
        return (1,) * count
    values = [_weight(w) for w in weights]
    if len(values) != count:
        raise InvalidArgumentError(
            f"weights has {len(values)} entries for {count} datasets: give one per dataset"
        )
    exact = [Fraction(v) for v in values]
    total = sum(exact, Fraction(0))
    if total <= 0:
        raise InvalidArgumentError(f"the weights must not all be zero, got {list(values)}")
    shares = [w / total for w in exact]
    snapped = [s.limit_denominator(MAX_DENOMINATOR) for s in shares]
    denominator = math.lcm(*(s.denominator for s in snapped))
    if (
        denominator <= MAX_DENOMINATOR
        and sum(snapped, Fraction(0)) == 1
        and all(abs(a - s) <= s * _SNAP for a, s in zip(snapped, shares, strict=True))
    ):
        units = [int(s * denominator) for s in snapped]
    else:
        units = _largest_remainder(shares, MAX_DENOMINATOR)
    g = math.gcd(*units)
    return tuple(u // g for u in units)


def _weight(value: object) -> float:
    try:
        w = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"a weight must be a number, got {value!r}") from exc
    if not math.isfinite(w) or w < 0:
        raise InvalidArgumentError(f"a weight must be finite and >= 0, got {value!r}")
    return w


def _largest_remainder(shares: Sequence[Fraction], total: int) -> list[int]:
    scaled = [s * total for s in shares]
    units = [math.floor(x) for x in scaled]
    by_remainder = sorted(range(len(shares)), key=lambda j: (units[j] - scaled[j], j))
    for j in by_remainder[: total - sum(units)]:
        units[j] += 1
    for j, s in enumerate(shares):
        if s > 0 and units[j] == 0:
            # Rounded away: a positive weight keeps one unit (taken from the largest).
            units[max(range(len(units)), key=units.__getitem__)] -= 1
            units[j] = 1
    return units


def period(units: Sequence[int], rank: Sequence[int], length: int) -> IntArray:
    """The first ``length`` (at most ``sum(units)``) slots of one period of the schedule.

    ``units[j] > 0`` are the integer weights of the sources taking part, ``rank[j]``
    breaks ties between equal deadlines; the result holds indices into ``units``.

    >>> period([2, 1], [0, 1], 3).tolist(), period([1, 1, 1], [2, 0, 1], 3).tolist()
    ([0, 0, 1], [1, 2, 0])
    """
    total = sum(units)
    if not 0 <= length <= total or min(units, default=1) < 1:
        raise InvalidArgumentError(f"need positive units and 0 <= length <= {total}")
    # Every source's first job is released at slot 0, due by ceil(Q / a_j).
    ready = [(-(-total // a), rank[j], j) for j, a in enumerate(units)]
    heapq.heapify(ready)
    waiting: list[tuple[int, int, int]] = []  # (release, rank, source) of next jobs
    done = [0] * len(units)
    out = np.empty(length, dtype=np.int64)
    for t in range(length):
        while waiting and waiting[0][0] <= t:
            _, r, j = heapq.heappop(waiting)
            heapq.heappush(ready, (-(-(done[j] + 1) * total // units[j]), r, j))
        # Never empty: the windows of a full-utilization Pfair task set are feasible.
        _, r, j = heapq.heappop(ready)
        out[t] = j
        k = done[j] = done[j] + 1
        if k < units[j]:
            heapq.heappush(waiting, (k * total // units[j], r, j))
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class Phase:
    """Positions ``[start, stop)`` of a pass during which ``units`` (source -> integer
    weight, all positive) take part; the exactness bounds hold counted from ``start``."""

    start: int
    stop: int
    units: dict[int, int]


@dataclasses.dataclass(frozen=True, slots=True)
class Schedule:
    """One pass of a mix: ``sources[p]`` is the source that position ``p`` draws from,
    ``taken[j]`` how many records source ``j`` gives in the pass."""

    sources: IntArray
    taken: tuple[int, ...]
    phases: tuple[Phase, ...]


def schedule(
    counts: Sequence[int], units: Sequence[int], rank: Sequence[int], *, stop_on_empty: bool
) -> Schedule:
    """The interleave of one pass over sources of ``counts`` records (see the module doc).

    >>> schedule([3, 10], [1, 1], [0, 1], stop_on_empty=True).sources.tolist()
    [0, 1, 0, 1, 0, 1]
    >>> schedule([3, 5], [1, 1], [0, 1], stop_on_empty=False).sources.tolist()
    [0, 1, 0, 1, 0, 1, 1, 1]
    """
    remaining = [int(n) for n in counts]
    active = [j for j, a in enumerate(units) if a > 0 and (stop_on_empty or remaining[j] > 0)]
    pieces: list[IntArray] = []
    phases: list[Phase] = []
    start = 0
    while active:
        piece = _phase([remaining[j] for j in active], [units[j] for j in active], rank, active)
        pieces.append(piece)
        taken = np.bincount(piece, minlength=len(remaining))
        remaining = [r - int(t) for r, t in zip(remaining, taken.tolist(), strict=True)]
        phases.append(Phase(start, start + len(piece), {j: units[j] for j in active}))
        start += len(piece)
        if stop_on_empty:
            break
        active = [j for j in active if remaining[j] > 0]
    sources = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
    taken_all = np.bincount(sources, minlength=len(remaining)).tolist()
    return Schedule(sources, tuple(int(t) for t in taken_all), tuple(phases))


def _phase(
    left: Sequence[int], units: Sequence[int], rank: Sequence[int], ids: Sequence[int]
) -> IntArray:
    """The positions of one phase, as source ids ``ids[...]``: up to the first slot that
    would draw from a source with nothing ``left``."""
    g = math.gcd(*units)
    units = [a // g for a in units]
    total = sum(units)
    # A phase ends by the slot after all records are taken: no longer pattern is needed.
    length = min(total, sum(left) + 1)
    pattern = period(units, [rank[j] for j in ids], length)
    by_source = np.argsort(pattern, kind="stable")
    firsts = np.searchsorted(pattern[by_source], np.arange(len(units) + 1))
    end = sum(left)
    for j, (a, k) in enumerate(zip(units, left, strict=True)):
        slots = by_source[firsts[j] : firsts[j + 1]]  # source j's slots in the pattern
        if length == total:  # a whole period: the k-th draw by periodicity
            end = min(end, (k // a) * total + int(slots[k % a]))
        elif k < len(slots):
            end = min(end, int(slots[k]))
    reps = -(-end // len(pattern)) if len(pattern) else 0
    local = np.tile(pattern, reps)[:end] if reps > 1 else pattern[:end]
    return np.asarray(ids, dtype=np.int64)[local]
