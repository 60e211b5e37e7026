"""``RecordDataset``'s index columns and views (the methods; the work is in
:mod:`.views`): ``index_column``, ``select``, ``filter``, ``where``, ``take``, ``skip``,
``train_test_split``. Each view is a dataset of its own over the same files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import numpy.typing as npt

from . import views

_D = TypeVar("_D", bound="ViewMethods")

__all__ = ["ViewMethods"]


class ViewMethods:
    """The index-column and view methods of :class:`~.dataset.RecordDataset` (which
    implements what :class:`.views.ViewSource` asks of a dataset)."""

    def _source(self) -> views.ViewSource:
        # (Only RecordDataset mixes this in; it is a views.ViewSource, and each view
        # function returns a dataset of the type it is given: _D below.)
        return cast(views.ViewSource, self)

    def index_column(self, name: str, missing: Any = views.RAISE) -> npt.NDArray[Any]:
        """The values of index column ``name`` for every record, in dataset order, read
        from the files' indexes (no record is read).

        Index columns are written with the data (``TFRecordWriter(..., index=True,
        index_columns=["label"])``) or built (``tfr index --columns label``,
        ``Index.build(path, columns=[...])``): see ``docs/index-columns.md``.

        Args:
            name: the column (a scalar int64 or bytes feature).
            missing: the value for records without exactly one value of the column;
                by default such a record raises.

        Returns:
            ``int64`` array, or an object array of ``bytes``.

        Raises:
            ExampleParseError: a record has no single value (missing, a list of
                another length, another kind, not an Example) and ``missing`` is not
                given: it names the file, the record and its offset.
            InvalidArgumentError: a file's index has no such column (the message says
                how to add it).

        Example:
            >>> import os, tempfile, tfrecord_engine as tfe
            >>> path = os.path.join(tempfile.mkdtemp(), "c.tfrecord")
            >>> with tfe.TFRecordWriter(path, index=True, index_columns=["label"]) as w:
            ...     w.write_many(tfe.encode_example({"label": [i % 3]}) for i in range(5))
            5
            >>> tfe.RecordDataset(path).index_column("label")
            array([0, 1, 2, 0, 1])
        """
        return views.index_column(self._source(), name, missing)

    def select(self: _D, indices: Sequence[int] | npt.NDArray[Any] | slice) -> _D:
        """A view of the records at ``indices`` (ints, a boolean mask or a slice), in
        that order: a dataset of its own (see :mod:`.views`).

        >>> import os, tempfile, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "v.tfrecord")
        >>> with tfe.TFRecordWriter(path, index=True) as w:
        ...     w.write_many([b"a", b"b", b"c", b"d"])
        4
        >>> view = tfe.RecordDataset(path).select([3, 1])
        >>> len(view), view[0], list(view.batches(2))
        (2, b'd', [[b'd', b'b']])
        """
        return cast(_D, views.select(self._source(), indices))

    def filter(
        self: _D,
        predicate: Callable[[Any], Any],
        columns: str | Sequence[str],
        *,
        missing: Any = views.RAISE,
    ) -> _D:
        """A view of the records whose ``columns`` ``predicate`` accepts (vectorized:
        it gets the column array, or a dict of them, and returns a boolean array).
        From the index columns when every file's index has them (no record is read),
        else from one read of the records. ``missing`` as for :meth:`index_column`.

        >>> import os, tempfile, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "f.tfrecord")
        >>> with tfe.TFRecordWriter(path, index=True, index_columns=["y"]) as w:
        ...     w.write_many(tfe.encode_example({"y": [i]}) for i in range(6))
        6
        >>> len(tfe.RecordDataset(path).filter(lambda y: y % 2 == 0, "y"))
        3
        """
        return cast(_D, views.filter_records(self._source(), predicate, columns, missing))

    def where(self: _D, **conditions: Any) -> _D:
        """A view of the records whose columns equal the given values (a list, tuple,
        set or array: any of them): ``ds.where(label=3)``, ``ds.where(label=[1, 2])``.
        A record without a value of a column never matches. Columns as for
        :meth:`filter`."""
        return cast(_D, views.where(self._source(), conditions))

    def take(self: _D, n: int) -> _D:
        """A view of the first ``n`` records (``-1``: all), as ``tf.data``'s ``take``."""
        return cast(_D, views.take(self._source(), n))

    def skip(self: _D, n: int) -> _D:
        """A view of the records after the first ``n`` (``-1``: none), as
        ``tf.data``'s ``skip``."""
        return cast(_D, views.skip(self._source(), n))

    def train_test_split(
        self: _D,
        test_size: float | None = None,
        train_size: float | None = None,
        *,
        seed: int = 0,
        shuffle: bool = True,
        stratify_by_column: str | None = None,
    ) -> tuple[_D, _D]:
        """``(train, test)`` views, disjoint and of exact sizes, as Hugging Face's
        ``train_test_split`` (see :func:`.views.train_test_split`).

        >>> import os, tempfile, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "s.tfrecord")
        >>> with tfe.TFRecordWriter(path, index=True) as w:
        ...     w.write_many([bytes([i]) for i in range(10)])
        10
        >>> train, test = tfe.RecordDataset(path).train_test_split(test_size=0.2, seed=0)
        >>> len(train), len(test)
        (8, 2)
        """
        split = views.train_test_split(
            self._source(),
            test_size,
            train_size,
            seed=seed,
            shuffle=shuffle,
            stratify_by_column=stratify_by_column,
        )
        return cast(_D, split[0]), cast(_D, split[1])
