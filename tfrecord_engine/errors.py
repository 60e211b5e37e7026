"""The error hierarchy of tfrecord-engine.

Every exception the engine raises on purpose derives from :class:`TFRecordError`.
Each subclass also inherits the built-in exception that callers already catch, so
``except ValueError`` or ``except OSError`` keeps working:

- :class:`DataLossError` (``OSError``): the bytes of a file are damaged or cut short.
  It always carries ``path``, ``record_index`` and ``offset`` (the byte offset where the
  damaged record starts; for GZIP/ZLIB files an offset in the decompressed stream, as in
  TensorFlow), and its message names all three plus what was wrong.

  - :class:`CorruptedRecordError`: a checksum does not match (length or data CRC).
  - :class:`TruncatedRecordError`: the file ends inside a record, or a length field
    claims more bytes than remain.

- :class:`InvalidArgumentError` (``ValueError``): a bad argument (an unknown compression
  type, a bad batch size, ...).

  - :class:`InvalidArgumentTypeError` (also ``TypeError``): an argument of the wrong
    type (``read_records(1)``).

- :class:`WriterClosedError` (``ValueError``): ``write``/``flush`` on a closed writer,
  matching what Python's own files raise.
- :class:`ParseError` (``ValueError``): a serialized Example does not match a feature
  spec, or is not a valid Example at all.

  - :class:`ExampleParseError`: parsing against feature specs failed; carries ``key``
    (the feature key, or ``None``) and ``index`` (the record's index in the batch, or
    ``None`` for a single record), and mirrors TensorFlow's message text.
  - :class:`MalformedExampleError`: the bytes are not a valid (Sequence)Example; carries
    ``offset`` (the byte offset within the record where decoding failed) and ``index``.
- :class:`WriterFailedError` (``OSError``): ``close`` on a writer whose earlier I/O
  failed; nothing was published (atomic mode) or the file is incomplete.
- :class:`DamageWarning` (``UserWarning``): damage that a reader stepped over or stopped
  at under ``on_damage="stop"``/``"skip"`` when no report callback was given.
- :class:`IndexFormatError` (``ValueError``): a sidecar index file is damaged, foreign
  or of an unknown format version.

  - :class:`StaleIndexError`: a valid index that describes another version of its data
    file (appended, truncated or replaced since it was written).

- :class:`OutOfRangeError` (``IndexError``): a record index outside ``[-len, len)``.
- :class:`MissingDependencyError` (``ImportError``): an optional extra is needed (e.g.
  ``fsspec`` for URLs: the ``remote`` extra, ``pip install -e '.[remote]'`` in a clone
  of the repository; :func:`install_hint` words it).
- :class:`ReadOnlyStorageError` (``PermissionError``): a write to a storage that cannot
  be written through its URL (HTTP/HTTPS).
- :class:`RemoteReadError` (``OSError``): a read of a URL failed: a transient error that
  outlasted the retries, or a permanent one. It carries ``url``, the byte range
  (``start``, ``end``; ``None`` for a size query or a whole-file read), ``status`` (the
  HTTP status, when there was one) and ``attempts``, and its message names them.

  - :class:`RemoteNotFoundError` (also ``FileNotFoundError``): the URL does not exist
    (404/410). Only this ever becomes a ``FileNotFoundError``: a 503 or a reset never does.
  - :class:`RemoteAccessDeniedError` (also ``PermissionError``): 401/403.

- :class:`RemoteChangedError` (a :class:`StaleIndexError`): a remote file's identity
  (ETag, else Last-Modified) or size changed while it was in use; it names the URL, the
  byte range whose answer showed it, and both identities.
- :class:`RangeIgnoredWarning` (``UserWarning``): a server answered a byte-range request
  with the whole file (``200`` for ``206``); the range was cut out of it, but every such
  read downloads the whole file.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings

__all__ = [
    "CorruptedRecordError",
    "DamageReport",
    "DamageWarning",
    "DataLossError",
    "ExampleParseError",
    "IndexFormatError",
    "IndexPublishError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "MalformedExampleError",
    "MissingDependencyError",
    "OutOfRangeError",
    "ParseError",
    "RangeIgnoredWarning",
    "ReadOnlyStorageError",
    "RecordTooLargeError",
    "RemoteAccessDeniedError",
    "RemoteChangedError",
    "RemoteNotFoundError",
    "RemoteReadError",
    "StaleIndexError",
    "TFRecordError",
    "TruncatedRecordError",
    "WorkerError",
    "WriterClosedError",
    "WriterFailedError",
    "warn_damage",
]


class TFRecordError(Exception):
    """Root of every error tfrecord-engine raises on purpose."""


class DataLossError(TFRecordError, OSError):
    """A TFRecord file is damaged: bad checksum, truncated record or lying length.

    Attributes:
        path: the file (as given by the caller), or ``None`` for an anonymous stream.
        record_index: 0-based index of the damaged record within the file; -1 where it is
            not known (a read by byte offset, :class:`~tfrecord_engine.RandomRecordReader`).
        offset: byte offset where the damaged record starts (decompressed stream
            offset for GZIP/ZLIB files).
        reason: a short description of what was wrong.
        hint: what to do next (a sentence, see :meth:`with_hint`), or ``None``.
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | os.PathLike[str] | None,
        record_index: int,
        offset: int,
        hint: str | None = None,
    ) -> None:
        self.reason = reason
        self.path = None if path is None else os.fspath(path)
        self.record_index = record_index
        self.offset = offset
        self.hint = hint
        super().__init__(self._text())

    def _text(self) -> str:
        where = self.path if self.path is not None else "<stream>"
        record = "the record" if self.record_index < 0 else f"record {self.record_index}"
        text = f"{where}: {record} at offset {self.offset}: {self.reason}"
        return with_hint(text, self.hint)

    def with_hint(self, hint: str) -> DataLossError:
        """Sets :attr:`hint` (what to do next) and puts it at the end of the message.

        Returns ``self``; setting a hint again replaces the earlier one (an error raised
        twice is not hinted twice).
        """
        self.hint = hint
        self.args = (self._text(),)
        return self

    def __str__(self) -> str:
        # OSError.__str__ would format errno-style tuples; keep our one-line message.
        return str(self.args[0])

    def __reduce__(self) -> tuple[object, ...]:
        # Exceptions are pickled across worker processes/threads; keep the keywords.
        return (
            _rebuild_data_loss,
            (type(self), self.reason, self.path, self.record_index, self.offset, self.hint),
        )


