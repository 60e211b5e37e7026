"""Sidecar indexes: where each record starts, for random access and exact epochs.

:mod:`.sidecar` holds :class:`~tfrecord_engine.Index` and its file format, :mod:`.scan`
the scans that build one, :mod:`.damage` the damage lists of tolerant scans and
:mod:`.recorder` the index a writer records inline, :mod:`.placement` where index files
live (a hidden ``.tfeidx/`` sub-folder beside the data, or the user's index cache).
"""

from .placement import INDEX_DIR, INDEX_SUFFIX, IndexPlacement, cache_dir, index_path_for
from .sidecar import Index

__all__ = ["INDEX_DIR", "INDEX_SUFFIX", "Index", "IndexPlacement", "cache_dir", "index_path_for"]
