"""Cluster-scale checks with Ray tasks: ``verify`` (damage as data), ``build_indexes``
and ``count`` (from the indexes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import ray

from ...index.sidecar import Index
from ...records.compression import Compression
from ...records.reader import read_records
from ...records.recovery import DamageReport
from ...storage.options import StorageOptionsArg
from ..splits import (
    CompressionArg,
    PathArg,
    ReadPolicy,
    check_policy,
    compression_of,
    expand_paths,
    open_indexes,
)

__all__ = ["FileCheck", "build_indexes", "count", "verify"]


@dataclasses.dataclass(frozen=True, slots=True)
class FileCheck:
    """What :func:`verify` (or :func:`build_indexes`) found in one file.

    Attributes:
        path: the file.
        compression: its compression.
        records: the intact records (every CRC checked).
        damage: each damaged region, as a reader under ``"skip"`` reports it.
    """

    path: str
    compression: Compression
    records: int
    damage: tuple[DamageReport, ...]

    @property
    def ok(self) -> bool:
        """No damage."""
        return not self.damage


def _check_file(
    path: str, compression: CompressionArg, storage_options: StorageOptionsArg = None
) -> FileCheck:
    kind = compression_of(path, compression, storage_options)
    reports: list[DamageReport] = []
    n = 0
    for _ in read_records(
        path,
        kind,
        on_damage="skip",
        on_damage_report=reports.append,
        storage_options=storage_options,
    ):
        n += 1
    return FileCheck(path, kind, n, tuple(reports))


def verify(
    paths_or_globs: PathArg | Sequence[PathArg],
    compression: CompressionArg = "auto",
    *,
    num_cpus: float = 1,
    storage_options: StorageOptionsArg = None,
) -> list[FileCheck]:
    """Reads every record of every file in Ray tasks (one per file), every CRC checked.

    Damage is data here, not an error: each file's :class:`FileCheck` lists it. URLs
    are reached with ``storage_options`` (fsspec keyword arguments, handed to the
    tasks).

    Returns:
        one report per file, in file order.
    """
    paths = expand_paths(paths_or_globs, storage_options)
    check: Any = ray.remote(num_cpus=num_cpus)(_check_file)
    got: list[FileCheck] = ray.get([check.remote(p, compression, storage_options) for p in paths])
    return got


def _index_file(
    path: str,
    compression: CompressionArg,
    on_damage: ReadPolicy,
    storage_options: StorageOptionsArg = None,
) -> FileCheck:
    kind = compression_of(path, compression, storage_options)
    reports: list[DamageReport] = []
    # Saved in the hidden .tfeidx/ folder beside the data, where every node (and the
    # driver's read_tfrecords) finds it; not in the worker's own user cache.
    idx = Index.open(
        path,
        kind,
        on_damage=on_damage,
        on_damage_report=reports.append,
        save="hidden",
        storage_options=storage_options,
    )
    return FileCheck(path, kind, len(idx), tuple(reports))


def build_indexes(
    paths_or_globs: PathArg | Sequence[PathArg],
    compression: CompressionArg = "auto",
    *,
    on_damage: str = "raise",
    num_cpus: float = 1,
    storage_options: StorageOptionsArg = None,
) -> list[FileCheck]:
    """Opens every file's index in Ray tasks (one per file), building and saving each
    missing or stale sidecar there.

    Run it once over many unindexed shards: :func:`read_tfrecords` then only loads the
    sidecars on the driver instead of indexing every file itself. Under ``"skip"``
    each index is built with every CRC checked, and the damage it leaves out is
    returned, not raised.

    Returns:
        one :class:`FileCheck` per file, in file order: its (intact) record count and
        the damage indexing found.
    """
    policy = check_policy(on_damage)
    paths = expand_paths(paths_or_globs, storage_options)
    task: Any = ray.remote(num_cpus=num_cpus)(_index_file)
    got: list[FileCheck] = ray.get(
        [task.remote(p, compression, policy, storage_options) for p in paths]
    )
    return got


def count(
    paths_or_globs: PathArg | Sequence[PathArg],
    compression: CompressionArg = "auto",
    *,
    storage_options: StorageOptionsArg = None,
) -> int:
    """The number of records of the files, from their indexes (built when missing).

    A fresh sidecar index answers without reading any data. URLs are reached with
    ``storage_options``.
    """
    paths = expand_paths(paths_or_globs, storage_options)
    return sum(
        len(idx) for idx in open_indexes(paths, compression, storage_options=storage_options)
    )