def _rebuild_data_loss(  # noqa: PLR0917 - the fields of one error
    cls: type[DataLossError],
    reason: str,
    path: str | None,
    record_index: int,
    offset: int,
    hint: str | None = None,
) -> DataLossError:
    return cls(reason, path=path, record_index=record_index, offset=offset, hint=hint)


class CorruptedRecordError(DataLossError):
    """A record's length CRC or data CRC does not match its contents."""


class TruncatedRecordError(DataLossError):
    """The file ends inside a record, or a length field exceeds the bytes that remain."""


class RecordTooLargeError(DataLossError):
    """A record header announces more bytes than the reader's ``max_record_bytes``.

    Treated as damage (the damage policies apply): a length CRC can be valid on a
    length that no writer meant, and a limit is how a reader refuses to trust it.
    """


class InvalidArgumentError(TFRecordError, ValueError):
    """An argument has a value the engine does not accept."""


class InvalidArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of a type the engine does not accept (``read_records(1)``): also a
    ``TypeError``, as Python's own functions raise for one."""


class WriterClosedError(TFRecordError, ValueError):
    """An operation was attempted on a writer that is already closed."""


class ParseError(TFRecordError, ValueError):
    """A serialized Example/SequenceExample is malformed or does not match the spec.

    Raised while reading a :class:`~tfrecord_engine.RecordDataset`, it also names where
    the record is (see :meth:`locate`): the message then starts with ``PATH: record N at
    offset O`` (and the record's index in the dataset, where that differs) and ends with
    a hint where there is one; the parser's own text (TensorFlow's, where it mirrors
    TensorFlow) is kept whole in between, and in :attr:`reason`.

    Attributes:
        path: the file the record is in, or ``None`` (bytes parsed on their own, e.g.
            by ``tfe.parse_example``).
        record_index: the record's 0-based index within ``path``, or ``None``.
        record_offset: the byte offset where the record starts in ``path``
            (decompressed offset for GZIP/ZLIB files), or ``None``.
        dataset_index: the record's index in the dataset, or ``None``.
        hint: what to do next (a sentence), or ``None``.
    """

    path: str | None = None
    record_index: int | None = None
    record_offset: int | None = None
    dataset_index: int | None = None
    hint: str | None = None

    @property
    def reason(self) -> str:
        """The parser's message, without the place and the hint."""
        reason = self.__dict__.get("_reason")
        return str(self.args[0]) if reason is None and self.args else str(reason or "")

    def locate(
        self,
        path: str | None,
        record_index: int | None,
        record_offset: int | None = None,
        *,
        dataset_index: int | None = None,
        hint: str | None = None,
    ) -> None:
        """Names the record this error is about: where it is, and what to do next.

        The message becomes ``PATH: record N at offset O (dataset index I): REASON`` plus
        the hint (the parts that are ``None`` left out); locating again replaces the
        earlier place (never stacks).

        >>> err = ExampleParseError("Feature: y (data type: int64) is required ...", key="y")
        >>> err.locate("b.tfrecord", 3, 96, dataset_index=13)
        >>> str(err)
        'b.tfrecord: record 3 at offset 96 (dataset index 13): Feature: y (data type: ...'
        """
        reason = self.reason
        self.__dict__["_reason"] = reason
        self.path = path
        self.record_index = record_index
        self.record_offset = record_offset
        self.dataset_index = dataset_index
        self.hint = hint
        where = [] if path is None else [path]
        if record_index is not None:
            at = "" if record_offset is None else f" at offset {record_offset}"
            where.append(f"record {record_index}{at}")
        if dataset_index is not None and dataset_index != record_index:
            where[-1:] = [f"{where[-1]} (dataset index {dataset_index})"] if where else []
        text = ": ".join([*where, reason])
        self.args = (with_hint(text, hint),)

    def __reduce__(self) -> tuple[object, ...]:
        # Raised in decode workers and again in the parent: keep the message and every
        # attribute (the place, key and index, a subclass's own).
        return (_rebuild_with_state, (type(self), self.args), dict(self.__dict__))


