"""The sidecar index of a TFRecord file: where every record starts and how long it is.

Where an index file lives (a hidden ``.tfeidx/`` sub-folder beside the data, the user's
index cache, or the old ``<data>.tfeidx``) is :mod:`.placement`'s business; its binary
format (versions 1 to 3, with flags for member starts and a content check) is
:mod:`.format`'s. The version says whether every record's data CRC was checked when
the index was built (:attr:`Index.data_verified`): 1 (a header walk) serves
``on_damage="raise"`` only, 2 (with a damage list) and 3 (clean) every policy they
answer (see :meth:`Index.for_policy`).

This module holds the :class:`Index` class and its promises; the work is done in
:mod:`.building` (scanning a file into an index, with its GZIP member starts as restart
points), :mod:`.checking` (is an index still true of its file: :meth:`Index.validate`;
the arrays it is made of) and :mod:`.opening` (finding, loading, building and saving the
index of a path: :meth:`Index.load`, :meth:`Index.open`, :meth:`Index.save`).

Records span ``[offset, offset + HEADER_SIZE + length + FOOTER_SIZE)``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..errors import InvalidArgumentError
from ..records import framing
from ..records.compression import Compression, normalize_compression
from ..records.detect import CompressionArg
from ..records.recovery import DamageCallback, DamagePolicy, DamageReport, normalize_policy
from ..storage import remote
from ..storage.options import StorageOptionsArg, normalize_storage_options
from ..storage.remote_identity import RemoteIdentity
from . import checking
from .building import add_columns, build_fields
from .columns import ColumnsArg, IndexColumn, normalize_columns
from .damage import reporter
from .format import (
    CONTENT_CHECK_VERSION_OFFSET,
    DAMAGE_FORMAT_VERSION,
    FORMAT_VERSION,
    MEMBER_STARTS_VERSION_OFFSET,
    VERIFIED_FORMAT_VERSION,
    Fields,
    decode,
    encode,
)
from .identity import ContentCheck
from .opening import load_index, open_index, save_index
from .placement import INDEX_SUFFIX, index_path_for
from .scan import FileStat, as_u64
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

PathLike = str | os.PathLike[str]


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
        self.restarts, self.member_starts = checking.restart_table(restarts, member_starts)
        checking.require_records(self.offsets, self.lengths, columns)
        #: The index columns (name -> :class:`~.columns.IndexColumn`): scalar features
        #: of every record, kept in the index (see :meth:`with_columns`).
        self.columns = {c.name: c for c in columns}

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
        fields = build_fields(
            path,
            compression,
            on_damage=on_damage,
            max_record_bytes=max_record_bytes,
            columns=columns,
            storage_options=storage_options,
        )
        idx = cls._of(path, fields, storage_options)
        idx.report_damage(on_damage_report)
        return idx

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
        return Index._of(self.data_path, checking.stopped(self._fields()), self.storage_options)

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
        fields = add_columns(self._fields(), self.data_path, spec, self.storage_options)
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
        return save_index(
            self.data_path,
            self.storage_options,
            self.to_bytes,
            index_path=index_path,
            placement=placement,
            storage_options=storage_options,
        )

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
        return load_index(
            cls,
            data_path,
            index_path,
            on_damage=on_damage,
            on_damage_report=on_damage_report,
            storage_options=storage_options,
        )

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
                does not answer ``on_damage``; with ``False`` those raise instead. A
                rebuilt index keeps the :attr:`columns` of the index file it replaces
                (read again from the file as it now is).
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
        return open_index(
            cls,
            data_path,
            compression,
            on_damage=on_damage,
            on_damage_report=on_damage_report,
            rebuild=rebuild,
            save=save,
            storage_options=storage_options,
        )

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
        self.file_stat = checking.validate(self, identity)

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
