"""Where index files live, so that no other tool's shard glob ever picks one up.

Three places, each a :data:`IndexPlacement`:

- ``"hidden"``: ``<folder>/.tfeidx/<file>.tfeidx``, a hidden sub-folder beside the data.
  The writer (``TFRecordWriter(..., index=True)``, ``tfr index``, ``tfr convert``) puts
  indexes here: they travel with the dataset (a copy of the folder keeps them, every
  reader of the folder finds them) but no usual shard glob matches them.
- ``"cache"``: the user's index cache (:func:`cache_dir`), keyed by the data file's
  absolute path (or URL) and its size and modification time (URLs: size and content
  fingerprint). Indexes built while *reading* go here: reading never writes into the
  data's folder, so a shared or read-only dataset works as it is.
- ``"beside"``: ``<file>.tfeidx`` next to the data, where versions before 0.2 put every
  index. Still loaded; written only when asked (it is what ``train-*`` globs match).

Why a hidden *sub-folder* and not a hidden file (``.train-0.tfrecord.tfeidx``): measured
in ``docs/indexes.md``: shell and Python globs skip both, but TensorFlow's
``tf.io.gfile.glob("out/*")`` and object-store listings (``fnmatch`` on object names)
match hidden names; a ``*`` never crosses a ``/``, so a sub-folder is not matched by a
file pattern on any of them, and Ray's folder reads skip it.
"""

from __future__ import annotations

import contextlib
import glob as globlib
import hashlib
import os
import posixpath
from typing import Final, Literal

from ..errors import InvalidArgumentError
from ..storage import remote
from ..storage.options import StorageOptionsArg
from .scan import file_identity

__all__ = [
    "CACHE_ENV",
    "INDEX_DIR",
    "INDEX_SUFFIX",
    "IndexPlacement",
    "cache_dir",
    "cache_entries",
    "cache_identity",
    "cache_index_path",
    "index_candidates",
    "index_path_for",
    "normalize_placement",
    "prune_cache",
]

INDEX_SUFFIX: Final = ".tfeidx"
#: The hidden sub-folder, beside the data, that holds the indexes written with it.
INDEX_DIR: Final = ".tfeidx"
#: Environment variable naming the index cache folder (overrides ``XDG_CACHE_HOME``).
CACHE_ENV: Final = "TFE_INDEX_CACHE"

IndexPlacement = Literal["hidden", "beside", "cache"]
_PLACEMENTS: Final = ("hidden", "beside", "cache")


def normalize_placement(placement: str) -> IndexPlacement:
    """Checks a placement name.

    Raises:
        InvalidArgumentError: not ``"hidden"``, ``"beside"`` or ``"cache"``.
    """
    if placement == "hidden":
        return "hidden"
    if placement == "beside":
        return "beside"
    if placement == "cache":
        return "cache"
    raise InvalidArgumentError(
        f"not an index placement: {placement!r} (expected one of {', '.join(_PLACEMENTS)})"
    )


def cache_dir() -> str:
    """The index cache folder: ``$TFE_INDEX_CACHE``, else
    ``$XDG_CACHE_HOME/tfrecord-engine/index``, else ``~/.cache/tfrecord-engine/index``.

    It is created when the first index is saved in it.
    """
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "tfrecord-engine", "index")


def _location(data_path: str) -> str:
    """What identifies a file's place: its URL, or its absolute local path."""
    return data_path if remote.is_url(data_path) else os.path.abspath(data_path)


def _location_key(data_path: str) -> str:
    return hashlib.sha256(_location(data_path).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def cache_identity(data_path: str, storage_options: StorageOptionsArg = None) -> tuple[int, int]:
    """What keys a file's cache entry: ``(size, mtime_ns)``; a URL ``(size, fingerprint)``
    (object stores do not all report a modification time)."""
    if remote.is_url(data_path):
        return file_identity(data_path, storage_options)
    st = os.stat(data_path)
    return st.st_size, st.st_mtime_ns


def cache_index_path(
    data_path: str | os.PathLike[str], identity: tuple[int, int] | None = None
) -> str:
    """The cache entry of ``data_path`` in the state ``identity`` describes (default: the
    file as it is now, see :func:`cache_identity`).

    The entry's name is ``<location hash>-<identity hash>.tfeidx``: a file that
    changed (or moved) looks up another name and is indexed again, and an entry is
    still validated against the file when loaded.
    """
    data_path = os.fspath(data_path)
    size, stamp = cache_identity(data_path) if identity is None else identity
    tag = hashlib.sha256(f"{size}:{stamp}".encode()).hexdigest()[:16]
    return os.path.join(cache_dir(), f"{_location_key(data_path)}-{tag}{INDEX_SUFFIX}")


def cache_entries(data_path: str) -> list[str]:
    """Every cache entry of ``data_path`` (normally one), whatever state it was saved in."""
    pattern = os.path.join(
        globlib.escape(cache_dir()), f"{_location_key(data_path)}-*{INDEX_SUFFIX}"
    )
    return sorted(globlib.glob(pattern))


def prune_cache(keep: str, data_path: str) -> None:
    """Removes the cache entries of ``data_path`` other than ``keep`` (older states).

    Best effort: a concurrent reader may be replacing the same entries.
    """
    for old in cache_entries(data_path):
        if old != keep:
            with contextlib.suppress(OSError):
                os.remove(old)


def index_path_for(data_path: str | os.PathLike[str], placement: str = "hidden") -> str:
    """Returns where the index of a data file lives for a ``"hidden"`` or ``"beside"``
    placement (the ``"cache"`` entry depends on the file's state: :func:`cache_index_path`).

    >>> index_path_for("out/train-00000-of-00004.tfrecord")
    'out/.tfeidx/train-00000-of-00004.tfrecord.tfeidx'
    >>> index_path_for("train-00000-of-00004.tfrecord", placement="beside")
    'train-00000-of-00004.tfrecord.tfeidx'
    >>> index_path_for("s3://b/out/train-0.tfrecord")
    's3://b/out/.tfeidx/train-0.tfrecord.tfeidx'
    """
    path = os.fspath(data_path)
    where = normalize_placement(placement)
    if where == "beside":
        return path + INDEX_SUFFIX
    if where == "cache":
        raise InvalidArgumentError(
            "the cache entry of a file depends on its size and mtime: use cache_index_path"
        )
    if remote.is_url(path):  # URLs always use "/"
        head, tail = posixpath.split(path)
        return posixpath.join(head, INDEX_DIR, tail + INDEX_SUFFIX)
    head, tail = os.path.split(path)
    return os.path.join(head, INDEX_DIR, tail + INDEX_SUFFIX)


def index_candidates(data_path: str) -> list[str]:
    """The places an index of ``data_path`` is looked for, in order, before the cache:
    the hidden sub-folder (written with the data), then the old ``<file>.tfeidx``."""
    return [index_path_for(data_path, "hidden"), index_path_for(data_path, "beside")]
