"""Sidecar indexes: where each record starts, for random access and exact epochs.

:mod:`.sidecar` holds :class:`~tfrecord_engine.Index` and its file format, :mod:`.scan`
the scans that build one, :mod:`.damage` the damage lists of tolerant scans and
:mod:`.recorder` the index a writer records inline.
"""

from .sidecar import INDEX_SUFFIX, Index, index_path_for

__all__ = ["INDEX_SUFFIX", "Index", "index_path_for"]
