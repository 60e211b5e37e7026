"""How the Beam transforms' reads and writes reach a store: ``storage_options``, or the
pipeline's own S3 options.

A Beam pipeline touches a file two ways: Beam's ``FileSystems`` match patterns, make
folders and rename published shards (for ``s3://`` with Beam's ``S3Options``:
``--s3_endpoint_url``, ``--s3_access_key_id`` ...), and this package's reader, writer
and index (fsspec) read and write the records. The second way takes, per URL:

1. the transform's ``storage_options=``, when given (fsspec keyword arguments, as
   everywhere in the package; see :mod:`tfrecord_engine.storage.options`);
2. else, for an ``s3://`` URL, s3fs's arguments derived from the pipeline's
   ``S3Options`` when any of them is set (:func:`s3fs_options_of`), so that one set of
   settings reaches both;
3. else nothing: fsspec's configuration (``FSSPEC_S3`` ...) and the backend's own
   sources (``AWS_*``) apply.

The choice is made when the transform is applied (``expand``) and travels to the
workers with the DoFns, pickled.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from ...storage import remote
from ...storage.options import StorageOptions, StorageOptionsArg, normalize_storage_options

__all__ = ["Reach", "reach_of", "s3fs_options_of"]

#: Beam's ``S3Options`` attributes and the client argument each becomes.
_CLIENT: Final = (
    ("s3_endpoint_url", "endpoint_url"),
    ("s3_region_name", "region_name"),
    ("s3_api_version", "api_version"),
)


def _flag(value: object) -> object:
    """``--s3_verify false`` arrives as the string ``"false"``; boto3 wants a bool (or a
    CA bundle's path, kept as given)."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


def s3fs_options_of(pipeline_options: Any) -> StorageOptions | None:
    """s3fs's keyword arguments equivalent to a pipeline's ``S3Options``, or ``None``
    when none of them is set.

    ``s3_access_key_id``, ``s3_secret_access_key``, ``s3_session_token`` become ``key``,
    ``secret``, ``token``; ``s3_endpoint_url``, ``s3_region_name``, ``s3_api_version``
    and ``s3_verify`` go to ``client_kwargs`` (boto3's client, as Beam passes them);
    ``s3_disable_ssl`` becomes ``use_ssl=False``.

    >>> from apache_beam.options.pipeline_options import PipelineOptions
    >>> s3fs_options_of(PipelineOptions(s3_endpoint_url="http://127.0.0.1:8333",
    ...                                 s3_access_key_id="AKIA"))
    StorageOptions({'key': '***', 'client_kwargs': {'endpoint_url': 'http://127.0.0.1:8333'}})
    >>> s3fs_options_of(PipelineOptions()) is None
    True
    """
    if pipeline_options is None:
        return None
    from apache_beam.options.pipeline_options import S3Options  # noqa: PLC0415

    s3 = pipeline_options.view_as(S3Options)
    out: dict[str, Any] = {}
    for attr, name in (
        ("s3_access_key_id", "key"),
        ("s3_secret_access_key", "secret"),
        ("s3_session_token", "token"),
    ):
        if getattr(s3, attr, None) is not None:
            out[name] = getattr(s3, attr)
    client = {
        name: getattr(s3, attr) for attr, name in _CLIENT if getattr(s3, attr, None) is not None
    }
    if getattr(s3, "s3_verify", None) is not None:
        client["verify"] = _flag(s3.s3_verify)
    if client:
        out["client_kwargs"] = client
    if getattr(s3, "s3_disable_ssl", False):
        out["use_ssl"] = False
    return normalize_storage_options(out)


@dataclasses.dataclass(frozen=True)
class Reach:
    """The storage options of one transform (see the module).

    Attributes:
        given: the transform's ``storage_options=`` (for every URL).
        s3: derived from the pipeline's ``S3Options`` (for ``s3://`` URLs, when no
            options were given).
    """

    given: StorageOptions | None = None
    s3: StorageOptions | None = None

    def of(self, path: str) -> StorageOptions | None:
        """The options to read or write ``path`` with (``None`` for a local path)."""
        if not remote.is_url(path):
            return None
        if self.given is not None:
            return self.given
        if self.s3 is not None and remote.protocol(path) in ("s3", "s3a"):
            return self.s3
        return None


def reach_of(storage_options: StorageOptionsArg, pvalue: Any) -> Reach:
    """The :class:`Reach` of a transform applied to ``pvalue`` (its pipeline's options
    are read only when no ``storage_options`` were given)."""
    given = normalize_storage_options(storage_options)
    if given is not None:
        return Reach(given)
    pipeline = getattr(pvalue, "pipeline", None)
    return Reach(None, s3fs_options_of(getattr(pipeline, "options", None)))
