"""``python -m tfrecord_engine.kernels``: the builder process of :mod:`.warm`, which
compiles the kernels into numba's on-disk cache and leaves the marker beside it."""

from __future__ import annotations

import contextlib
import sys

from . import available, warm

__all__ = ["main"]


def main() -> int:
    """The builder: compiles the kernels into numba's cache and leaves the marker.
    Exit status 0 when the kernels passed their self-test (or another builder is at
    it), 1 otherwise."""
    place = warm.locate()
    if place is None:
        return 1
    with contextlib.suppress(OSError):
        place.lock.parent.mkdir(parents=True, exist_ok=True)
    if not warm.take_lock(place.lock):
        return 0  # another builder is at it
    try:
        return 0 if available() else 1
    finally:
        with contextlib.suppress(FileNotFoundError):
            place.lock.unlink()


if __name__ == "__main__":
    sys.exit(main())
