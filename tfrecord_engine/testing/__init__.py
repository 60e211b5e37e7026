"""Hypothesis strategies and helpers shared by tfrecord-engine's tests (and yours).

The kit ships with the package as the ``testing`` extra: ``pip install -e
'.[testing]'`` (in a clone) brings Hypothesis. Import the submodules directly, e.g.
``from tfrecord_engine.testing import records`` (strategies for payloads and framed
files), ``examples`` (Examples with their specs), ``damage`` (corruptions), ``faults``
(file operations that fail on cue), ``resume`` (the exactly-once resume check).
"""

from __future__ import annotations

import importlib.util

from ..errors import MissingDependencyError, install_hint


def _hypothesis_installed() -> bool:
    try:
        return importlib.util.find_spec("hypothesis") is not None
    except (ImportError, ValueError):
        return False


if not _hypothesis_installed():
    raise MissingDependencyError(
        f"tfrecord_engine.testing needs Hypothesis: {install_hint('testing')}"
    )
