"""What a dataset hands out: its ``transform=`` applied per sample, in its output format.

:class:`SampleOutput` is the last step of ``RecordDataset.__getitem__`` (one record),
``__getitems__`` (a DataLoader's batch of samples, in its worker processes) and
iteration: the sample goes through the user's ``transform`` (PyTorch's habit: the
function a ``torchvision`` dataset takes), then its numeric values become the format's
arrays (``with_format``). Columnar batches (``ds[list]``, ``batches()``) are converted
to the format only: a per-sample transform has no sample there.

The transform sees the sample as decoding made it (numpy values, ``bytes``; see
:mod:`.samples`) and may return anything; what it returns is converted where it holds
numpy arrays (tensors it made stay as they are). The variable-length values of a sample
stay typed numpy arrays in every format (see :mod:`.varlen`), so that the collate
function, PyTorch's default one included, can pad a batch of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgumentError
from ..example.specs import FixedLenSequenceFeature, RaggedFeature, SparseFeature, VarLenFeature
from ..example.varlen import VARIABLE
from .collate import teach_default_collate
from .formats import Format, convert, normalize_format

__all__ = ["SampleOutput", "check_transform", "has_variable", "sample_output"]

Transform = Callable[[Any], Any]
_VARIABLE_SPECS = (VarLenFeature, RaggedFeature, FixedLenSequenceFeature, SparseFeature)


def check_transform(transform: object, what: str = "transform") -> Transform | None:
    """``transform`` if it is ``None`` or callable, else a clear error."""
    if transform is not None and not callable(transform):
        raise InvalidArgumentError(
            f"{what} must be a function taking one sample (or None), got {transform!r}"
        )
    return transform


def has_variable(features: Mapping[str, Any] | None) -> bool:
    """Whether samples of ``features`` hold variable-length values (see :mod:`.varlen`)."""
    return features is not None and any(isinstance(f, _VARIABLE_SPECS) for f in features.values())


@dataclass(frozen=True, slots=True)
class SampleOutput:
    """A dataset's per-sample ``transform`` and output ``format``.

    >>> import numpy as np
    >>> out = SampleOutput(lambda s: {"x2": s["x"] * 2}, "numpy")
    >>> out.one({"x": np.int64(3)}, 0)
    {'x2': np.int64(6)}
    """

    transform: Transform | None
    format: Format

    @property
    def identity(self) -> bool:
        """True when samples and batches are handed out as decoded."""
        return self.transform is None and self.format == "numpy"

    def one(self, sample: Any, index: int) -> Any:
        """Record ``index``'s sample, transformed and converted."""
        teach_default_collate()
        if self.transform is not None:
            sample = _apply(self.transform, sample, index)
        return convert(sample, self.format, keep=VARIABLE)

    def many(self, samples: list[Any], indices: Iterable[int]) -> list[Any]:
        """The samples of ``indices``, each transformed and converted."""
        teach_default_collate()
        if self.transform is not None:
            transform = self.transform
            samples = [_apply(transform, s, i) for s, i in zip(samples, indices, strict=True)]
        if self.format == "numpy":
            return samples
        return [convert(s, self.format, keep=VARIABLE) for s in samples]

    def batch(self, batch: Any) -> Any:
        """A columnar batch (``ds[list]``, ``batches()``) in the output format."""
        return convert(batch, self.format)


def _apply(transform: Transform, sample: Any, index: int) -> Any:
    try:
        return transform(sample)
    except Exception as exc:
        # The user's own error, unchanged; the note says which record it was about.
        note = getattr(exc, "add_note", None)
        if note is not None:
            note(f"(in the transform= of a RecordDataset, applied to record {index})")
        raise


def sample_output(transform: Transform | None, fmt: object) -> SampleOutput | None:
    """The output step of a dataset, or ``None`` when it hands out what it decodes."""
    out = SampleOutput(check_transform(transform), normalize_format(fmt))
    return None if out.identity else out
