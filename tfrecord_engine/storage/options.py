"""``storage_options=``: how one call reaches its store, passed to fsspec as given.

Every entry point that takes a path or URL (``read_records``, ``TFRecordWriter``,
``Index.*``, ``RecordDataset``, the hosts, ``tfr --storage-option``) accepts
``storage_options``, a mapping handed to fsspec's filesystem constructor for the URL's
protocol (``fsspec.core.url_to_fs(url, **storage_options)``), as pandas, Hugging Face
``datasets`` and Dask do: for ``s3://`` the keyword arguments of
``s3fs.S3FileSystem`` (``key``, ``secret``, ``endpoint_url``, ``client_kwargs``,
``anon`` ...), for ``gs://`` gcsfs's (``token``, ``project`` ...), for ``http(s)://``
fsspec's HTTP filesystem's (``headers``, ``client_kwargs`` ...). Local paths ignore them.

What the options promise:

- **Explicit keys win** over fsspec's global configuration (``fsspec.config.conf``,
  ``FSSPEC_<PROTOCOL>`` variables); keys not given still come from it, fsspec's own rule
  (the same as in pandas). Nothing here ever writes to that configuration, so a dataset
  with its own options leaves every other reader as it was; fsspec's instance cache is
  keyed by the options, so two stores never share a filesystem object.
- **They travel**: an object holding them (a dataset, an index, a reader) pickles them
  with itself, so ``DataLoader`` and decode-pool workers, Beam, Ray and Spark tasks reach
  the same store.
- **They are never shown**: :class:`StorageOptions`' ``repr`` (and every object's that
  holds one) replaces the value of each key that names a secret (``key``, ``secret``,
  ``token``, ``password``, ``credential``, ``auth`` ..., nested dictionaries included)
  with ``'***'``; error messages name the URL, never the options.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from ..errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "REDACTED",
    "StorageOptions",
    "StorageOptionsArg",
    "as_kwargs",
    "normalize_storage_options",
    "parse_storage_option",
    "redacted",
]

#: What a secret's value is shown as.
REDACTED: Final = "***"
# A key naming a secret: access keys (``key``, ``aws_access_key_id``), ``secret``,
# tokens (``token``, ``sas_token``, ``session_token``), passwords, credentials,
# ``Authorization`` headers, signatures, ``account_key`` ...
_SECRET = re.compile(
    r"key|secret|token|passw|credential|auth|signature|cookie|session|sas", re.IGNORECASE
)

#: What entry points accept: a mapping of fsspec keyword arguments, or ``None``.
StorageOptionsArg = Mapping[str, Any] | None


def _is_secret(name: str) -> bool:
    return _SECRET.search(name) is not None


def redacted(value: object) -> object:
    """``value`` with every secret-named key's value replaced by ``'***'``, at any depth.

    >>> redacted({"key": "AKIA", "client_kwargs": {"aws_secret_access_key": "s", "n": 1}})
    {'key': '***', 'client_kwargs': {'aws_secret_access_key': '***', 'n': 1}}
    """
    if isinstance(value, Mapping):
        return {
            k: REDACTED if isinstance(k, str) and _is_secret(k) else redacted(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(redacted(v) for v in value)
    return value


class StorageOptions(Mapping[str, Any]):
    """A read-only copy of the fsspec keyword arguments one call was given.

    A :class:`~collections.abc.Mapping` (``**options`` works), equal to a ``dict`` with
    the same items, picklable, and safe to print: its ``repr`` hides every secret (see
    :func:`redacted`).

    >>> o = StorageOptions({"key": "AKIA", "endpoint_url": "http://127.0.0.1:8333"})
    >>> o
    StorageOptions({'key': '***', 'endpoint_url': 'http://127.0.0.1:8333'})
    >>> dict(o)["key"], o == {"key": "AKIA", "endpoint_url": "http://127.0.0.1:8333"}
    ('AKIA', True)
    """

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        given = _copied(dict(items))
        for k in given:
            if not isinstance(k, str):
                raise InvalidArgumentTypeError(
                    f"storage_options keys must be strings (fsspec keyword arguments), "
                    f"got {type(k).__name__}"
                )
        self._items: dict[str, Any] = given

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"StorageOptions({redacted(self._items)!r})"

    def __reduce__(self) -> tuple[type[StorageOptions], tuple[dict[str, Any]]]:
        return (StorageOptions, (self._items,))


def normalize_storage_options(options: StorageOptionsArg) -> StorageOptions | None:
    """``options`` as a :class:`StorageOptions` (``None`` and ``{}`` stay ``None``: only
    fsspec's configuration applies).

    Raises:
        InvalidArgumentTypeError: ``options`` is not a mapping, or a key is not a string.
    """
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise InvalidArgumentTypeError(
            "storage_options must be a mapping of fsspec keyword arguments "
            f"(e.g. {{'endpoint_url': ...}}), not {type(options).__name__}"
        )
    if isinstance(options, StorageOptions):
        return options or None
    return StorageOptions(options) or None


def _copied(items: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of ``items`` where it can be made (a value that cannot, e.g. a client
    session object, is shared as given)."""
    try:
        return copy.deepcopy(items)
    except (TypeError, copy.Error):
        return dict(items)


def as_kwargs(options: StorageOptionsArg) -> dict[str, Any]:
    """The keyword arguments to hand fsspec: a fresh deep copy (``{}`` for ``None``).

    A copy because backends change what they are given: s3fs rewrites the ``retries``
    of ``config_kwargs`` in place, which would change the caller's mapping (and the
    options a dataset hands its workers).
    """
    return {} if options is None else _copied(dict(options))


def parse_storage_option(text: str) -> tuple[str, Any]:
    """One ``key=value`` of ``tfr --storage-option``: the value parsed as JSON when it
    parses (numbers, ``true``, ``null``, objects such as ``client_kwargs={...}``), else
    kept as a string.

    >>> parse_storage_option("endpoint_url=http://127.0.0.1:8333")
    ('endpoint_url', 'http://127.0.0.1:8333')
    >>> parse_storage_option('client_kwargs={"region_name": "eu-west-1"}')
    ('client_kwargs', {'region_name': 'eu-west-1'})
    >>> parse_storage_option("anon=true")
    ('anon', True)

    Raises:
        InvalidArgumentError: no ``=``, or an empty key.
    """
    key, eq, value = text.partition("=")
    key = key.strip()
    if not eq or not key:
        # (The text itself is not repeated: it may hold a secret.)
        raise InvalidArgumentError(
            "a storage option is key=value, e.g. endpoint_url=http://127.0.0.1:8333 or "
            'client_kwargs={"region_name": "eu-west-1"}; got one without a key or "="'
        )
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value
