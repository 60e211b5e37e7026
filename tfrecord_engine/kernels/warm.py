"""Whether numba's on-disk cache already holds the compiled kernels, and filling it in
another process when it does not.

Compiling the kernels costs several seconds of one core, once per machine (numba's
``cache=True`` keeps the result). Loading them from the cache costs ~0.5 s. A process
that finds the cache empty does not compile in its own background thread: it would
then have to wait for that compilation at exit (LLVM's code must not run while the
interpreter is torn down), so a short script on a new install took the whole
compilation to end. Instead it starts a *builder*: a separate, detached Python process
(``python -m tfrecord_engine.kernels``, :mod:`.__main__`) that compiles into the cache and
leaves a marker file beside it. The process that started it goes on with the numpy
paths, loads the kernels from the cache if the marker appears while it runs, and exits
whenever it is done, without waiting for the builder.

The marker lives in the folder numba caches ``_numba.py``'s code in (``__pycache__``
next to it, or the user's cache where the package is read-only, or
``NUMBA_CACHE_DIR``), and its name holds what the cached code depends on: the numba
and Python versions, the source of ``_numba.py`` and the CPU. One builder runs at a
time per cache folder (an exclusive lock file holding its process id; a lock whose
process is gone is taken over).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["Place", "locate", "mark_warm", "start_builder", "take_lock"]

_LOCK_NAME = "tfe-kernels-builder.lock"


def _compiled() -> Any:
    from . import _numba  # noqa: PLC0415 - numba only where this runs (loader, builder)

    return _numba


def _cache_dir() -> Path | None:
    """The folder numba caches ``_numba.py``'s kernels in (its own choice), or None."""
    try:
        cache = getattr(_compiled().varint_runs, "_cache", None)
        path = getattr(cache, "_cache_path", None)
    except (ImportError, OSError):
        return None
    return Path(path) if isinstance(path, str) else None


def _key() -> str:
    """What the cached code depends on, hashed: numba, llvmlite and Python versions,
    the kernels' sources (and the loader's, which picks the variants compiled), and the
    CPU (name and features)."""
    import llvmlite  # noqa: PLC0415
    import llvmlite.binding as llvm  # noqa: PLC0415
    import numba  # noqa: PLC0415

    kernels = Path(_compiled().__file__)
    # (_loader.py: which variants the load compiles, _loader._load_buffer_twins.)
    names = ("_sequence", "_examples", "_dense", "_intrinsics", "_single", "_loader")
    source = kernels.read_bytes()
    source += b"".join(kernels.with_name(f"{name}.py").read_bytes() for name in names)
    parts = [
        numba.__version__,
        llvmlite.__version__,
        sys.version,
        platform.machine(),
        llvm.get_host_cpu_name(),
        llvm.get_host_cpu_features().flatten(),
        hashlib.sha256(source).hexdigest(),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


class Place(NamedTuple):
    """Where the marker and the builder's lock of this machine's cache are."""

    marker: Path
    lock: Path

    def is_warm(self) -> bool:
        """Whether the marker says the cache holds this machine's compiled kernels."""
        return self.marker.exists()

    def builder_running(self) -> bool:
        """Whether a builder process holds the lock now."""
        pid = _holder(self.lock)
        return pid is not None and _alive(pid)


def locate() -> Place | None:
    """The :class:`Place` of the cache numba uses for the kernels (None: no cache)."""
    folder = _cache_dir()
    if folder is None:
        return None
    return Place(folder / f"tfe-kernels-{_key()}.ok", folder / _LOCK_NAME)


def mark_warm() -> None:
    """Leaves the marker (after the kernels were compiled or loaded in this process);
    silently nothing where the cache folder cannot be written."""
    place = locate()
    if place is None:
        return
    with contextlib.suppress(OSError):
        place.marker.parent.mkdir(parents=True, exist_ok=True)
        temp = place.marker.with_name(f".{place.marker.name}.{os.getpid()}")
        temp.write_bytes(b"")
        os.replace(temp, place.marker)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _holder(lock: Path) -> int | None:
    try:
        return int(lock.read_text().strip() or "0") or None
    except (OSError, ValueError):
        return None


#: Python run by the launcher: starts the builder in a session of its own and exits at
#: once, so the builder is no child of the process that wanted it (nothing to reap,
#: nothing left running under it at its exit).
_LAUNCH = (
    "import subprocess, sys; subprocess.Popen([sys.executable, '-m', "
    "'tfrecord_engine.kernels'], stdin=subprocess.DEVNULL, "
    "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)"
)


def start_builder(place: Place) -> bool:
    """Starts a detached builder unless one holds the lock already; whether one was
    started (ask :meth:`Place.builder_running` whether one runs).

    The builder gets the parent's environment (``NUMBA_CACHE_DIR`` included) and none
    of its standard streams; it is in a session of its own, so a Ctrl-C meant for the
    parent does not stop it half-way (numba writes each cache entry atomically anyway).
    """
    if place.builder_running():
        return False
    try:
        done = subprocess.run(
            [sys.executable, "-c", _LAUNCH],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": _import_path()},
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _import_path() -> str:
    """``PYTHONPATH`` for the builder: this package's parent first, so the builder
    compiles the very source this process loads (a checkout, a wheel, a zip)."""
    here = str(Path(__file__).resolve().parents[2])
    rest = os.environ.get("PYTHONPATH", "")
    return here if not rest else f"{here}{os.pathsep}{rest}"


def take_lock(lock: Path) -> bool:
    """Takes the builder lock (creating it exclusively, or taking over a dead
    holder's); whether this process holds it now."""
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            pid = _holder(lock)
            if pid is not None and _alive(pid):
                return False
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()  # a builder that died: take its place
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False
