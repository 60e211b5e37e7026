"""The engine's calls from TensorFlow's threads, under the default floating-point mode.

TensorFlow runs its ops, ``numpy_function`` calls included, with denormals flushed to
zero (flush-to-zero and denormals-are-zero set on its threads). numpy run there turns a
float64 into a float32 with the same flush: a ``FixedLenFeature`` default of
``1.7e-44`` (a subnormal float32) became ``0.0`` in the bridge's batches, where
``tf.io.parse_example`` keeps it (found by the differential test of wide specs). The
records' own values are copied as bits and were not touched.

:func:`default_floats` sets the calling thread's floating-point environment to the C
library's default (``fesetenv(FE_DFL_ENV)``: no flush, round to nearest) for a block and
restores the thread's own after it, so the engine computes in TensorFlow's threads what
it computes anywhere else. It needs Linux on x86 or ARM64, whose C libraries (glibc,
musl) define ``FE_DFL_ENV`` as ``(const fenv_t *) -1``; elsewhere (glibc on PowerPC
names a variable instead; macOS, Windows) the block runs in the thread's mode as it is.
The default environment masks every floating-point exception, as TensorFlow's threads
do: nothing inside starts to trap.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import platform
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["default_floats"]

# fenv_t is 8 (aarch64) to 32 (x86-64) bytes on the machines below: room to spare.
_ENV_BYTES = 256


#: Machines whose Linux C libraries define ``FE_DFL_ENV`` as ``(const fenv_t *) -1``.
_MACHINES = frozenset({"x86_64", "amd64", "i386", "i486", "i586", "i686", "aarch64", "arm64"})


def _libm() -> Any:
    """The C library's ``fegetenv``/``fesetenv``, or None where they cannot be used."""
    if not sys.platform.startswith("linux") or platform.machine().lower() not in _MACHINES:
        return None
    # (The process's own symbols first: musl has them in libc, and Python links libm.)
    for name in (None, ctypes.util.find_library("m"), "libm.so.6"):
        try:
            lib = ctypes.CDLL(name)
            get, set_ = lib.fegetenv, lib.fesetenv
        except (OSError, AttributeError):
            continue
        get.argtypes = [ctypes.c_void_p]
        set_.argtypes = [ctypes.c_void_p]
        get.restype = set_.restype = ctypes.c_int
        return lib
    return None


_LIB = _libm()
#: glibc's and musl's FE_DFL_ENV: ``((const fenv_t *) -1)``.
_DEFAULT = ctypes.c_void_p(-1)


@contextlib.contextmanager
def default_floats() -> Iterator[None]:
    """Runs the block in the C library's default floating-point environment (denormals
    kept), restoring the thread's own environment after it."""
    lib = _LIB
    if lib is None:
        yield
        return
    saved = ctypes.create_string_buffer(_ENV_BYTES)
    if lib.fegetenv(saved) != 0:
        yield
        return
    lib.fesetenv(_DEFAULT)
    try:
        yield
    finally:
        lib.fesetenv(saved)
