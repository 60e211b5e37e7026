"""tfrecord-bridge: the tfrecord-engine as a ``tf.data`` source (needs the ``[tf]`` extra).

This is the only package of the project that imports TensorFlow (lazily, on first use
of :func:`to_tf_dataset`). Importing it without TensorFlow installed raises
:class:`~tfrecord_engine.MissingDependencyError` at once, naming the extra to install.
"""

from __future__ import annotations

import importlib.util

from tfrecord_engine import MissingDependencyError
from tfrecord_engine.errors import install_hint


def _tensorflow_installed() -> bool:
    # find_spec, not an import: TensorFlow itself is imported on first use only.
    try:
        return importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False


if not _tensorflow_installed():
    raise MissingDependencyError(f"tfrecord_bridge needs TensorFlow: {install_hint('tf')}")

from .dataset import to_tf_dataset  # noqa: E402 - only once TensorFlow is known to be there
from .source import EpochBatches  # noqa: E402

__all__ = ["EpochBatches", "to_tf_dataset"]
