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
it computes anywhere else. It needs a C library with ``fegetenv``/``fesetenv`` and the
``FE_DFL_ENV`` of glibc and musl (Linux); elsewhere the block runs in the thread's mode
as it is.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["default_floats"]

# fenv_t is 28-32 bytes on the platforms below: room to spare.
_ENV_BYTES = 256


def _libm() -> Any:
    """The C library's ``fegetenv``/``fesetenv``, or None where they cannot be used."""
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("m")
    try:
        lib = ctypes.CDLL(name or "libm.so.6")
        get, set_ = lib.fegetenv, lib.fesetenv
    except (OSError, AttributeError):
        return None
    get.argtypes = [ctypes.c_void_p]
    set_.argtypes = [ctypes.c_void_p]
    get.restype = set_.restype = ctypes.c_int
    return lib


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
