"""Copying spans out of a file mapping without SIGBUS: ``process_vm_readv`` on ourselves.

Touching a page of a map past the end of its file (a file cut while mapped) kills the
process with SIGBUS. A copy made by the kernel on our behalf does not: Linux's
``process_vm_readv``, asked to read this process's own memory, copies every span of a
batch in one system call and, where a page no longer has a file behind it, stops and
reports how much it copied. So a batch of records scattered over a mapped file is
gathered into a private buffer at the cost of one call, and a short count means the
file shrank (the caller raises a located error). Where the call is not available
(not Linux, or a sandbox that refuses it) :func:`gather` returns ``None`` and callers
read with ``pread``, one call per run of records.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

__all__ = ["available", "copy_span", "gather"]

U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]
# The kernel takes at most IOV_MAX (1024 on Linux) spans per call.
_IOV_MAX = 1024


def _load() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.process_vm_readv
    except (OSError, AttributeError):
        return None
    fn.argtypes = [
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_ulong,
        ctypes.c_void_p,
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]
    fn.restype = ctypes.c_ssize_t
    return fn


_readv: Callable[..., int] | None = _load()


def available() -> bool:
    """Whether :func:`gather` can copy (Linux, and the call was not refused so far)."""
    return _readv is not None


def _refused() -> bool:
    """After a failed call: ``True`` when this process may not make it (a sandbox, an
    old kernel), which disables it from now on; ``False`` for a fault (a page with no
    file behind it). Anything else is raised."""
    global _readv  # noqa: PLW0603 - disabled once for the process when refused
    err = ctypes.get_errno()
    if err == errno.EFAULT:
        return False
    if err in (errno.ENOSYS, errno.EPERM, errno.EACCES, errno.EINVAL):
        _readv = None
        return True
    raise OSError(err, f"process_vm_readv: {os.strerror(err)}")


def gather(out: U8, spans: U64) -> int | None:
    """Copies memory spans of this process into ``out``, back to back.

    Args:
        out: a contiguous buffer of at least ``spans[:, 1].sum()`` bytes.
        spans: ``[k, 2]`` ``uint64`` rows of (address, size), addresses inside live maps.

    Returns:
        The bytes copied: all of them, or fewer where a span reached a page with no file
        behind it any more (the rest of ``out`` is then unspecified). ``None`` when the
        call is unavailable or refused; the caller then reads another way.
    """
    fn = _readv
    if fn is None:
        return None
    pid = os.getpid()
    done = 0
    base = out.ctypes.data
    sizes = spans[:, 1]
    for first in range(0, spans.shape[0], _IOV_MAX):
        part = np.ascontiguousarray(spans[first : first + _IOV_MAX])
        want = int(sizes[first : first + _IOV_MAX].sum())
        local = np.array([[base + done, want]], np.uint64)
        got = fn(pid, local.ctypes.data, 1, part.ctypes.data, part.shape[0], 0)
        if got < 0:
            return None if _refused() else done  # done: the first span faulted
        done += got
        if got < want:
            return done
    return done


def copy_span(address: int, size: int) -> bytes | None:
    """One span of this process's memory as ``bytes`` (the per-call path of ``ds[i]``).

    Returns:
        ``size`` bytes, or fewer where the span reached a page with no file behind it
        any more; ``None`` when the call is unavailable or refused (as :func:`gather`).
    """
    fn = _readv
    if fn is None:
        return None
    buf = ctypes.create_string_buffer(size)
    local = (ctypes.c_uint64 * 2)(ctypes.addressof(buf), size)
    remote = (ctypes.c_uint64 * 2)(address, size)
    got = fn(os.getpid(), local, 1, remote, 1, 0)
    if got < 0:
        return None if _refused() else b""
    return buf.raw[:got] if got < size else buf.raw
