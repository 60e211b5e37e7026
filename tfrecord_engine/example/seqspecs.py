"""The specs of a SequenceExample dataset, and the flat dict its batches are.

``RecordDataset(paths, context_features=..., sequence_features=...)`` keeps both spec
mappings in one :class:`SequenceFeatures`. It is a mapping itself (context specs, then
sequence specs, by name), so every part of the dataset that asks only "which features,
of which dtype" works as for Examples; the parts that decode ask for ``.context`` and
``.sequence``.

A batch is one flat dict (:func:`flat_batch`) of ``tf.io.parse_sequence_example``'s
three outputs:

- each context feature under its name, as TensorFlow gives it;
- each sequence feature under its name, as TensorFlow gives it (a
  ``FixedLenSequenceFeature`` padded ``[batch, max_steps, *shape]``, a ``VarLenFeature``
  a 3-D :class:`~.values.SparseValue`, a ``RaggedFeature`` a
  :class:`~.values.RaggedValue` ``[batch, steps, values]``);
- each ``FixedLenSequenceFeature``'s step counts (TensorFlow's third output,
  ``feature_list_lengths``) under ``"<name>_lengths"`` (:func:`lengths_key`), int64
  ``[batch]``.

Two features that would share a key are refused when the specs are given.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import InvalidArgumentError
from .seqexact import plan
from .specs import FeatureSpec, FixedLenSequenceFeature, as_feature_specs

__all__ = ["LENGTHS_SUFFIX", "SequenceFeatures", "flat_batch", "lengths_key"]

#: The suffix of the key that holds a ``FixedLenSequenceFeature``'s step counts.
LENGTHS_SUFFIX = "_lengths"


def lengths_key(name: str) -> str:
    """The batch key of sequence feature ``name``'s step counts.

    >>> lengths_key("tokens")
    'tokens_lengths'
    """
    return name + LENGTHS_SUFFIX


class SequenceFeatures(Mapping[str, FeatureSpec]):
    """The context and sequence specs of a SequenceExample dataset.

    A read-only mapping of every spec by name (context first); ``.context`` and
    ``.sequence`` keep them apart. ``tf.io``'s own spec objects are converted.

    Args:
        context_features: context key -> ``FixedLenFeature``/``VarLenFeature``/
            ``RaggedFeature``/``RawFeature`` (``None``: none).
        sequence_features: feature-list key -> ``FixedLenSequenceFeature``/
            ``VarLenFeature``/``RaggedFeature`` (``None``: none). A
            ``FixedLenSequenceFeature`` needs no ``allow_missing`` here (without it a
            record that lacks the list is an error, as in TensorFlow).

    Raises:
        InvalidArgumentError: both are empty, a spec is of the wrong kind, or two
            features would share a key of the flat batch (a context and a sequence
            feature of one name, or a feature named like another's ``_lengths``).

    Example:
        >>> from tfrecord_engine.example.specs import FixedLenFeature, FixedLenSequenceFeature
        >>> f = SequenceFeatures({"id": FixedLenFeature([], "int64")},
        ...                      {"tok": FixedLenSequenceFeature([], "int64")})
        >>> list(f), f.output_keys
        (['id', 'tok'], ['id', 'tok', 'tok_lengths'])
    """

    def __init__(
        self,
        context_features: Mapping[str, Any] | None,
        sequence_features: Mapping[str, Any] | None,
    ) -> None:
        for what, given in (
            ("context_features", context_features),
            ("sequence_features", sequence_features),
        ):
            if given is not None and not isinstance(given, Mapping):
                raise InvalidArgumentError(
                    f"{what} must be a mapping of feature name to spec (or None), "
                    f"not {type(given).__name__}"
                )
        self.context: dict[str, FeatureSpec] = dict(as_feature_specs(context_features or {}))
        self.sequence: dict[str, FeatureSpec] = dict(as_feature_specs(sequence_features or {}))
        plan(self.context, self.sequence)  # the specs' kinds: TensorFlow's errors
        #: The sequence features with step counts (``FixedLenSequenceFeature``).
        self.dense: list[str] = [
            k for k, s in self.sequence.items() if isinstance(s, FixedLenSequenceFeature)
        ]
        self._all = {**self.context, **self.sequence}
        _check_keys(self.context, self.sequence, self.dense)

    @property
    def output_keys(self) -> list[str]:
        """Every key of a batch, in order: context, sequence, then step counts."""
        return [*self.context, *self.sequence, *map(lengths_key, self.dense)]

    def only(self, key: str) -> SequenceFeatures:
        """The specs of feature ``key`` alone (in its own part)."""
        if key in self.context:
            return SequenceFeatures({key: self.context[key]}, None)
        return SequenceFeatures(None, {key: self.sequence[key]})

    def __getitem__(self, key: str) -> FeatureSpec:
        return self._all[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SequenceFeatures):
            return NotImplemented
        return self.context == other.context and self.sequence == other.sequence

    __hash__ = None  # type: ignore[assignment]  # (a mapping: unhashable, as dict)

    def __repr__(self) -> str:
        return f"SequenceFeatures(context={self.context!r}, sequence={self.sequence!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (SequenceFeatures, (self.context, self.sequence))


def _check_keys(
    context: Mapping[str, FeatureSpec], sequence: Mapping[str, FeatureSpec], dense: list[str]
) -> None:
    both = sorted(set(context) & set(sequence))
    if both:
        raise InvalidArgumentError(
            f"{both[0]!r} is both a context and a sequence feature: a batch holds both "
            "parts in one dict, so one key cannot name two features. Leave one out (read "
            "it with a second dataset), or, for a RaggedFeature, give it another name "
            f"and value_key={both[0]!r}"
        )
    for name in dense:
        key = lengths_key(name)
        if key in context or key in sequence:
            raise InvalidArgumentError(
                f"sequence feature {name!r}'s step counts are the batch's {key!r} entry, "
                f"which is also a feature name: leave that feature out, or, for a "
                f"RaggedFeature, give it another name and value_key={key!r}"
            )


def flat_batch(
    features: SequenceFeatures,
    context: Mapping[str, Any],
    feature_lists: Mapping[str, Any],
    lengths: Mapping[str, Any],
) -> dict[str, Any]:
    """``parse_sequence_example``'s three outputs as one dict (see the module docstring)."""
    out = {k: context[k] for k in features.context}
    for k in features.sequence:
        out[k] = feature_lists[k]
    for k in features.dense:
        out[lengths_key(k)] = lengths[k]
    return out
