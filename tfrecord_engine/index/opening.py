"""Finding, loading, saving and (re)building the index of a data file.

:class:`~tfrecord_engine.index.sidecar.Index`'s ``load``, ``open`` and ``save``
document the promises; this module keeps the work: which places are tried, in which
order (:mod:`.placement`), what a loaded index must answer (its data file unchanged,
the damage policy served), when an index is built instead and where it is kept, and
how an index file is written atomically (locally, or with one put to a store).

It sees an index through the two protocols below, never the class itself (the class
imports this module).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol, TypeVar

from ..errors import IndexFormatError, InvalidArgumentError, ReadOnlyStorageError
from ..records.compression import Compression
from ..records.detect import CompressionArg, requested
from ..records.recovery import DamageCallback, DamagePolicy, DamageReport, normalize_policy
from ..storage import remote
from ..storage.filekind import require_regular
from ..storage.fileops import naming_final
from ..storage.options import StorageOptionsArg
from .columns import ColumnsArg, IndexColumn
from .placement import (
    IndexPlacement,
    cache_entries,
    cache_identity,
    cache_index_path,
    index_candidates,
    index_path_for,
    normalize_placement,
    prune_cache,
)

__all__ = ["Maker", "Opened", "load_from", "load_index", "open_index", "save_index"]

PathLike = str | os.PathLike[str]

_I = TypeVar("_I", bound="Opened")
_I_co = TypeVar("_I_co", bound="Opened", covariant=True)


class Opened(Protocol):
    """What loading and opening use of an index (an :class:`~.sidecar.Index`)."""

    @property
    def data_path(self) -> str: ...
    @property
    def compression(self) -> Compression: ...
    @property
    def damage(self) -> tuple[DamageReport, ...]: ...
    @property
    def damage_policy(self) -> DamagePolicy: ...
    @property
    def columns(self) -> Mapping[str, IndexColumn]: ...
    def validate(self, identity: tuple[int, int] | None = None) -> None: ...
    def for_policy(self: _I, on_damage: DamagePolicy) -> _I | None: ...
    def report_damage(self, on_damage_report: DamageCallback | None = None) -> None: ...
    def save(
        self,
        index_path: PathLike | None = None,
        *,
        placement: str = ...,
        storage_options: StorageOptionsArg = None,
    ) -> str: ...


class Maker(Protocol[_I_co]):
    """The class methods that make an index (``Index`` itself): called through it, so
    a subclass, or a test's stand-in for one of them, is used."""

    def from_bytes(
        self,
        blob: bytes,
        data_path: PathLike,
        *,
        source: str = ...,
        storage_options: StorageOptionsArg = None,
    ) -> _I_co: ...
    def load(
        self,
        data_path: PathLike,
        index_path: PathLike | None = None,
        *,
        on_damage: DamagePolicy = ...,
        on_damage_report: DamageCallback | None = None,
        storage_options: StorageOptionsArg = None,
    ) -> _I_co: ...
    def build(
        self,
        path: PathLike,
        compression: CompressionArg = ...,
        *,
        on_damage: DamagePolicy = ...,
        on_damage_report: DamageCallback | None = None,
        columns: ColumnsArg | None = None,
        storage_options: StorageOptionsArg = None,
    ) -> _I_co: ...


def load_index(
    maker: Maker[_I],
    data_path: PathLike,
    index_path: PathLike | None,
    *,
    on_damage: DamagePolicy,
    on_damage_report: DamageCallback | None,
    storage_options: StorageOptionsArg,
) -> _I:
    """:meth:`Index.load <tfrecord_engine.index.sidecar.Index.load>`: the first index
    of ``data_path`` that is valid and answers ``on_damage``."""
    policy = normalize_policy(on_damage)
    data_path = remote.local_path(os.fspath(data_path))
    if not remote.is_url(data_path):
        # Checked first: validating would open the data file, and a FIFO's open blocks.
        require_regular(data_path, "loading an index")
    if index_path is not None:
        return load_from(
            maker, data_path, os.fspath(index_path), policy, on_damage_report, None, storage_options
        )
    identity = cache_identity(data_path, storage_options)
    entry = cache_index_path(data_path, identity)

    # An entry saved for another state of the file (touched, appended, replaced) is
    # still tried: validation then tells a stale one (raised as such) from one whose
    # content did not change.
    # They are listed only when the usual places fail: listing the cache folder costs
    # as much as the whole load once it holds many entries.
    def candidates() -> Iterator[str]:
        yield from index_candidates(data_path)
        yield entry
        yield from (e for e in cache_entries(data_path) if e != entry)

    sources: list[str] = []
    first: IndexFormatError | None = None
    for source in candidates():
        sources.append(source)
        try:
            return load_from(
                maker, data_path, source, policy, on_damage_report, identity, storage_options
            )
        except FileNotFoundError:
            continue
        except IndexFormatError as exc:
            # A stale or unsuitable index at one place does not hide a good one at
            # the next (e.g. a cache entry built after the old sidecar went stale).
            first = first or exc
    if first is not None:
        raise first
    raise FileNotFoundError(f"{data_path}: no index at {', '.join(sources)}")


