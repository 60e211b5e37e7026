"""Sidecar indexes: where each record starts, for random access and exact epochs.

:mod:`.sidecar` holds :class:`~tfrecord_engine.Index`, :mod:`.format` its binary file
format, :mod:`.identity` what ties an index to the bytes it describes (size, sampled
fingerprint, content check), :mod:`.scan` the scans that build one, :mod:`.damage` the
damage lists of tolerant scans, :mod:`.recorder` the index a writer records inline,
:mod:`.text` DALI text indexes and :mod:`.placement` where index files live (a hidden
``.tfeidx/`` sub-folder beside the data, or the user's index cache).
"""

from .placement import INDEX_DIR, INDEX_SUFFIX, IndexPlacement, cache_dir, index_path_for
from .sidecar import Index

__all__ = ["INDEX_DIR", "INDEX_SUFFIX", "Index", "IndexPlacement", "cache_dir", "index_path_for"]
