"""Where a :class:`~tfrecord_engine.TFRecordWriter`'s bytes go: its file opened.

The file-system seam (:func:`use_file_ops`: fault injection in tests), the file
operations of a path (:func:`file_ops_for`: local, an injected seam, or fsspec's for a
URL), and the three ways a writer opens its file: a hidden temporary sibling that
``close()`` renames onto the final name (:func:`open_temp`, atomic mode), the final
name itself (in place), or the end of an existing file whose torn tail is cut first
(:func:`open_for_append`).
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import Callable, Iterator
from typing import BinaryIO, Final

from ..errors import DamageWarning, InvalidArgumentError
from ..records.compression import Compression
from ..records.recovery import DamageReport
from ..storage import remote
from ..storage.filekind import require_regular
from ..storage.fileops import FileOps, naming_final
from ..storage.options import StorageOptionsArg
from ..storage.remote_fileops import RemoteFileOps
from .append import torn_tail_offset
from .publish import temp_path_for

__all__ = ["FILE_BUFFER", "file_ops_for", "open_for_append", "open_temp", "use_file_ops"]

#: A larger file buffer than io's default (8 KiB) halves the per-record write cost.
FILE_BUFFER: Final = 1 << 20

# The file-system seam (fault injection in tests): a writer created inside
# ``use_file_ops(ops)`` makes every file-system call through ``ops``. A context variable,
# not a constructor argument, so the public signature shows only what users may pass.
_FILE_OPS: contextvars.ContextVar[FileOps | None] = contextvars.ContextVar(
    "tfrecord_engine_file_ops", default=None
)


@contextlib.contextmanager
def use_file_ops(ops: FileOps) -> Iterator[None]:
    """Writers created inside this block perform their file-system calls through ``ops``."""
    token = _FILE_OPS.set(ops)
    try:
        yield
    finally:
        _FILE_OPS.reset(token)


def file_ops_for(path: str, *, append: bool, storage_options: StorageOptionsArg) -> FileOps:
    """The file operations of a writer of ``path``: the seam's when inside
    :func:`use_file_ops`, fsspec's for a URL, else the local file system's.

    Raises:
        InvalidArgumentError: appending to a URL, or to a file that is not a regular
            file (a pipe, FIFO or device).
    """
    ops = _FILE_OPS.get()
    if ops is None and remote.is_url(path):
        if append:
            raise InvalidArgumentError(f"{path}: appending to a URL is not supported")
        ops = RemoteFileOps(path, storage_options)
    elif append:
        # Appending first reads the file's tail (torn records are cut): a pipe has none.
        require_regular(path, "appending")
    return FileOps() if ops is None else ops


def open_temp(ops: FileOps, path: str) -> tuple[BinaryIO, str]:
    """A new hidden temporary file beside ``path`` (``.<name>.tmp-<random>``), and its
    path; an error opening it names ``path``, the one the caller knows."""
    temp = temp_path_for(path)
    try:
        f = ops.open_new(temp, FILE_BUFFER)
    except OSError as exc:
        raise naming_final(exc, temp, path) from None
    return f, temp


def open_for_append(
    ops: FileOps,
    path: str,
    kind: Compression,
    on_damage_report: Callable[[DamageReport], object] | None,
) -> BinaryIO:
    """``path`` opened at its end (created if missing), a torn tail cut first (synced)
    and reported to ``on_damage_report``, else warned of (:class:`DamageWarning`, shown
    at the writer's constructor)."""

    def warn(report: DamageReport) -> None:
        warnings.warn(DamageWarning(str(report), report), stacklevel=4)

    try:
        cut = torn_tail_offset(path, kind, on_damage_report or warn)
    except FileNotFoundError:
        cut = None
    f = ops.open_append(path, FILE_BUFFER)
    try:
        if cut is not None:
            ops.truncate(f, cut)
            ops.fsync(f)
    except BaseException:
        f.close()
        raise
    return f
