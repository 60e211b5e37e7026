"""The arguments of :class:`~tfrecord_engine.RecordDataset`, checked where they are given.

A wrong argument fails at the call that passed it, with a message that says what was
expected and what to do, rather than deep inside the first read: paths (``bytes`` are
decoded as ``os.fsdecode`` does, as TensorFlow accepts them; open files, directories and
missing files are refused at construction), record indices (``ds[1.0]``, boolean masks
and floats in index lists are refused: nothing is ever truncated to an int) and the sizes
and counts of :meth:`~tfrecord_engine.RecordDataset.batches`.
"""

from __future__ import annotations

import collections
import errno
import glob
import io
import os
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError, InvalidArgumentTypeError, OutOfRangeError
from ..index.placement import INDEX_SUFFIX
from ..storage import remote
from ..storage.options import StorageOptionsArg

__all__ = [
    "check_batch_arguments",
    "check_local_files",
    "expand_paths",
    "record_indices",
    "refuse_record_key",
]

IntArray = npt.NDArray[np.int64]
#: Directory entries looked at to propose a glob for a directory.
_LOOK_AT = 10_000
_INT64_MAX = np.iinfo(np.int64).max


def _is_file_object(item: object) -> bool:
    return isinstance(item, io.IOBase) or (
        callable(getattr(item, "read", None)) and not isinstance(item, (str, bytes, os.PathLike))
    )


def _one_path(item: object, where: str) -> str:
    """One path argument as text (``bytes``, ``os.PathLike`` and ``str`` accepted).

    Raises:
        InvalidArgumentTypeError: an open file or any other type.
    """
    if isinstance(item, str):
        return item
    if isinstance(item, (bytes, os.PathLike)):
        return os.fsdecode(item)
    if _is_file_object(item):
        name = getattr(item, "name", None)
        instead = f"RecordDataset({name!r})" if isinstance(name, (str, bytes)) else "its path"
        raise InvalidArgumentTypeError(
            f"RecordDataset takes paths, not open files ({where} is {type(item).__name__}): "
            f"pass the file's path, {instead}; the dataset opens, maps and indexes its "
            "files itself"
        )
    raise InvalidArgumentTypeError(
        f"RecordDataset takes a path, a glob or a list of them ({where} is "
        f"{type(item).__name__}: {item!r:.60}), e.g. RecordDataset('data/*.tfrecord')"
    )


def expand_paths(paths_or_globs: object, storage_options: StorageOptionsArg = None) -> list[str]:
    """The files of a path, a glob, or a sequence of them (globs expand sorted).

    ``bytes`` and ``os.PathLike`` paths are decoded (``os.fsdecode``). A glob never
    returns index sidecars. Nothing else is checked (see :func:`check_local_files`).
    A URL glob is listed with ``storage_options`` (fsspec keyword arguments, see
    :mod:`tfrecord_engine.storage.options`); local paths ignore them.

    >>> expand_paths([b"a.tfrecord", "b.tfrecord"])
    ['a.tfrecord', 'b.tfrecord']

    Raises:
        InvalidArgumentTypeError: an open file, or something that is not a path.
        FileNotFoundError: a glob that matches nothing.
        InvalidArgumentError: no path at all.
    """
    items: Iterable[object]
    if isinstance(paths_or_globs, (str, bytes, os.PathLike)) or _is_file_object(paths_or_globs):
        items = [paths_or_globs]
    elif isinstance(paths_or_globs, Iterable) and not isinstance(paths_or_globs, Mapping):
        items = paths_or_globs
    else:
        items = [paths_or_globs]  # (refused below, by type)
    out: list[str] = []
    for k, item in enumerate(items):
        where = "the argument" if items is not paths_or_globs else f"item {k}"
        p = remote.local_path(_one_path(item, where))
        if glob.has_magic(p):
            # A pattern like "train-*" must not pick up our own sidecars.
            matches = remote.glob(p, storage_options) if remote.is_url(p) else glob.glob(p)
            found = sorted(q for q in matches if INDEX_SUFFIX not in os.path.basename(q))
            if not found:
                raise FileNotFoundError(_no_match(p))
            out += found
        else:
            out.append(p)
    if not out:
        raise InvalidArgumentError(
            "RecordDataset needs at least one file (the list of paths is empty)"
        )
    return out


def _no_match(pattern: str) -> str:
    if remote.is_url(pattern):
        return f"no file matches {pattern!r}"
    folder = os.path.dirname(pattern) or "."
    if not glob.has_magic(folder) and not os.path.isdir(folder):
        return f"no file matches {pattern!r}: its folder {folder!r} does not exist"
    if os.path.isabs(pattern):
        return f"no file matches {pattern!r}"
    return f"no file matches {pattern!r} (relative to {os.getcwd()!r})"