def load_from(  # noqa: PLR0917 - load_index()'s context, two call sites
    maker: Maker[_I],
    data_path: str,
    source: str,
    policy: DamagePolicy,
    on_damage_report: DamageCallback | None,
    identity: tuple[int, int] | None,
    storage_options: StorageOptionsArg = None,
) -> _I:
    """The index file ``source`` of ``data_path``, validated and served to ``policy``
    (its damage reported to ``on_damage_report``)."""
    if remote.is_url(source):
        blob = remote.RemoteFile(source, storage_options=storage_options).read_all()
    else:
        with open(source, "rb") as f:
            blob = f.read()
    idx = maker.from_bytes(blob, data_path, source=source, storage_options=storage_options)
    # A URL's cache identity is its size and fingerprint: no need to ask twice.
    idx.validate(identity if remote.is_url(data_path) else None)
    served = idx.for_policy(policy)
    if served is None and not idx.damage:
        raise IndexFormatError(
            f"{source}: the index of {data_path} was built without checking data CRCs "
            f'(from the record headers only, e.g. by an on_damage="raise" open) and '
            f"cannot serve on_damage={policy!r}"
        )
    if served is None:
        first = idx.damage[0]
        raise IndexFormatError(
            f"{source}: the index lists {len(idx.damage)} damaged region(s) of "
            f"{data_path} (first: record {first.record_index} at offset "
            f"{first.offset}: {first.reason}); it was built with "
            f"on_damage={idx.damage_policy!r} and cannot serve on_damage={policy!r}"
        )
    served.report_damage(on_damage_report)
    return served


def open_index(
    maker: Maker[_I],
    data_path: PathLike,
    compression: CompressionArg,
    *,
    on_damage: DamagePolicy,
    on_damage_report: DamageCallback | None,
    rebuild: bool,
    save: bool | str,
    storage_options: StorageOptionsArg,
) -> _I:
    """:meth:`Index.open <tfrecord_engine.index.sidecar.Index.open>`: the index
    ``maker.load`` finds, or one ``maker.build`` makes (and saves where ``save`` says)."""
    want = requested(compression)
    policy = normalize_policy(on_damage)
    where: IndexPlacement | None = (
        ("cache" if save else None) if isinstance(save, bool) else normalize_placement(save)
    )
    try:
        idx = maker.load(
            data_path,
            on_damage=policy,
            on_damage_report=on_damage_report,
            storage_options=storage_options,
        )
    except (FileNotFoundError, IndexFormatError):
        if not rebuild:
            raise
    else:
        if want is not None and idx.compression is not want:
            raise InvalidArgumentError(
                f"{os.fspath(data_path)}: its index says compression "
                f"{idx.compression.value!r}, the caller says {want.value!r} (pass "
                "compression='auto' to take the file's own)"
            )
        return idx
    idx = maker.build(
        data_path,
        compression,
        on_damage=policy,
        on_damage_report=on_damage_report,
        # A rebuilt index keeps the columns of the one it replaces (a stale one, or one
        # that does not answer the policy): the views and samplers using them would
        # otherwise read every record again, at each open.
        columns=kept_columns(maker, data_path, storage_options) or None,
        storage_options=storage_options,
    )
    if where is not None:
        # The index file is a cache; the in-memory index is complete without it.
        # Remote stores are less forgiving to hide errors from: only "read-only" is
        # skipped. The cache itself is always local.
        skip: tuple[type[BaseException], ...] = (
            (ReadOnlyStorageError, PermissionError, NotImplementedError)
            if remote.is_url(idx.data_path) and where != "cache"
            else (OSError,)
        )
        with contextlib.suppress(*skip):
            idx.save(placement=where)
    return idx


def kept_columns(
    maker: Maker[Opened], data_path: PathLike, storage_options: StorageOptionsArg
) -> dict[str, str]:
    """Name -> kind of the index columns of the first index file of ``data_path`` that
    still parses, valid for the file or not (``{}`` if none has any)."""
    path = remote.local_path(os.fspath(data_path))
    places = [*index_candidates(path), *cache_entries(path)]
    for source in places:
        try:
            if remote.is_url(source):
                blob = remote.RemoteFile(source, storage_options=storage_options).read_all()
            else:
                with open(source, "rb") as f:
                    blob = f.read()
            old = maker.from_bytes(blob, path, source=source, storage_options=storage_options)
        except (OSError, IndexFormatError):
            continue  # missing or damaged: the next place may hold one
        if old.columns:
            return {name: column.kind for name, column in old.columns.items()}
    return {}


def save_index(
    data_path: str,
    own_options: StorageOptionsArg,
    to_bytes: Callable[[], bytes],
    *,
    index_path: PathLike | None,
    placement: str,
    storage_options: StorageOptionsArg,
) -> str:
    """:meth:`Index.save <tfrecord_engine.index.sidecar.Index.save>`: writes
    ``to_bytes()`` atomically where ``index_path`` or ``placement`` says and returns
    the path written. ``own_options``: the index's :attr:`storage_options`, the
    default for a URL ``index_path``."""
    where = normalize_placement(placement)
    if index_path is not None:
        target = os.fspath(index_path)
    elif where == "cache":
        target = cache_index_path(data_path, cache_identity(data_path, own_options))
    else:
        target = index_path_for(data_path, where)
    if remote.is_url(target):
        options = own_options if storage_options is None else storage_options
        remote.write_bytes(target, to_bytes(), options)
        return target
    folder = os.path.dirname(target)
    if folder:
        os.makedirs(folder, exist_ok=True)
    tmp = f"{target}.tmp-{os.getpid()}-{threading.get_ident()}"
    try:
        with open(tmp, "wb") as f:
            f.write(to_bytes())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        if isinstance(exc, OSError):
            raise naming_final(exc, tmp, target) from None
        raise
    if index_path is None and where == "cache":
        prune_cache(target, data_path)
    return target