def _rebuild_with_state(cls: type[ParseError], args: tuple[object, ...]) -> ParseError:
    # The attributes follow from the pickled state (BaseException.__setstate__).
    return cls.__new__(cls, *args)


class ExampleParseError(ParseError):
    """Parsing a serialized Example against feature specs failed.

    Attributes:
        key: the feature key the failure is about, or ``None``.
        index: the record's index in the batch, or ``None`` for a single record.
    """

    def __init__(self, message: str, *, key: str | None = None, index: int | None = None) -> None:
        self.key = key
        self.index = index
        super().__init__(message)


class MalformedExampleError(ExampleParseError):
    """The bytes are not a valid serialized Example / SequenceExample.

    Attributes:
        offset: byte offset within the serialized record where decoding failed.
    """

    def __init__(
        self,
        message: str,
        *,
        offset: int = 0,
        key: str | None = None,
        index: int | None = None,
    ) -> None:
        self.offset = offset
        super().__init__(message, key=key, index=index)


class WriterFailedError(TFRecordError, OSError):
    """A writer is closed after one of its writes, flushes or syncs failed.

    The original ``OSError`` was raised by the call that failed (and is chained here as
    ``__cause__``). In atomic mode nothing was published and the temporary file is gone;
    with ``atomic=False`` the file under the final name is incomplete.
    """


@dataclasses.dataclass(frozen=True, slots=True)
class DamageReport:
    """One damaged region a reader stopped at or stepped over.

    Attributes:
        path: the file, or ``None`` for an anonymous stream.
        record_index: how many records were returned before the damage, i.e. the index
            the first unreadable record had (exact for the first damage of a file; after
            a skip, records lost inside earlier damage are not counted).
        offset: byte offset where the damage starts (decompressed offset for GZIP/ZLIB).
        bytes_skipped: bytes not returned from ``offset`` on: up to the next intact
            record (``"skip"``) or to the end of the file (``"stop"``); ``None`` when
            unknown (a stream that was not read further).
        reason: what was wrong, as in the :class:`~tfrecord_engine.DataLossError`
            ``"raise"`` would have raised.
    """

    path: str | None
    record_index: int
    offset: int
    bytes_skipped: int | None
    reason: str

    def __post_init__(self) -> None:
        if self.record_index < 0 or self.offset < 0:
            raise InvalidArgumentError(
                f"record_index and offset must be >= 0, got {self.record_index}, {self.offset}"
            )
        if self.bytes_skipped is not None and self.bytes_skipped < 0:
            raise InvalidArgumentError(f"bytes_skipped must be >= 0, got {self.bytes_skipped}")

    def __str__(self) -> str:
        where = self.path if self.path is not None else "<stream>"
        lost = "an unknown number of" if self.bytes_skipped is None else str(self.bytes_skipped)
        return (
            f"{where}: record {self.record_index} at offset {self.offset}: {self.reason}; "
            f"{lost} byte(s) not read"
        )


