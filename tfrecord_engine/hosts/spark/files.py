"""The files of a read, with the values of their Hive-style ``key=value`` folders.

A path names a file, a glob or a folder (local, or a URL listed with the read's
``storageOptions``). A folder is read whole: its data files, and
those in sub-folders named ``key=value`` (what ``partitionBy`` writes), whose values
become columns. Hidden names (``.x``, ``_x``: staging folders, writers' temporaries,
markers, the ``.tfeidx/`` indexes) are left out everywhere. A value is a long when
every folder's value for its key is an integer, else a string;
``__HIVE_DEFAULT_PARTITION__`` is a null.
"""

from __future__ import annotations

import glob as _glob
import os
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ...errors import InvalidArgumentError
from ...storage import remote
from ...storage.options import StorageOptionsArg
from ..splits import expand_paths

__all__ = ["NULL_VALUE", "DataFile", "find_files", "folder_value", "partition_types"]

#: The folder value of a null (Hive's name, as Spark writes it).
NULL_VALUE: Final = "__HIVE_DEFAULT_PARTITION__"


@dataclass(frozen=True)
class DataFile:
    """A data file and its folders' ``key -> value`` (raw text, unescaped)."""

    path: str
    partition: tuple[tuple[str, str], ...] = ()


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _walk(root: str, prefix: tuple[tuple[str, str], ...]) -> list[DataFile]:
    out: list[DataFile] = []
    for name in sorted(os.listdir(root)):
        full = os.path.join(root, name)
        if _hidden(name):
            continue
        if os.path.isdir(full):
            if "=" not in name:
                continue  # only key=value folders hold partitions
            key, _, value = name.partition("=")
            out += _walk(full, (*prefix, (key, urllib.parse.unquote(value))))
        elif not name.endswith(".tfeidx"):
            out.append(DataFile(full, prefix))
    return out


def _walk_url(url: str, storage_options: StorageOptionsArg) -> list[DataFile] | None:
    """The data files under the URL folder ``url`` (as :func:`_walk`), or ``None`` when
    ``url`` is no folder."""
    fs, inner = remote.filesystem(url, storage_options)
    inner = inner.rstrip("/")
    if not fs.isdir(inner):
        return None
    found: list[tuple[tuple[str, ...], str]] = []
    for p in fs.find(inner):
        parts = tuple(str(p)[len(inner) + 1 :].split("/"))
        if any(_hidden(part) for part in parts) or parts[-1].endswith(".tfeidx"):
            continue
        if all("=" in part for part in parts[:-1]):  # only key=value folders hold partitions
            found.append((parts, fs.unstrip_protocol(p)))
    out = []
    for parts, full in sorted(found):
        folders = (part.partition("=") for part in parts[:-1])
        out.append(DataFile(full, tuple((k, urllib.parse.unquote(v)) for k, _, v in folders)))
    return out


def find_files(paths: Sequence[str], storage_options: StorageOptionsArg = None) -> list[DataFile]:
    """The data files of ``paths`` in order (see the module); URLs are listed with
    ``storage_options``.

    Raises:
        FileNotFoundError: a path, glob or folder holds no data file.
        InvalidArgumentError: no path at all; partition folders with different keys.
    """
    if not paths:
        raise InvalidArgumentError(
            "no path: spark.read.format('tfrecord').load(PATH) (or .option('path', ...))"
        )
    out: list[DataFile] = []
    for p in paths:
        if not remote.is_url(p) and os.path.isdir(p):
            found = _walk(p, ())
            if not found:
                raise FileNotFoundError(f"the folder {p!r} holds no data file")
            out += found
            continue
        if remote.is_url(p) and not _glob.has_magic(p):
            walked = _walk_url(p, storage_options)
            if walked is not None:
                if not walked:
                    raise FileNotFoundError(f"the folder {p!r} holds no data file")
                out += walked
                continue
        out += [DataFile(f) for f in expand_paths(p, storage_options)]
    keys = {tuple(k for k, _ in f.partition) for f in out}
    if len(keys) > 1:
        raise InvalidArgumentError(
            f"the files sit in partition folders of different keys {sorted(keys)}: read each "
            "layout on its own"
        )
    return out


def folder_value(value: object) -> str:
    """A partition value as a folder name's value (escaped as Hive escapes it)."""
    if value is None:
        return NULL_VALUE
    text = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)
    return urllib.parse.quote(text, safe=" ") if text else NULL_VALUE


def partition_types(files: Sequence[DataFile]) -> dict[str, str]:
    """Per partition key: ``"long"`` when every value is an integer (or null), else
    ``"string"``."""
    out: dict[str, str] = {}
    for f in files:
        for key, value in f.partition:
            if value == NULL_VALUE:
                out.setdefault(key, "long")
                continue
            try:
                int(value)
            except ValueError:
                out[key] = "string"
            else:
                out.setdefault(key, "long")
    return out
