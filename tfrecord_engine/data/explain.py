"""``tfe.explain_decode``: which decode path a feature spec takes, and why.

The engine decodes Examples by one of several paths, fastest first where it applies:

- ``dense``: one compiled pass per batch (every spec an int64 / float32
  ``FixedLenFeature``, compiled kernels loaded);
- ``template``: records that share one byte layout, decoded as fixed-offset gathers
  (chunks of at least 64 records; tried again now and then when records vary);
- ``walk``: the compiled walk, one pass per record over its feature map, then one
  compiled or numpy pass per feature over the whole batch (any spec);
- ``lockstep``: the same walk in numpy passes (without the compiled kernels);
- ``exact``: record by record, the reference path (small ``parse_example`` batches,
  records off the canonical layout, and every batch that raises);
- ``single``: ``ds[i]`` and ``ds.__getitems__`` / ``ds[list]`` of at most 128 records,
  record by record with a plan built once per spec (a ``layout`` per record length
  when every feature is a scalar).

:func:`explain_decode` names the path of a spec at a batch size, and for each feature
whether it keeps a spec off a faster path. With a dataset (or a ``BatchDecoder``), it
also reports what its decoder did so far: records decoded, by templates, by the
compiled walk, record by record.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import kernels
from ..example import batch as example_batch
from ..example import dense
from ..example.single import SingleDecoder
from ..example.specs import (
    FeatureSpec,
    FixedLenFeature,
    RaggedFeature,
    RawFeature,
    VarLenFeature,
    as_feature_specs,
)

__all__ = ["DecodePath", "explain_decode"]

#: ``ds[list]`` / ``__getitems__`` of at most this many records take the per-call path.
SMALL_BATCH = 128


@dataclass(frozen=True)
class DecodePath:
    """The decode paths of a spec (see :func:`explain_decode`).

    Attributes:
        tier: the path of a batch of ``batch_size`` records (``RecordDataset.batches``
            and ``tfe.parse_example``): ``dense``, ``template+walk``, ``template+lockstep``,
            ``walk``, ``lockstep`` or ``exact``.
        batch_size: the batch size explained.
        kernels: whether the compiled kernels are in use now.
        per_call: the path of ``ds[i]`` and small ``__getitems__`` calls.
        features: per feature, how it is decoded and what it keeps the spec from.
        notes: other reasons (kernels off, batch size below a threshold).
        stats: what a decoder did so far (records, fallback_records, exact_batches,
            template_records, walked_records), or None.
    """

    tier: str
    batch_size: int
    kernels: bool
    per_call: str
    features: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    stats: dict[str, int] | None = None

    def __str__(self) -> str:
        lines = [
            f"batches of {self.batch_size}: {self.tier}",
            f"ds[i] / small __getitems__: {self.per_call}",
            f"compiled kernels: {'in use' if self.kernels else 'not in use'}",
        ]
        lines += [f"  {key}: {how}" for key, how in self.features.items()]
        lines += [f"note: {note}" for note in self.notes]
        if self.stats is not None:
            lines.append("so far: " + ", ".join(f"{k} {v}" for k, v in self.stats.items()))
        return "\n".join(lines)


def _feature_note(spec: FeatureSpec) -> str:
    """How one feature is decoded, and which faster path it rules out."""
    if type(spec) is FixedLenFeature and spec.dtype != "string":
        return f"FixedLenFeature {spec.dtype}: dense plan"
    if isinstance(spec, FixedLenFeature):
        return "FixedLenFeature string: not in the dense plan (int64/float32 only); walked"
    if isinstance(spec, RawFeature):
        return "RawFeature: not in the dense plan; values gathered as uint8 rows"
    if isinstance(spec, VarLenFeature):
        return (
            f"VarLenFeature {spec.dtype}: not in the dense plan; lengths vary, so "
            "templates rarely match: walked"
        )
    if isinstance(spec, RaggedFeature):
        return "RaggedFeature: not in the dense plan; walked"
    return f"{type(spec).__name__}: not in the dense plan; walked"


def _single_path(features: Mapping[str, FeatureSpec]) -> str:
    single = SingleDecoder(features)
    if single.scalars:
        return "single (a compiled layout per record length; every feature a scalar)"
    if single.enabled:
        return "single (one walk per record; some feature is not a scalar)"
    odd = [k for k, s in features.items() if not SingleDecoder({k: s}).enabled]
    odd_text = ", ".join(odd) or "a key that two specs request"
    return f"batch decode (the per-record plan does not take {odd_text})"


def explain_decode(source: Any, *, batch_size: int = 256) -> DecodePath:
    """Which decode path ``source`` takes for batches of ``batch_size``, and why.

    Args:
        source: a feature spec mapping (ours or ``tf.io``'s), a ``RecordDataset`` with
            ``features`` or a :class:`~tfrecord_engine.example.batch.BatchDecoder`
            (their decoders' counters are reported too).
        batch_size: the batch size to explain.

    Example:
        >>> import tfrecord_engine as tfe
        >>> spec = {"label": tfe.FixedLenFeature([], "int64"),
        ...         "boxes": tfe.VarLenFeature("float32")}
        >>> path = tfe.explain_decode(spec, batch_size=256)
        >>> path.tier in ("template+walk", "template+lockstep")
        True
        >>> path.features["boxes"].startswith("VarLenFeature float32: not in the dense plan")
        True
    """
    decoder = None
    if isinstance(source, example_batch.BatchDecoder):
        decoder, features = source, source.features
    elif isinstance(source, Mapping):
        features = dict(as_feature_specs(source))
    else:
        spec = getattr(source, "features", None)
        seqspecs = sys.modules.get("tfrecord_engine.example.seqspecs")  # (none before)
        if seqspecs is not None and isinstance(spec, seqspecs.SequenceFeatures):
            # A SequenceExample dataset's specs: one compiled walk per batch.
            return DecodePath(
                tier="sequence walk",
                batch_size=batch_size,
                kernels=kernels.enabled() and kernels.ready(),
                per_call="sequence walk",
                notes=("SequenceExamples: the batched SequenceExample decoder",),
            )
        if not isinstance(spec, Mapping):
            raise TypeError(
                f"explain_decode takes a feature spec, a RecordDataset with features or a "
                f"BatchDecoder, not {type(source).__name__}"
            )
        features = dict(as_feature_specs(spec))
        decoder = getattr(source, "_decoder", None)
    on = kernels.enabled() and kernels.ready()
    notes: list[str] = []
    walk = "walk" if on else "lockstep"
    if not on:
        notes.append(
            "the compiled kernels are not in use (TFE_KERNELS=0, numba missing, or still "
            "loading: tfrecord_engine.kernels.wait()): numpy paths decode"
        )
    if on and dense.eligible(features):
        tier = "dense"
    elif batch_size >= example_batch.TEMPLATE_MIN_RECORDS:
        tier = f"template+{walk}"
    else:
        tier = walk if on and batch_size >= example_batch.WALK_MIN_RECORDS else "exact"
        notes.append(
            f"tfe.parse_example of {batch_size} records: "
            + ("the compiled walk" if tier == "walk" else "record by record")
            + f"; RecordDataset.batches decodes chunks of at least "
            f"{example_batch.TEMPLATE_MIN_RECORDS} records ({walk})"
        )
    notes.append(
        "records off the canonical layout (unpacked lists, duplicate keys, unknown "
        "fields) are decoded record by record (stats: fallback_records)"
    )
    stats = None
    if decoder is not None:
        s = decoder.stats
        stats = {
            "records": s.records,
            "fallback_records": s.fallback_records,
            "exact_batches": s.exact_batches,
            "template_records": s.template_records,
            "walked_records": s.walked_records,
        }
    return DecodePath(
        tier=tier,
        batch_size=batch_size,
        kernels=on,
        per_call=_single_path(features),
        features={key: _feature_note(spec) for key, spec in features.items()},
        notes=tuple(notes),
        stats=stats,
    )