class DamageWarning(TFRecordError, UserWarning):
    """Damage a reader stopped at or stepped over (``on_damage="stop"``/``"skip"``).

    Emitted once per damaged region when no ``on_damage_report`` callback is given.

    Attributes:
        report: the :class:`DamageReport` describing it.
    """

    def __init__(self, message: str, report: DamageReport) -> None:
        super().__init__(message)
        self.report = report


class IndexFormatError(TFRecordError, ValueError):
    """A sidecar index file is damaged, not an index, or of an unknown format version."""


class StaleIndexError(IndexFormatError):
    """An index does not describe its data file as it is now (appended, cut or replaced)."""


class OutOfRangeError(TFRecordError, IndexError):
    """A record index is outside the dataset (``i < -len`` or ``i >= len``)."""


class MissingDependencyError(TFRecordError, ImportError):
    """An optional dependency is not installed; the message names the extra to install
    and how (see :func:`install_hint`)."""


def install_hint(extra: str) -> str:
    """How to install an optional extra of tfrecord-engine, the one text every message uses.

    tfrecord-engine is not on PyPI yet, so extras install from a clone of its repository.

    >>> install_hint("torch")
    "install the extra tfrecord-engine[torch] from a clone of the repository: pip install ..."
    """
    return (
        f"install the extra tfrecord-engine[{extra}] from a clone of the repository: "
        f"pip install -e '.[{extra}]' in the clone (tfrecord-engine is not on PyPI yet)"
    )


def with_hint(message: str, hint: str | None) -> str:
    """``message`` followed by ``hint`` (a sentence), or ``message`` alone.

    >>> with_hint("record 3: data CRC mismatch", "Rewrite it with `tfr repair`.")
    'record 3: data CRC mismatch. Rewrite it with `tfr repair`.'
    """
    if not hint:
        return message
    return f"{message} {hint}" if message.endswith((".", "!", "?")) else f"{message}. {hint}"


class ReadOnlyStorageError(TFRecordError, PermissionError):
    """A write to a storage that is read-only through its URL (HTTP/HTTPS)."""


class WorkerError(TFRecordError, RuntimeError):
    """A decode worker process (``batches(..., workers=N)``) failed to start or died."""


def _span(start: int | None, end: int | None) -> str:
    return "" if start is None or end is None else f" bytes [{start}, {end})"


class RemoteReadError(TFRecordError, OSError):
    """A read of a remote file failed (after the retries, for a transient error).

    Attributes:
        url: the file's URL.
        start, end: the half-open byte range asked for; ``None`` for a size query or a
            whole-file read.
        status: the HTTP status of the last answer, or ``None`` (a connection error, a
            backend that does not expose one).
        attempts: how many times the request was sent.
        reason: what went wrong and what to do next.
    """

    def __init__(
        self,
        reason: str,
        *,
        url: str,
        start: int | None = None,
        end: int | None = None,
        status: int | None = None,
        attempts: int = 1,
    ) -> None:
        self.reason = reason
        self.url = url
        self.start = start
        self.end = end
        self.status = status
        self.attempts = attempts
        tries = "" if attempts == 1 else f" (after {attempts} attempts)"
        where = f"{url}:{_span(start, end)}" if start is not None else url
        super().__init__(f"{where}: {reason}{tries}")

    def __str__(self) -> str:
        # OSError.__str__ would format errno-style tuples; keep our one-line message.
        return str(self.args[0])

    def __reduce__(self) -> tuple[object, ...]:
        # Raised in decode workers and re-raised in the parent: keep the keywords.
        return (
            _rebuild_remote,
            (
                type(self),
                self.reason,
                self.url,
                self.start,
                self.end,
                self.status,
                self.attempts,
            ),
        )


