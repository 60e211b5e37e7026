"""Shards written for tests of whole-file copies: indexed, and dated back ("settled").

A copy of a file changed less than a few seconds before it was read is never kept or
shared (``data/held.py``), so tests of kept, shared and random-access copies write
their files a minute in the past.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import tfrecord_engine as tfe


def settle(path: Path | str) -> None:
    """Dates ``path`` a minute back."""
    old = time.time_ns() - 60_000_000_000
    os.utime(path, ns=(old, old))


def write_settled(path: Path | str, records: Iterable[bytes]) -> None:
    """Writes ``records`` to ``path`` with its index, then :func:`settle` s it."""
    with tfe.TFRecordWriter(str(path), index=True) as w:
        w.write_many(records)
    settle(path)


def settled_shards(folder: Path, sizes: Sequence[int], encode: Callable[[int], bytes]) -> list[str]:
    """Files ``part-K.tfrecord`` in ``folder`` of ``sizes[K]`` records, record ``i``
    across them ``encode(i)``, each settled."""
    out, first = [], 0
    for k, n in enumerate(sizes):
        path = folder / f"part-{k}.tfrecord"
        write_settled(path, (encode(i) for i in range(first, first + n)))
        first += n
        out.append(str(path))
    return out
