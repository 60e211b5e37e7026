"""The types of variable-length values in per-record samples.

A sample's ``VarLenFeature``, ``RaggedFeature`` (without partitions) and
``FixedLenSequenceFeature`` value is a :class:`VarLenArray`: a numpy array in every
respect, whose type says that records differ in its length. String values of those
features are a :class:`VarLenList` of ``bytes``. Collate functions recognise them (and
:class:`~tfrecord_engine.RaggedValue` / :class:`~tfrecord_engine.SparseValue`) by type,
so a batch of them is always padded (:func:`tfrecord_engine.collate`), even a batch
whose lengths happen to agree: the output's form depends on the spec, not on the batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .values import RaggedValue, SparseValue

__all__ = ["VARIABLE", "VarLenArray", "VarLenList", "varlen_array"]


class VarLenArray(np.ndarray):
    """One record's values of a variable-length numeric feature (a plain ``ndarray``
    otherwise: every numpy and PyTorch function takes it).

    >>> import numpy as np
    >>> v = varlen_array(np.array([1, 2]))
    >>> isinstance(v, np.ndarray), v.tolist()
    (True, [1, 2])
    """


class VarLenList(list):  # type: ignore[type-arg]
    """One record's ``bytes`` values of a variable-length string feature.

    >>> VarLenList([b"a", b"b"]) == [b"a", b"b"]
    True
    """


def varlen_array(values: npt.NDArray[Any]) -> VarLenArray:
    """``values`` (not copied) typed as a :class:`VarLenArray`."""
    return values.view(VarLenArray)


#: The sample value types that collate functions pad (or keep as lists of rows).
VARIABLE: tuple[type, ...] = (VarLenArray, VarLenList, RaggedValue, SparseValue)
