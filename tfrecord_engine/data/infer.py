"""``tfe.infer_features``: the feature spec of TFRecord files, inferred from their records.

The same inference as ``tfr schema`` (:mod:`tfrecord_engine.example.infer`: the same
statistics, rules and batched decoding), returned as spec objects to pass to
``RecordDataset(..., features=)`` or ``parse_example`` instead of text to paste.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import InvalidArgumentError
from ..example.infer import SchemaStats
from ..example.infer_records import add_records
from ..example.specs import FeatureSpec
from ..records.detect import CompressionArg
from ..records.reader import read_records
from ..storage.options import StorageOptions, StorageOptionsArg, normalize_storage_options
from .arguments import expand_paths

__all__ = ["UninferredFeatureWarning", "infer_features", "infer_sequence_features"]

#: Records whose statistics are gathered together (one batched parse each).
_BATCH = 1024


class UninferredFeatureWarning(UserWarning):
    """Some keys of the records got no spec (conflicting types, or never a value)."""


def infer_features(
    paths_or_globs: Any,
    sample: int | None = 1000,
    *,
    compression: CompressionArg = "auto",
    storage_options: StorageOptionsArg = None,
) -> dict[str, FeatureSpec]:
    """The feature spec of ``tf.train.Example`` records, as ``tfr schema`` infers it.

    Per key: ``FixedLenFeature`` for one length in every record (a zero default where a
    single value is missing from some), ``VarLenFeature`` otherwise, ``ImageFeature`` for
    encoded images; the rules are ``tfr schema``'s (``tfr schema --help``,
    :mod:`tfrecord_engine.example.infer`). A length that never varies in the sample may
    still vary later: pass ``sample=None`` to read every record.

    Args:
        paths_or_globs: a path or glob, or a sequence of them (as for ``RecordDataset``).
        sample: infer from the first ``sample`` records in file order (``None``: all).
        compression: the files' compression (``"auto"``: from their bytes).
        storage_options: for URLs, fsspec keyword arguments for their filesystem (globs
            listed and records read with them; see docs/remote.md).

    Returns:
        key -> spec, sorted by key. Keys no spec parses (conflicting types, only empty
        lists) are left out, each named in an :class:`UninferredFeatureWarning`.

    Raises:
        InvalidArgumentError: the records are ``SequenceExample``s (use
            :func:`infer_sequence_features`), or ``sample`` is not a positive int.
        MalformedExampleError: a record is not an Example (the error names it).

    Example:
        >>> import os, tempfile, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "t.tfrecord")
        >>> with tfe.TFRecordWriter(path) as w:
        ...     w.write_many(tfe.encode_example({"y": i, "tags": [7] * (i + 1)})
        ...                  for i in range(3))
        3
        >>> features = tfe.infer_features(path)
        >>> features["tags"], features["y"].shape
        (VarLenFeature(dtype='int64'), ())
    """
    stats = _stats(paths_or_globs, sample, compression, storage_options)
    if stats.sequence:
        raise InvalidArgumentError(
            "these records are SequenceExamples (they hold feature lists): use "
            "tfe.infer_sequence_features(paths), which returns (context_features, "
            "sequence_features)"
        )
    return _specs(stats, sequence=False)


def infer_sequence_features(
    paths_or_globs: Any,
    sample: int | None = 1000,
    *,
    compression: CompressionArg = "auto",
    storage_options: StorageOptionsArg = None,
) -> tuple[dict[str, FeatureSpec], dict[str, FeatureSpec]]:
    """``(context_features, sequence_features)`` of ``tf.train.SequenceExample`` records,
    for ``parse_sequence_example``; arguments and rules as :func:`infer_features`.

    Example:
        >>> import os, tempfile, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "s.tfrecord")
        >>> with tfe.TFRecordWriter(path) as w:
        ...     w.write(tfe.encode_sequence_example({"id": 7}, {"x": [[1.0], [2.0]]}))
        >>> context, sequence = tfe.infer_sequence_features(path)
        >>> context["id"].dtype, type(sequence["x"]).__name__, sequence["x"].shape
        ('int64', 'FixedLenSequenceFeature', ())
    """
    stats = _stats(paths_or_globs, sample, compression, storage_options)
    return _specs(stats, sequence=False), _specs(stats, sequence=True)


def _stats(
    paths_or_globs: Any,
    sample: int | None,
    compression: CompressionArg,
    storage_options: StorageOptionsArg,
) -> SchemaStats:
    if sample is not None and (
        isinstance(sample, bool) or not isinstance(sample, int) or sample < 1
    ):
        raise InvalidArgumentError(f"sample must be a positive int or None, got {sample!r}")
    stats = SchemaStats()
    options = normalize_storage_options(storage_options)
    paths = expand_paths(paths_or_globs, options)
    records = itertools.islice(_records(paths, compression, options), sample)
    while chunk := list(itertools.islice(records, _BATCH)):
        wheres = [f"{path}: record {i}" for path, i, _ in chunk]
        add_records(stats, [r for _, _, r in chunk], wheres, "auto")
    return stats


def _records(
    paths: Sequence[str], compression: CompressionArg, storage_options: StorageOptions | None
) -> Iterator[tuple[str, int, bytes]]:
    for path in paths:
        records = read_records(path, compression, storage_options=storage_options)
        for i, record in enumerate(records):
            yield path, i, record


def _specs(stats: SchemaStats, *, sequence: bool) -> dict[str, FeatureSpec]:
    keys = sorted(stats.lists if sequence else stats.features)
    out: dict[str, FeatureSpec] = {}
    left: list[str] = []
    for key in keys:
        found = stats.decide(key, sequence=sequence)
        spec = found.spec()
        if spec is None:
            left.append(f"{key!r}: {found.note}")
        else:
            out[key] = spec
    if left:
        warnings.warn(
            UninferredFeatureWarning(
                f"no spec parses every record for {len(left)} key(s), left out: " + "; ".join(left)
            ),
            stacklevel=3,
        )
    return out
