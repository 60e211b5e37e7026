"""tfrecord-bridge: the tfrecord-engine as a ``tf.data`` source (needs the ``[tf]`` extra).

This is the only package of the project that imports TensorFlow (lazily, on first use
of :func:`to_tf_dataset`).
"""

from __future__ import annotations

from .dataset import to_tf_dataset
from .source import EpochBatches

__all__ = ["EpochBatches", "to_tf_dataset"]
