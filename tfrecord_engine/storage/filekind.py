"""Local paths that are not regular files: pipes, FIFOs, sockets, character devices.

Such a path (``/dev/stdin`` on a pipe, a FIFO made with ``os.mkfifo``, ``/dev/fd/63``
from a shell's ``<(...)``) has no size and cannot be mapped: ``mmap`` would see zero
bytes and a reader would silently return no records. So sequential reading
(:func:`~tfrecord_engine.read_records`) reads them as a stream, and everything that
needs random access or a size (indexing, :class:`~tfrecord_engine.RecordDataset`,
appending) refuses them with :class:`~tfrecord_engine.InvalidArgumentError`.

The check is a ``stat``, never an ``open``: opening a FIFO blocks until a writer comes.
Directories and missing paths count as neither: the caller's own ``open`` raises what
it always did for them (``IsADirectoryError``, ``FileNotFoundError``).
"""

from __future__ import annotations

import os
import stat

from ..errors import InvalidArgumentError

__all__ = ["require_regular", "stream_kind"]


def stream_kind(path: str) -> str | None:
    """What kind of non-regular file a local ``path`` names, or ``None``.

    ``None`` for a regular file, a directory and a path that cannot be stat'ed.

    Example:
        >>> import os, tempfile
        >>> d = tempfile.mkdtemp()
        >>> os.mkfifo(os.path.join(d, "fifo"))
        >>> stream_kind(os.path.join(d, "fifo")), stream_kind(d), stream_kind(os.devnull)
        ('a pipe (FIFO)', None, 'a character device')
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, unreadable, a NUL in the name: open decides
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"  # pragma: no cover - no other kinds on POSIX


def require_regular(path: str, what: str) -> None:
    """Raises unless a local ``path`` is a regular file (or missing, or a directory).

    Args:
        path: a local path (URLs are the caller's business).
        what: the operation, for the message (``"indexing"``, ``"appending"``...).

    Raises:
        InvalidArgumentError: ``path`` is a pipe, FIFO, socket or device.
    """
    kind = stream_kind(path)
    if kind is not None:
        raise InvalidArgumentError(
            f"{path}: {what} needs a regular file (random access), and this is {kind}; "
            "read it sequentially with read_records(), or copy it to a file first"
        )
