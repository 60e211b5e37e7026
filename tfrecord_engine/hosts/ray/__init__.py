"""Ray Data over TFRecord files: the machinery behind :mod:`tfrecord_engine.ray`.

Internal: :mod:`tfrecord_engine.ray` is the public front. The modules:

- :mod:`.read`: the datasource (files cut into read tasks at record boundaries from
  their indexes) and ``read_tfrecords``;
- :mod:`.write`: the datasink (shards staged by the write tasks, published by the
  driver only when every task succeeded) and ``write_tfrecords``;
- :mod:`.checks`: ``verify``, ``build_indexes`` and ``count`` at cluster scale.

Needs the ``ray`` extra (Ray Data and pyarrow); importing it without them raises
:class:`~tfrecord_engine.MissingDependencyError`.
"""

from __future__ import annotations

import importlib.util

from ...errors import MissingDependencyError, install_hint


def _installed(name: str) -> bool:
    # find_spec, not an import: the check must stay cheap and must not half-import Ray.
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


if not (_installed("ray") and _installed("pyarrow")):
    raise MissingDependencyError(f"tfrecord_engine.ray needs Ray Data: {install_hint('ray')}")
