"""The reusable check that resuming an epoch gives each remaining record exactly once."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any, Protocol


class ResumableIterator(Protocol):
    """An iterator of batches that can report where it is."""

    def __iter__(self) -> Iterator[Any]: ...

    def __next__(self) -> Any: ...

    def get_state(self) -> dict[str, Any]: ...


def assert_resume_exactly_once(
    make: Callable[[Mapping[str, Any] | None], ResumableIterator],
    ids: Callable[[Any], Sequence[Hashable]],
    boundaries: Sequence[int] | None = None,
) -> list[list[Hashable]]:
    """Checks resuming at batch boundaries against the uninterrupted epoch.

    For each boundary ``k`` (default: every one, ``0..number of batches``) it takes
    ``k`` batches from ``make(None)``, round-trips ``get_state()`` through JSON, resumes
    with ``make(state)`` and asserts that head + rest equals the uninterrupted epoch
    batch by batch, and that the rest holds each remaining record exactly as often as
    the uninterrupted epoch does (once, for an exact epoch).

    Args:
        make: builds the iterator, fresh (``None``) or from a state.
        ids: the record identities in one batch (e.g. the batch itself for raw bytes,
            or only the unmasked entries of a padded batch).
        boundaries: batch counts to interrupt at.

    Returns:
        the uninterrupted epoch as a list of batches of ids.

    Raises:
        AssertionError: a resumed epoch differs from the uninterrupted one.
    """
    full = [list(ids(b)) for b in make(None)]
    flat = Counter(i for b in full for i in b)
    for k in range(len(full) + 1) if boundaries is None else boundaries:
        it = make(None)
        head = [list(ids(next(it))) for _ in range(k)]
        state = json.loads(json.dumps(it.get_state()))
        rest = [list(ids(b)) for b in make(state)]
        assert head + rest == full, f"resume after {k} batches differs from the epoch"
        seen = Counter(i for b in head + rest for i in b)
        assert seen == flat, f"resume after {k} batches repeats or loses records"
    return full
