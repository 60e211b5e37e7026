"""The sidecar index of a TFRecord file: where every record starts and how long it is.

Where an index file lives (a hidden ``.tfeidx/`` sub-folder beside the data, the user's
index cache, or the old ``<data>.tfeidx``) is :mod:`.placement`'s business; its binary
format (versions 1 to 3, with flags for member starts and a content check) is
:mod:`.format`'s. The version says whether every record's data CRC was checked when
the index was built (:attr:`Index.data_verified`): 1 (a header walk) serves
``on_damage="raise"`` only, 2 (with a damage list) and 3 (clean) every policy they
answer (see :meth:`Index.for_policy`).

Member starts are found when an index is built by reading the file (:meth:`Index.build`,
and the index built on a first read): each member of a bgzip (BGZF) file, of ``cat a.gz
b.gz`` or of a file appended to with ``gzip.open(p, "ab")`` is a restart point that
costs 16 bytes of index and nothing to keep in memory.

A stale index (data file appended, truncated or replaced) is caught when it is opened
(:meth:`Index.validate`): the size, the sampled fingerprint and (local files) the
content check of :mod:`.identity` (every byte of a file up to 4 MiB, sampled records or
windows of a larger one) must match and, for uncompressed files, the last record must end exactly at
the end of the file. An index is stamped with the identity of the bytes it was built
from, read through the descriptor that read them.

Records span ``[offset, offset + HEADER_SIZE + length + FOOTER_SIZE)``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Hashable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

from ..errors import (
    DataLossError,
    IndexFormatError,
    InvalidArgumentError,
    ReadOnlyStorageError,
    StaleIndexError,
)
from ..records import framing
from ..records.compression import Compression, normalize_compression
from ..records.detect import HEAD_SIZE, CompressionArg, detect, noted, requested
from ..records.recovery import DamageCallback, DamagePolicy, DamageReport, normalize_policy
from ..storage import remote
from ..storage.filekind import require_regular
from ..storage.fileops import naming_final
from ..storage.options import StorageOptionsArg, normalize_storage_options
from ..storage.remote_identity import RemoteIdentity
from . import identity as ident
from .columns import ColumnsArg, IndexColumn, normalize_columns, read_columns
from .damage import reporter, tolerant_scan
from .format import (
    CONTENT_CHECK_VERSION_OFFSET,
    DAMAGE_FORMAT_VERSION,
    FORMAT_VERSION,
    MEMBER_BIT,
    MEMBER_STARTS_VERSION_OFFSET,
    VERIFIED_FORMAT_VERSION,
    Fields,
    decode,
    encode,
)
from .identity import ContentCheck, DataBytes, opened
from .placement import (
    INDEX_SUFFIX,
    IndexPlacement,
    cache_entries,
    cache_identity,
    cache_index_path,
    index_candidates,
    index_path_for,
    normalize_placement,
    prune_cache,
)
from .scan import (
    FileStat,
    as_u64,
    file_stat,
    fingerprint_of,
    fingerprint_ranges,
    refuse_larger,
    walk_headers,
    walk_stream,
)
from .text import parse_text, text_of

__all__ = [
    "CONTENT_CHECK_VERSION_OFFSET",
    "DAMAGE_FORMAT_VERSION",
    "FORMAT_VERSION",
    "INDEX_SUFFIX",
    "MEMBER_STARTS_VERSION_OFFSET",
    "VERIFIED_FORMAT_VERSION",
    "Index",
    "index_path_for",
]

#: Times :meth:`Index.build` reads a file that keeps changing under it before it gives up.
_BUILD_TRIES = 3

U64Array = npt.NDArray[np.uint64]
PathLike = str | os.PathLike[str]


@contextlib.contextmanager
def _noting_errors(head: bytes, kind: Compression, *, auto: bool) -> Iterator[None]:
    """Adds what the first bytes look like to a failure at the first record (see
    :func:`~tfrecord_engine.records.detect.noted`)."""
    try:
        yield
    except DataLossError as exc:
        better = noted(exc, head, kind, auto=auto)
        if better is None:
            raise
        raise better from exc


def _useful_members(
    members: Sequence[tuple[int, int]], offsets: U64Array, lengths: U64Array
) -> U64Array:
    """The member starts worth keeping as restart points: those before the end of the
    last record (a trailing empty member, as bgzip's end-of-file block, starts none),
    the last of several at one decompressed offset (empty members in between)."""
    table = np.array(members, dtype=np.uint64).reshape(-1, 2)
    if len(offsets) == 0 or len(table) == 0:
        return np.zeros((0, 2), dtype=np.uint64)
    end = offsets[-1] + lengths[-1] + np.uint64(framing.FRAME_OVERHEAD)
    table = as_u64(table[table[:, 1] < end])
    if len(table) == 0:
        return table
    last = np.append(table[1:, 1] != table[:-1, 1], True)
    return as_u64(table[last])


def _names(path: str, stat: FileStat) -> bool:
    """Whether ``path`` still names the file of ``stat``, unchanged."""
    try:
        return file_stat(os.stat(path)) == stat
    except OSError:
        return False


class Index:
    """Record offsets and lengths of one TFRecord file, plus what identifies the file.

    Attributes:
        data_path: the data file this index describes.
        compression: the data file's compression.
        data_size: the data file's size in bytes when indexed.
        fingerprint: :func:`~.scan.fingerprint` of the data file when indexed.
        content: the data file's :class:`~.identity.ContentCheck` when indexed (the
            CRC of every byte of a file up to 4 MiB, of sampled records or windows of a
            larger one), or ``None`` for an index loaded from an older format.
        offsets: ``uint64[n]`` start of each record (decompressed offset if compressed).
        lengths: ``uint64[n]`` data length of each record.
        restarts: ``uint64[m, 2]`` restart points ``(compressed, decompressed)``
            offsets, ascending: where inflating can begin (full flushes written by our
            writer, and each member start of a multi-member GZIP file); empty for
            uncompressed files and single-stream files we did not write.
        member_starts: ``bool[m]``, true for the restart points that start a GZIP
            member (or a ZLIB stream): a fresh inflater begins there, where a full
            flush continues the stream with a raw inflater.
        damage: the damaged regions of the file, as :class:`~tfrecord_engine.DamageReport`
            (empty for a clean file). Non-empty only for an index built under
            ``on_damage="stop"``/``"skip"``; such an index holds only intact records.
        damage_policy: the policy the index was built under (``"raise"`` unless given).
        data_verified: every record's data CRC was checked when the index was built (by
            the writer that computed them, or by a ``"stop"``/``"skip"`` scan); always
            true for an index with damage, which only such a scan produces. A clean
            index that is not data-verified (a header walk) serves ``"raise"`` only.
        storage_options: for a URL, the fsspec keyword arguments it is read with (see
            :mod:`tfrecord_engine.storage.options`; ``None``: fsspec's configuration
            only), used again by :meth:`validate`, :meth:`with_columns`, :meth:`save` and
            by a dataset opened over this index; pickled with it, never shown.

    Example:
        >>> import tempfile, os, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
        >>> with tfe.TFRecordWriter(path) as w:
        ...     w.write_many([b"ab", b"cde"])
        2
        >>> idx = tfe.Index.build(path)
        >>> len(idx), idx.offsets.tolist(), idx.lengths.tolist()
        (2, [0, 18], [2, 3])
    """

    __slots__ = (
        "columns",
        "compression",
        "content",
        "damage",
        "damage_policy",
        "data_path",
        "data_size",
        "data_verified",
        "file_stat",
        "fingerprint",
        "lengths",
        "member_starts",
        "offsets",
        "remote_identity",
        "restarts",
        "storage_options",
    )

    def __init__(
        self,
        data_path: PathLike,
        offsets: object,
        lengths: object,
        *,
        data_size: int,
        fingerprint: int,
        compression: str | Compression | None = None,
        restarts: object = None,
        damage: Sequence[DamageReport] = (),
        damage_policy: DamagePolicy = "raise",
        data_verified: bool = False,
        member_starts: object = None,
        content: ContentCheck | None = None,
        columns: Sequence[IndexColumn] = (),
        storage_options: StorageOptionsArg = None,
    ) -> None:
        self.data_path = os.fspath(data_path)
        self.storage_options = normalize_storage_options(storage_options)
        self.damage = tuple(damage)
        self.damage_policy = normalize_policy(damage_policy)
        if self.damage and self.damage_policy == "raise":
            raise InvalidArgumentError(
                'an index with damage must say how it was built: damage_policy="stop" or "skip"'
            )
        # A damage list comes only from a scan that checks every data CRC (and the
        # sidecar format cannot say otherwise).
        self.data_verified = bool(data_verified) or bool(self.damage)
        self.offsets = as_u64(offsets)
        self.lengths = as_u64(lengths)
        self.data_size = int(data_size)
        self.fingerprint = int(fingerprint)
        self.content = content
        #: The :data:`~.scan.FileStat` of the local data file as it was when this index
        #: was last checked against it (:meth:`validate`); ``None`` for URLs and for an
        #: index not yet checked. A reader compares it with the file it opens.
        self.file_stat: FileStat | None = None
        #: The version (ETag / Last-Modified) of a URL's object that this index is
        #: read against, pinned when the file is first opened for reading (see
        #: ``data.dataset.open_records``) and handed to decode workers with the index:
        #: an answer from another version raises ``RemoteChangedError``. ``None``: a
        #: local file, not opened yet, or a backend that names no version.
        self.remote_identity: RemoteIdentity | None = None
        self.compression = normalize_compression(compression)
        self.restarts = as_u64(np.zeros((0, 2)) if restarts is None else restarts).reshape(-1, 2)
        m = len(self.restarts)
        self.member_starts = np.ascontiguousarray(
            np.zeros(m, dtype=np.bool_) if member_starts is None else member_starts,
            dtype=np.bool_,
        ).reshape(-1)
        if len(self.member_starts) != m:
            raise InvalidArgumentError(
                f"member_starts must have one flag per restart point ({m}), got "
                f"{len(self.member_starts)}"
            )
        if m and bool(np.any(self.restarts[:, 0] >= MEMBER_BIT)):
            raise InvalidArgumentError("a restart point's compressed offset must be < 2**63")
        if self.offsets.shape != self.lengths.shape or self.offsets.ndim != 1:
            raise InvalidArgumentError(
                f"offsets and lengths must be 1-D arrays of one length, got "
                f"{self.offsets.shape} and {self.lengths.shape}"
            )
        #: The index columns (name -> :class:`~.columns.IndexColumn`): scalar features
        #: of every record, kept in the index (see :meth:`with_columns`).
        self.columns = {c.name: c for c in columns}
        if any(len(c) != len(self.offsets) for c in columns) or len(self.columns) != len(columns):
            raise InvalidArgumentError(
                f"index columns must be uniquely named, one value per record "
                f"({len(self.offsets)}), got {[(c.name, len(c)) for c in columns]}"
            )

    def __len__(self) -> int:
        return int(self.offsets.shape[0])

    def __repr__(self) -> str:
        damage = f", {len(self.damage)} damaged regions" if self.damage else ""
        starts = int(np.count_nonzero(self.member_starts))
        members = f" ({starts} at member starts)" if starts else ""
        columns = f", columns={list(self.columns)}" if self.columns else ""
        return (
            f"Index({self.data_path!r}, {len(self)} records, "
            f"compression={self.compression.value!r}, {len(self.restarts)} restart points"
            f"{members}{damage}{columns})"
        )

    @property
    def stream_size(self) -> int:
        """Size of the (decompressed) framed stream the records cover."""
        if len(self) == 0:
            return 0
        end = self.offsets[-1] + self.lengths[-1]
        return int(end) + framing.HEADER_SIZE + framing.FOOTER_SIZE

    # ---- building ---------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        path: PathLike,
        compression: CompressionArg = "auto",
        *,
        on_damage: DamagePolicy = "raise",
        on_damage_report: DamageCallback | None = None,
        max_record_bytes: int | None = None,
        columns: ColumnsArg | None = None,
        storage_options: StorageOptionsArg = None,
    ) -> Index:
        """Indexes an existing file.

        ``compression`` is ``"auto"`` by default: recognised from the file's first bytes
        (see :mod:`tfrecord_engine.records.detect`); an explicit ``None``/``""``,
        ``"GZIP"`` or ``"ZLIB"`` wins, and a failure at the first record then says what
        the bytes look like.

        Under ``"raise"`` uncompressed files are indexed by walking record headers
        through ``mmap`` (12 bytes per record; payloads are never read): every length
        CRC is checked and every length is checked against the bytes that remain; data
        CRCs are checked when records are read, so the index is not
        :attr:`data_verified` (its sidecar is version 1 and serves ``"raise"`` only).
        GZIP/ZLIB files are decompressed once (data CRCs unchecked likewise); the index
        keeps the start of every member after the first as a restart point (bgzip,
        concatenated and appended GZIP files), where random access begins inflating. A
        single deflate stream has none: random access to a large one scans it once for
        in-memory restart points (write with ``TFRecordWriter(..., index=True)`` to
        save full-flush ones with the data).

        Under ``"stop"``/``"skip"`` the file is read once as
        :func:`~tfrecord_engine.read_records` reads it under that policy (every data CRC
        checked, so the index is :attr:`data_verified`): the index holds exactly the
        records that reader returns, and :attr:`damage` lists what it reported (each
        report also goes to ``on_damage_report``, or is emitted as a
        :class:`~tfrecord_engine.DamageWarning`).

        A URL (see :mod:`tfrecord_engine.storage.remote`) is read once from start to end in
        large read-ahead blocks (hopping from header to header would cost a request per
        record); its length CRCs are checked the same way.

        ``max_record_bytes`` refuses records announcing more data bytes than that, as
        damage (as :func:`~tfrecord_engine.read_records` does): under ``"skip"`` they are
        left out of the index and reported.

        ``storage_options`` (a URL's fsspec keyword arguments, see
        :mod:`tfrecord_engine.storage.options`) reach the store and stay with the index
        (:attr:`storage_options`).

        ``columns`` (names, or name -> ``"int64"``/``"bytes"``) also keeps those scalar
        features of every record in the index (:attr:`columns`, see
        :mod:`~tfrecord_engine.index.columns`): every record is then read once more, its
        data CRC checked (so the index is :attr:`data_verified`).

        Raises:
            CorruptedRecordError: a length CRC does not match (``"raise"`` only).
            TruncatedRecordError: the file ends inside a record (``"raise"`` only).
            RecordTooLargeError: a record exceeds ``max_record_bytes`` (``"raise"``
                only).
            InvalidArgumentError: ``path`` is a pipe, FIFO or device (no random access;
                read it with :func:`~tfrecord_engine.read_records`).

        Example:
            >>> import tempfile, os, tfrecord_engine as tfe
            >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
            >>> with tfe.TFRecordWriter(path) as w:
            ...     w.write_many([b"ab", b"cde", b"f"])
            3
            >>> with open(path, "r+b") as f:  # damage the second record's data
            ...     _ = f.seek(18 + 12)
            ...     _ = f.write(b"X")
            >>> reports = []
            >>> idx = tfe.Index.build(path, on_damage="skip", on_damage_report=reports.append)
            >>> idx.offsets.tolist(), [(d.record_index, d.offset) for d in idx.damage]
            ([0, 37], [(1, 18)])
            >>> reports == list(idx.damage)
            True
        """
        path = remote.local_path(os.fspath(path))
        want = requested(compression)
        policy = normalize_policy(on_damage)
        spec = normalize_columns(columns)
        if not remote.is_url(path):
            require_regular(path, "indexing")
        for attempt in range(1, _BUILD_TRIES + 1):
            damage: list[DamageReport] = []
            members: list[tuple[int, int]] = []
            found_columns: tuple[IndexColumn, ...] = ()
            with opened(path, storage_options) as data:
                offsets, lengths, kind, by_path = cls._scan(
                    data, want, policy, max_record_bytes, members=members, damage=damage
                )
                if spec:
                    found_columns, again = read_columns(
                        data,
                        kind,
                        offsets,
                        lengths,
                        spec,
                        policy=policy,
                        max_record_bytes=max_record_bytes,
                    )
                    by_path = by_path or again
                # A scan that opened the path again read the file it names: the one
                # read here, or the identity below would describe other bytes.
                same = not by_path or data.stat is None or _names(path, data.stat)
                found = (
                    ident.identify(data, kind is Compression.NONE, offsets, lengths)
                    if same
                    else None
                )
            if found is not None:
                break
            if attempt == _BUILD_TRIES:
                raise StaleIndexError(
                    f"{path}: the file changed while it was being indexed, {attempt} times "
                    "in a row: index it once it is complete (e.g. `tfr index` after its "
                    "writer closed it)"
                )
        assert found is not None  # (the loop ends at a break or a raise)
        restarts = _useful_members(members, offsets, lengths)
        idx = cls(
            path,
            offsets,
            lengths,
            data_size=found.size,
            fingerprint=found.fingerprint,
            compression=kind,
            restarts=restarts,
            member_starts=np.ones(len(restarts), dtype=np.bool_),
            damage=damage,
            damage_policy=policy,
            # (Reading the columns checked every data CRC.)
            data_verified=policy != "raise" or bool(spec),
            content=found.content,
            columns=found_columns,
            storage_options=storage_options,
        )
        idx.report_damage(on_damage_report)
        return idx

    @staticmethod
    def _scan(
        data: DataBytes,
        want: Compression | None,
        policy: DamagePolicy,
        max_record_bytes: int | None,
        *,
        members: list[tuple[int, int]],
        damage: list[DamageReport],
    ) -> tuple[U64Array, U64Array, Compression, bool]:
        """:meth:`build`'s scan of ``data``: ``(offsets, lengths, compression, whether
        the scan opened the path again)``; damage goes to ``damage``."""
        path = data.path
        size = data.size
        head = data.ranges([(0, min(size, HEAD_SIZE))])[0] if size else b""
        kind = detect(head, path) if want is None else want
        with _noting_errors(head, kind, auto=want is None):
            if policy != "raise":
                offsets, lengths, found = tolerant_scan(
                    path,
                    kind,
                    policy,
                    max_record_bytes,
                    members,
                    auto=want is None,
                    storage_options=data.storage_options,
                )
                damage += found
            elif kind is Compression.NONE and data.stat is not None:
                offsets, lengths = walk_headers(data.buf, path)
                if max_record_bytes is not None:
                    refuse_larger(data.buf, offsets, lengths, path, max_record_bytes)
                return offsets, lengths, kind, False
            else:
                # A URL is read once in large blocks: hopping from header to header
                # would cost a request per record.
                offsets, lengths = walk_stream(
                    path, kind, max_record_bytes, members, data.storage_options
                )
        return offsets, lengths, kind, True

    def report_damage(self, on_damage_report: DamageCallback | None = None) -> None:
        """Passes each of :attr:`damage` to ``on_damage_report`` (default: warnings)."""
        report = reporter(on_damage_report)
        for d in self.damage:
            report(d)

    def for_policy(self, on_damage: DamagePolicy) -> Index | None:
        """This index as ``on_damage`` sees the file, or ``None`` if it cannot tell.

        A clean :attr:`data_verified` index serves every policy. A clean index built from
        the headers only (under ``"raise"``) serves only ``"raise"``: a record whose data
        CRC fails would be counted, and ``"stop"``/``"skip"`` promise that every record
        counted is delivered. An index with damage serves the policy it was built under;
        a ``"skip"`` index also serves ``"stop"`` (its records before the first damage).
        ``"raise"`` is never served from a damaged index, nor ``"skip"`` from a
        ``"stop"`` index (which does not list the records after the damage).
        """
        policy = normalize_policy(on_damage)
        if not self.damage:
            return self if self.data_verified or policy == "raise" else None
        if policy == self.damage_policy:
            return self
        if policy == "raise" or self.damage_policy == "stop":
            return None
        first = self.damage[0]
        n = first.record_index
        # Exactly what a "stop" reader reports: the rest of a plain file, or an unknown
        # amount of a stream.
        rest = self.data_size - first.offset if self.compression is Compression.NONE else None
        return Index(
            self.data_path,
            self.offsets[:n],
            self.lengths[:n],
            data_size=self.data_size,
            fingerprint=self.fingerprint,
            compression=self.compression,
            restarts=self.restarts,
            member_starts=self.member_starts,
            damage=[DamageReport(first.path, n, first.offset, rest, first.reason)],
            damage_policy="stop",
            data_verified=self.data_verified,
            content=self.content,
            columns=[c.head(n) for c in self.columns.values()],
            storage_options=self.storage_options,
        )

    # ---- persistence -------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """Serializes the index in the binary sidecar format (see :mod:`.format`).

        The version is 2 with damage, else 3 if :attr:`data_verified`, else 1; 16 more
        when a restart point is a member start, 32 more with a :attr:`content` check.
        """
        return encode(self._fields())

    def _fields(self) -> Fields:
        return Fields(
            compression=self.compression,
            data_size=self.data_size,
            fingerprint=self.fingerprint,
            offsets=self.offsets,
            lengths=self.lengths,
            restarts=self.restarts,
            member_starts=self.member_starts,
            damage=self.damage,
            damage_policy=self.damage_policy,
            data_verified=self.data_verified,
            content=self.content,
            columns=tuple(self.columns.values()),
        )

    def with_columns(self, columns: ColumnsArg) -> Index:
        """This index with ``columns`` added (or replaced), read from its file.

        The file is checked against the index first (:meth:`validate`), then every
        record is read once, its data CRC checked, and the columns taken from it; the
        rest of the index (restart points, damage list) is kept. Save the result to keep
        them (:meth:`save`).

        Args:
            columns: feature names, or name -> ``"int64"``/``"bytes"`` (see
                :mod:`~tfrecord_engine.index.columns`).

        Raises:
            StaleIndexError: the file changed since it was indexed.
            CorruptedRecordError: a record's data CRC fails.

        Example:
            >>> import tempfile, os, tfrecord_engine as tfe
            >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
            >>> with tfe.TFRecordWriter(path) as w:
            ...     w.write_many(tfe.encode_example({"label": [i % 2]}) for i in range(3))
            3
            >>> idx = tfe.Index.build(path).with_columns(["label"])
            >>> idx.columns["label"].values.tolist()
            [0, 1, 0]
        """
        spec = normalize_columns(columns)
        self.validate()
        with opened(self.data_path, self.storage_options) as data:
            added, _ = read_columns(
                data, self.compression, self.offsets, self.lengths, spec, policy=self.damage_policy
            )
        kept = [c for name, c in self.columns.items() if name not in {n for n, _ in spec}]
        fields = self._fields()._replace(columns=(*kept, *added), data_verified=True)
        idx = Index._of(self.data_path, fields, self.storage_options)
        idx.file_stat = self.file_stat
        idx.remote_identity = self.remote_identity
        return idx

    @classmethod
    def _of(cls, data_path: str, f: Fields, storage_options: StorageOptionsArg = None) -> Index:
        return cls(
            data_path,
            f.offsets,
            f.lengths,
            data_size=f.data_size,
            fingerprint=f.fingerprint,
            compression=f.compression,
            restarts=f.restarts,
            member_starts=f.member_starts,
            damage=f.damage,
            damage_policy=f.damage_policy,
            data_verified=f.data_verified,
            content=f.content,
            columns=f.columns,
            storage_options=storage_options,
        )

    def save(
        self,
        index_path: PathLike | None = None,
        *,
        placement: str = "hidden",
        storage_options: StorageOptionsArg = None,
    ) -> str:
        """Writes the index file atomically and returns the path written.

        Args:
            index_path: where to write; when given, ``placement`` is ignored.
            placement: ``"hidden"`` (default: ``<folder>/.tfeidx/<file>.tfeidx``, the
                sub-folder is created), ``"cache"`` (the user's index cache, replacing
                the file's older entries) or ``"beside"`` (the old ``<file>.tfeidx``,
                which shard globs like ``train-*`` match). See :mod:`.placement`.
            storage_options: fsspec keyword arguments for a URL ``index_path`` on
                another store; default: the index's own (:attr:`storage_options`).

        A URL is written with one put, so the object appears whole or not at all.

        Raises:
            ReadOnlyStorageError: an HTTP(S) URL.
        """
        where = normalize_placement(placement)
        if index_path is not None:
            target = os.fspath(index_path)
        elif where == "cache":
            target = cache_index_path(
                self.data_path, cache_identity(self.data_path, self.storage_options)
            )
        else:
            target = index_path_for(self.data_path, where)
        if remote.is_url(target):
            options = self.storage_options if storage_options is None else storage_options
            remote.write_bytes(target, self.to_bytes(), options)
            return target
        folder = os.path.dirname(target)
        if folder:
            os.makedirs(folder, exist_ok=True)
        tmp = f"{target}.tmp-{os.getpid()}-{threading.get_ident()}"
        try:
            with open(tmp, "wb") as f:
                f.write(self.to_bytes())
            os.replace(tmp, target)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            if isinstance(exc, OSError):
                raise naming_final(exc, tmp, target) from None
            raise
        if index_path is None and where == "cache":
            prune_cache(target, self.data_path)
        return target

    @classmethod
    def from_bytes(
        cls,
        blob: bytes,
        data_path: PathLike,
        *,
        source: str = "<bytes>",
        storage_options: StorageOptionsArg = None,
    ) -> Index:
        """Parses a binary index; checks its own checksum, not the data file.

        ``storage_options``: how the data file (a URL) is reached, kept with the index.

        Raises:
            IndexFormatError: wrong magic, unknown version, bad size or checksum.
        """
        return cls._of(os.fspath(data_path), decode(blob, data_path, source), storage_options)

    @classmethod
    def load(
        cls,
        data_path: PathLike,
        index_path: PathLike | None = None,
        *,
        on_damage: DamagePolicy = "raise",
        on_damage_report: DamageCallback | None = None,
        storage_options: StorageOptionsArg = None,
    ) -> Index:
        """Loads an index and checks that it still describes ``data_path``.

        Without ``index_path`` the index is looked for in the hidden sub-folder beside
        the data (``.tfeidx/<file>.tfeidx``, written with it), then at the old
        ``<file>.tfeidx``, then in the user's index cache (see :mod:`.placement`); the
        first one that is valid and answers ``on_damage`` is used.

        A sidecar that lists damage (built under ``"stop"``/``"skip"``) is served only
        to a policy it answers (see :meth:`for_policy`), and its damage is reported
        again on every load, as a reader would report it. A clean sidecar built without
        checking data CRCs (version 1: a header walk under ``"raise"``) serves only
        ``"raise"``.

        ``storage_options`` (fsspec keyword arguments, see
        :mod:`tfrecord_engine.storage.options`) reach the data file and a remote index
        file, and stay with the index.

        Raises:
            FileNotFoundError: no index file (at any of the places above).
            IndexFormatError: the index file (the first found, when several are and
                none serves) is damaged or foreign, or does not answer
                ``on_damage``: it lists damage that ``on_damage`` does not accept
                (``"raise"``; ``"skip"`` from a sidecar built under ``"stop"``), or its
                data CRCs were never checked and ``on_damage`` is ``"stop"``/``"skip"``.
            StaleIndexError: the data file changed since it was indexed.
            InvalidArgumentError: ``data_path`` is a pipe, FIFO or device.
        """
        policy = normalize_policy(on_damage)
        data_path = remote.local_path(os.fspath(data_path))
        if not remote.is_url(data_path):
            # Checked first: validating would open the data file, and a FIFO's open blocks.
            require_regular(data_path, "loading an index")
        if index_path is not None:
            return cls._load_from(
                data_path, os.fspath(index_path), policy, on_damage_report, None, storage_options
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
                return cls._load_from(
                    data_path, source, policy, on_damage_report, identity, storage_options
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

    @classmethod
    def _load_from(  # noqa: PLR0917 - load()'s context, two call sites
        cls,
        data_path: str,
        source: str,
        policy: DamagePolicy,
        on_damage_report: DamageCallback | None,
        identity: tuple[int, int] | None,
        storage_options: StorageOptionsArg = None,
    ) -> Index:
        if remote.is_url(source):
            blob = remote.RemoteFile(source, storage_options=storage_options).read_all()
        else:
            with open(source, "rb") as f:
                blob = f.read()
        idx = cls.from_bytes(blob, data_path, source=source, storage_options=storage_options)
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

    @classmethod
    def open(
        cls,
        data_path: PathLike,
        compression: CompressionArg = "auto",
        *,
        on_damage: DamagePolicy = "raise",
        on_damage_report: DamageCallback | None = None,
        rebuild: bool = True,
        save: bool | str = True,
        storage_options: StorageOptionsArg = None,
    ) -> Index:
        """Loads the index of ``data_path`` (see :meth:`load`), or builds it when missing
        or stale.

        Args:
            compression: the data file's compression: ``"auto"`` (default) takes a
                loaded index's and recognises it from the bytes when building; an
                explicit value must match a loaded index's
                (:class:`InvalidArgumentError` otherwise).
            on_damage, on_damage_report: the damage policy, as in :meth:`build`. A
                sidecar is used when it answers the policy (see :meth:`load`); otherwise
                the file is indexed again under the policy and the sidecar replaced. So
                the first ``"stop"``/``"skip"`` open after a ``"raise"`` one (whose
                header walk left data CRCs unchecked) reads the file once, checking
                every data CRC, and saves a sidecar (version 3; version 2 if it found
                damage) that later opens use without indexing again, as far as
                :meth:`for_policy` allows. Either way the damage is reported on every
                open.
            rebuild: build a new index when the sidecar is missing, damaged, stale or
                does not answer ``on_damage``; with ``False`` those raise instead.
            save: where to keep a newly built index (with its damage list, if any):
                ``True`` or ``"cache"`` (default) in the user's index cache, never in
                the data's folder; ``"hidden"`` in the ``.tfeidx/`` sub-folder beside
                the data; ``"beside"`` at the old ``<file>.tfeidx``; ``False``
                nowhere. Skipped when writing fails (a read-only folder or cache, a
                full disk): the index file is only a cache, and the index is complete
                in memory. For a URL's ``"hidden"``/``"beside"`` index, skipped only
                when the storage is read-only (HTTP(S), or a ``PermissionError``/
                ``NotImplementedError`` from the store); any other error of the store
                is raised.
            storage_options: for a URL, fsspec keyword arguments for its filesystem
                (see :mod:`tfrecord_engine.storage.options`), used to load, build and
                save, and kept with the index.

        Raises:
            InvalidArgumentError: ``data_path`` is a pipe, FIFO or device: random access
                needs a regular file.

        Example:
            >>> import tempfile, os, tfrecord_engine as tfe
            >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
            >>> with tfe.TFRecordWriter(path) as w:
            ...     w.write_many([b"ab", b"cde"])
            2
            >>> with open(path, "ab") as f:  # a torn tail: half of a third record
            ...     _ = f.write(tfe.records.framing.frame(b"gh")[:9])
            >>> reports = []
            >>> len(tfe.Index.open(path, on_damage="stop", on_damage_report=reports.append))
            2
            >>> len(tfe.Index.open(path, on_damage="stop", on_damage_report=reports.append))
            2
            >>> [(r.record_index, r.offset, r.bytes_skipped) for r in reports]
            [(2, 37, 9), (2, 37, 9)]
        """
        want = requested(compression)
        policy = normalize_policy(on_damage)
        where: IndexPlacement | None = (
            ("cache" if save else None) if isinstance(save, bool) else normalize_placement(save)
        )
        try:
            idx = cls.load(
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
        idx = cls.build(
            data_path,
            compression,
            on_damage=policy,
            on_damage_report=on_damage_report,
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

    def validate(self, identity: tuple[int, int] | None = None) -> None:
        """Checks that the data file is still the one this index describes.

        The size, the sampled fingerprint and, for a local file, the content check
        (:attr:`content`: every byte of a file up to 4 MiB, sampled records or windows
        of a larger one; an index of an older format without one: the headers of
        sampled records) must match, and an uncompressed file's records must end at
        its end. A local file is
        read through one descriptor, whose ``fstat`` becomes :attr:`file_stat`; a check
        that passed is remembered for that exact ``fstat`` (see :mod:`.identity`), so
        checking an unchanged file again costs one ``fstat``.

        Args:
            identity: the file's ``(size, fingerprint)`` when the caller has them
                already (saves a URL's requests); read from the file otherwise.

        Raises:
            StaleIndexError: size, fingerprint, content or record layout do not match.
        """
        with opened(self.data_path, self.storage_options) as data:
            stat = data.stat
            key = None if stat is None else self._check_key(stat)
            if key is not None and ident.checked_before(key):
                self.file_stat = stat
                return
            started = ident.clock()
            self._check(data, identity)
        self.file_stat = stat
        if key is not None and stat is not None:
            ident.remember_checked(key, stat, started)

    def _check_key(self, stat: FileStat) -> Hashable:
        """What a remembered check of this index against the file of ``stat`` is
        filed under: everything :meth:`validate` compares."""
        end = max([self.stream_size, *(d.offset + (d.bytes_skipped or 0) for d in self.damage)])
        return (
            stat,
            self.data_path,
            self.compression,
            self.data_size,
            self.fingerprint,
            self.content,
            len(self),
            end,
        )

    def _check(self, data: DataBytes, identity: tuple[int, int] | None) -> None:
        """:meth:`validate`'s comparisons, reading ``data``."""
        size = data.size if identity is None else identity[0]
        if size != self.data_size:
            raise StaleIndexError(
                f"{self.data_path}: index is stale: the file has {size} bytes, the "
                f"index was built for {self.data_size} (appended or truncated?)"
            )
        fp = identity[1] if identity is not None else None
        if fp is None:
            fp = fingerprint_of(size, data.ranges(fingerprint_ranges(size)))
        if fp != self.fingerprint:
            raise StaleIndexError(
                f"{self.data_path}: index is stale: the file's content fingerprint "
                "changed (replaced?)"
            )
        # Records, and the damaged regions between and after them, cover the file.
        end = max([self.stream_size, *(d.offset + (d.bytes_skipped or 0) for d in self.damage)])
        plain = self.compression is Compression.NONE
        if plain and end != size:
            raise StaleIndexError(
                f"{self.data_path}: index is foreign: its records end at byte "
                f"{end}, the file has {size} bytes"
            )
        if data.stat is None:
            # A URL: stores replace objects whole, and a changed object is caught while
            # in use (RemoteChangedError); reading it all, or hundreds of ranges, on
            # every open would cost more than the open itself.
            return
        check = self.content
        if check is not None:
            crc = ident.content_crc(data, check.kind, check.samples, self.offsets, self.lengths)
            if crc != check.crc:
                what = "every byte" if check.kind == ident.KIND_FULL else "sampled bytes"
                raise StaleIndexError(
                    f"{self.data_path}: index is stale: the file has the indexed size "
                    f"and fingerprint but its content check ({what}) fails: the file "
                    "was replaced or rewritten since it was indexed; index it again "
                    "(Index.open and datasets do so)"
                )
        elif plain and not ident.header_samples_match(data, self.offsets, self.lengths):
            raise StaleIndexError(
                f"{self.data_path}: index is stale: the record headers at sampled "
                "indexed offsets do not announce the indexed lengths (the file was "
                "replaced by one of the same size and fingerprint?); index it again"
            )

    # ---- DALI / tfrecord text indexes --------------------------------------------------

    def to_text(self) -> str:
        """Returns the ``"<offset> <framed size>\\n"`` text index of DALI and ``tfrecord``.

        Raises:
            InvalidArgumentError: a compressed file (those tools index uncompressed files
                only) or a file with no records (DALI rejects an empty index).
        """
        return text_of(self.data_path, self.compression, self.offsets, self.lengths)

    def save_text(self, text_path: PathLike, *, storage_options: StorageOptionsArg = None) -> None:
        """Writes :meth:`to_text` to ``text_path`` (e.g. ``<data>.idx`` for DALI).

        The text is made first: a file that has none (compressed, no records) leaves
        no file behind, not an empty one. A URL is written with ``storage_options``
        (default: the index's own).
        """
        text = self.to_text()
        if remote.is_url(os.fspath(text_path)):
            options = self.storage_options if storage_options is None else storage_options
            remote.write_bytes(os.fspath(text_path), text.encode("ascii"), options)
            return
        with open(text_path, "w", encoding="ascii") as f:
            f.write(text)

    @classmethod
    def from_text(cls, text_path: PathLike, data_path: PathLike) -> Index:
        """Imports a DALI / ``tfrecord`` text index and checks it against the data file.

        Every entry must be a framed record that starts where the previous one ends,
        whose header announces the same size and has a valid length CRC, and the last
        must end at the end of the file.

        Raises:
            IndexFormatError: the text is not ``offset size`` pairs.
            StaleIndexError: the entries do not describe the data file.
        """
        data_path = os.fspath(data_path)
        offsets, lengths, found = parse_text(os.fspath(text_path), data_path)
        return cls(
            data_path,
            offsets,
            lengths,
            data_size=found.size,
            fingerprint=found.fingerprint,
            content=found.content,
        )
