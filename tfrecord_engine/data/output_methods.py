"""``RecordDataset``'s output methods (the work is in :mod:`.output`): the sample
``transform``, the array ``format`` (``with_format``, ``with_transform``), and how
samples and batches pass through both on their way out."""

from __future__ import annotations

from collections.abc import Callable, Sized
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from .collate import teach_default_collate, worker_samples
from .output import SampleOutput, check_transform

_D = TypeVar("_D", bound="OutputMethods")
IntArray = npt.NDArray[np.int64]

__all__ = ["OutputMethods"]


class OutputMethods:
    """The output methods of :class:`~.dataset.RecordDataset` (which sets ``_output``
    and makes copies with ``_copy``)."""

    _output: SampleOutput | None

    def _copy(self, **changes: Any) -> Any:
        """A copy of the dataset with ``changes`` to its pickled state (the dataset's)."""
        raise NotImplementedError

    def _size(self) -> int:
        return len(cast(Sized, self))

    @property
    def transform(self) -> Callable[[Any], Any] | None:
        """The function applied to every sample handed out (``None``: none)."""
        return None if self._output is None else self._output.transform

    @property
    def format(self) -> str:
        """The output format: ``"numpy"`` (as decoded), ``"torch"`` or ``"jax"``."""
        return "numpy" if self._output is None else self._output.format

    def with_format(self: _D, format: str | None) -> _D:
        """A copy of this dataset whose samples and batches are ``format``'s arrays.

        ``"torch"`` (tensors), ``"jax"`` (``jax.numpy`` arrays) or ``"numpy"``/``None``
        (as decoded), as Hugging Face's ``with_format``: ``ds[i]``, ``ds[list]``,
        iteration, ``__getitems__`` and :meth:`batches` convert every numeric array;
        strings stay ``bytes``. The variable-length values of a sample stay typed numpy
        arrays, which every collate (PyTorch's default one too) pads into a
        :class:`~tfrecord_engine.PaddedValue` of the loader's tensors. The copy shares
        the files, indexes, ``transform`` and epoch count; this dataset is unchanged.

        Example:
            >>> import os, tempfile, tfrecord_engine as tfe
            >>> path = os.path.join(tempfile.mkdtemp(), "f.tfrecord")
            >>> with tfe.TFRecordWriter(path, index=True) as w:
            ...     w.write_many([tfe.encode_example({"x": [i]}) for i in range(3)])
            3
            >>> ds = tfe.RecordDataset(path, {"x": tfe.FixedLenFeature([], "int64")})
            >>> ds.with_format("torch")[[0, 2]]["x"]
            tensor([0, 2])
        """
        return cast(_D, self._copy(format=format))

    def with_transform(self: _D, transform: Callable[[Any], Any] | None) -> _D:
        """A copy of this dataset with ``transform`` (see the class's ``transform=``)."""
        return cast(_D, self._copy(transform=check_transform(transform)))

    def _out_one(self, sample: Any, index: int) -> Any:
        if self._output is not None:
            return self._output.one(sample, index if index >= 0 else index + self._size())
        teach_default_collate()  # (a ConcatDataset's loader collates ds[i] samples)
        return sample

    def _out_batch(self, batch: Any) -> Any:
        return batch if self._output is None else self._output.batch(batch)

    def _out_many(self, samples: list[Any], indices: IntArray) -> list[Any]:
        if self._output is None:
            teach_default_collate()  # (the loader's default_collate pads our VarLen kinds)
            # (In a loader worker, a batch of many numbers crosses as one block.)
            return worker_samples(samples)
        n = self._size()
        return self._output.many(samples, [i + n if i < 0 else i for i in indices.tolist()])