def _rebuild_remote(  # noqa: PLR0917 - the fields of one error
    cls: type[RemoteReadError],
    reason: str,
    url: str,
    start: int | None,
    end: int | None,
    status: int | None,
    attempts: int,
) -> RemoteReadError:
    return cls(reason, url=url, start=start, end=end, status=status, attempts=attempts)


class RemoteNotFoundError(RemoteReadError, FileNotFoundError):
    """The remote file does not exist (HTTP 404/410, or the backend's own not-found)."""


class RemoteAccessDeniedError(RemoteReadError, PermissionError):
    """The remote file may not be read with the credentials in use (HTTP 401/403)."""


class RemoteChangedError(StaleIndexError):
    """A remote file was replaced or changed while in use (its ETag, Last-Modified or
    size is not the one it had when first asked).

    Records read before and after the change would come from two different files, so
    nothing after it is returned: reopen the dataset (or re-open the file) to read the
    new version, whose index is then validated again.

    Attributes:
        url: the file's URL.
        start, end: the byte range whose answer showed the change (``None``: a size query
            or a whole-file read).
        before, after: the identity first seen and the one seen now (e.g.
            ``'ETag "a1"'`` and ``'ETag "b2"'``, or sizes).
    """

    def __init__(
        self, *, url: str, start: int | None, end: int | None, before: str, after: str
    ) -> None:
        self.url = url
        self.start = start
        self.end = end
        self.before = before
        self.after = after
        seen = _span(start, end).strip() or "a size query or whole-file read"
        super().__init__(
            f"{url}: changed while in use ({before} -> {after}), seen in the answer for "
            f"{seen}: records read before and after would come from two different files; "
            "reopen the dataset to read the new version"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_changed,
            (type(self), self.url, self.start, self.end, self.before, self.after),
        )


def _rebuild_changed(  # noqa: PLR0917 - the fields of one error
    cls: type[RemoteChangedError],
    url: str,
    start: int | None,
    end: int | None,
    before: str,
    after: str,
) -> RemoteChangedError:
    return cls(url=url, start=start, end=end, before=before, after=after)


class RangeIgnoredWarning(TFRecordError, UserWarning):
    """A server answered a byte-range request with the whole file (``200``, not ``206``).

    The range was cut out of the whole body, so the data is right, but every such read
    downloads the whole file: serve the data from a server that honours ``Range``.
    """


class IndexPublishError(TFRecordError, OSError):
    """Writing the index of a written file failed (a full disk, say).

    ``errno`` is the failed call's. The message says whether the data was published:

    Attributes:
        path: the data file.
        index_path: where its index was to go.
        published: ``True`` when the data is under ``path`` without its index (readers
            index it themselves; ``tfr index PATH`` writes one); ``False`` when nothing
            was published (the previous version of ``path``, if any, is unchanged).
    """

    def __init__(
        self, message: str, *, path: str, index_path: str, published: bool, code: int | None
    ) -> None:
        if code is None:
            super().__init__(message)
        else:
            super().__init__(code, message)
        self.path = path
        self.index_path = index_path
        self.published = published

    def __str__(self) -> str:
        return str(self.strerror if self.errno is not None else self.args[0])

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_publish,
            (str(self), self.path, self.index_path, self.published, self.errno),
        )


def _rebuild_publish(
    message: str, path: str, index_path: str, published: bool, code: int | None
) -> IndexPublishError:
    return IndexPublishError(
        message, path=path, index_path=index_path, published=published, code=code
    )


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_BRIDGE_DIR = os.sep + "tfrecord_bridge" + os.sep


def _ours(filename: str) -> bool:
    return filename.startswith(_PACKAGE_DIR) or _BRIDGE_DIR in filename


def warn_damage(report: DamageReport) -> None:
    """Emits ``report`` as a :class:`DamageWarning` attributed to the first frame outside
    this package (the caller's line, whatever the path through the library was)."""
    level = 1
    frame = sys._getframe(0)
    while frame.f_back is not None and _ours(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    warnings.warn(DamageWarning(str(report), report), stacklevel=level)