def check_local_files(paths: list[str]) -> None:
    """Refuses, at construction, a local path that is missing or a directory.

    URLs are not checked here (a request each; their first use says what is wrong).

    Raises:
        FileNotFoundError: a local path does not exist.
        IsADirectoryError: a local path is a directory (the message proposes a glob).
    """
    for path in paths:
        if remote.is_url(path):
            continue
        try:
            is_dir = os.path.isdir(path)
            if not is_dir:
                os.stat(path)
        except FileNotFoundError:
            raise FileNotFoundError(
                errno.ENOENT,
                "no such TFRecord file (check the path; a glob such as 'data/*.tfrecord' "
                "expands to the files that exist)",
                path,
            ) from None
        if is_dir:
            raise IsADirectoryError(
                errno.EISDIR,
                f"is a directory, not a TFRecord file: pass a glob such as "
                f"{_glob_for(path)!r}, or a list of its files",
                path,
            )


def _glob_for(folder: str) -> str:
    """A glob for the record files of ``folder``: its most common file extension."""
    suffixes: collections.Counter[str] = collections.Counter()
    try:
        with os.scandir(folder) as entries:
            for n, entry in enumerate(entries):
                if n >= _LOOK_AT:
                    break
                if entry.name.startswith(".") or not entry.is_file():
                    continue
                name = entry.name
                if ".tfrecord" in name:
                    suffixes["*" + name[name.index(".tfrecord") :]] += _LOOK_AT
                elif "." in name:
                    suffixes["*" + name[name.rindex(".") :]] += 1
    except OSError:
        pass  # an unreadable folder: the generic proposal
    pattern = suffixes.most_common(1)[0][0] if suffixes else "*.tfrecord"
    return os.path.join(folder, pattern)


def refuse_record_key(key: object) -> InvalidArgumentTypeError:
    """The error for ``ds[key]`` with a key that is not a record index, slice or list.

    >>> str(refuse_record_key(1.0))
    'ds[1.0]: a record index must be an int (ds[1], not ds[1.0]), a slice or a list ...'
    """
    hint = f"ds[{int(key)}], not ds[{key!r}]" if _whole(key) else "e.g. ds[1]"
    return InvalidArgumentTypeError(
        f"ds[{key!r:.60}]: a record index must be an int ({hint}), a slice or a list of "
        f"ints; got {type(key).__name__}"
    )


def _whole(value: object) -> TypeGuard[float | np.floating[Any]]:
    return isinstance(value, (float, np.floating)) and float(value).is_integer()


def record_indices(key: Any) -> IntArray:
    """Record indices (``ds[list]``, ``__getitems__``) as a 1-D int64 array, checked.

    Every item must be an integer: floats are refused (never truncated), as are boolean
    masks (which numpy would read as the indices 0 and 1).

    >>> record_indices([3, -1]).tolist(), record_indices([]).dtype.name
    ([3, -1], 'int64')

    Raises:
        InvalidArgumentTypeError: items that are not integers.
        OutOfRangeError: an unsigned index beyond any dataset (above 2**63 - 1).
    """
    try:
        arr = key if isinstance(key, np.ndarray) else np.asarray(key)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentTypeError(
            f"record indices must be ints, got {type(key).__name__} ({exc})"
        ) from None
    kind = arr.dtype.kind
    if kind == "i":
        return arr.astype(np.int64, copy=False).reshape(-1)
    if kind == "u":
        if arr.size and int(arr.max()) > _INT64_MAX:
            raise OutOfRangeError(f"record index {int(arr.max())} out of range")
        return arr.astype(np.int64).reshape(-1)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)  # [] is float64 to numpy
    if kind == "b":
        raise InvalidArgumentTypeError(
            "record indices must be ints, got booleans: for a mask, pass np.flatnonzero(mask)"
        )
    if kind == "O":
        items = arr.reshape(-1).tolist()
        if all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in items):
            return np.array([int(i) for i in items], dtype=np.int64)
    bad = next(
        (i for i in arr.reshape(-1).tolist() if not isinstance(i, int) or isinstance(i, bool)),
        None,
    )
    hint = " (indices are never rounded: pass ints)" if kind == "f" else ""
    raise InvalidArgumentTypeError(
        f"record indices must be ints, got {arr.dtype.name if kind != 'O' else 'objects'} "
        f"such as {bad!r:.60}{hint}"
    )


def _integer(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_batch_arguments(**values: object) -> None:
    """Refuses sizes, counts and seeds of ``batches`` that are not ints (``64.0``).

    ``None`` passes (``epoch=None``); the ranges are checked where the values are used.

    >>> check_batch_arguments(batch_size=64.0)
    Traceback (most recent call last):
    ...
    tfrecord_engine.errors.InvalidArgumentTypeError: batch_size must be an int, got float 64.0 ...

    Raises:
        InvalidArgumentTypeError: a value that is neither ``None`` nor an int.
    """
    for name, value in values.items():
        if value is None or _integer(value):
            continue
        fix = f" ({name}={int(value)}, not {name}={value!r})" if _whole(value) else ""
        raise InvalidArgumentTypeError(
            f"{name} must be an int, got {type(value).__name__} {value!r:.60}{fix}"
        )
