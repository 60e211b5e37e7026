"""``RecordDataset``'s random access and decoding (the methods; the reads are in
:mod:`.dataset` and :mod:`.files`, the decoders in :mod:`.single`, :mod:`.samples` and
``example.batch``): ``ds[i]``, ``ds[list | slice]``, ``ds["column"]``,
``__getitems__`` (PyTorch's and Grain's batched read), the samples iteration yields,
``decoder`` and ``explain_decode``.

``RecordDataset._few`` (the small batches read to be decoded record by record) stays in
:mod:`.dataset` with ``SMALL_BATCH``, which it reads.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..errors import DataLossError, InvalidArgumentError, ParseError
from ..example.single import SingleDecoder
from . import views
from .arguments import record_indices, refuse_record_key
from .explain import DecodePath, explain_decode
from .located import locate
from .samples import sample_of, samples_of
from .spans import HeldSpans, Spans

if TYPE_CHECKING:
    from ..index.sidecar import Index
    from ..records.recovery import DamagePolicy
    from .files import DatasetFiles, FileRecords
    from .output import SampleOutput

__all__ = ["SAMPLES_WALK_MIN", "SAMPLES_WALK_MIN_HELD", "AccessMethods"]

#: From this many records on, ``__getitems__`` cuts samples that are not all scalars
#: from one compiled batch decode; fewer are decoded record by record (one compiled
#: decode of the records joined, then a take per record: ``SingleDecoder.sample_batch``).
#: Where the two cross, over 4 shards, each record read from the file
#: (``python -m benchmarks.bench_thresholds --rows walk --no-random-holds``): ragged
#: records at ~32, tokens and tabular ~48, mixed and wide ~64-80, detection ~64-128,
#: and the two shapes held out of the tuning (captioned images, audio clips) at ~80-96.
SAMPLES_WALK_MIN = 64
#: The same where random reads slice whole-file copies (the dataset within
#: ``IN_MEMORY_LIMIT``, see :mod:`.random_holds`): each record costs the per-record path
#: less, and the crossings move up (``python -m benchmarks.bench_thresholds --rows
#: walk``): ragged ~80, wide ~90, tokens and mixed ~110, tabular ~120, detection past
#: 128, and the held-out shapes past 128.
SAMPLES_WALK_MIN_HELD = 96

IntArray = npt.NDArray[np.int64]

_MODULES: dict[str, Any] = {}


def _example() -> Any:
    # Imported on first use: Example parsing is only needed with ``features=``, and the
    # rest of this module must work without it. Kept: import_module costs ~15 µs a call.
    module = _MODULES.get("example")
    if module is None:
        module = _MODULES["example"] = importlib.import_module("..example", __package__)
    return module


def _example_batch() -> Any:
    module = _MODULES.get("batch")
    if module is None:
        module = _MODULES["batch"] = importlib.import_module("..example.batch", __package__)
    return module


def _sequences() -> Any:
    # SequenceExample datasets (see .sequences), imported when one is made.
    module = _MODULES.get("sequences")
    if module is None:
        module = _MODULES["sequences"] = importlib.import_module(".sequences", __package__)
    return module


_SEQSPECS = __name__.rsplit(".", 2)[0] + ".example.seqspecs"


def _is_sequence(features: object) -> bool:
    """Whether ``features`` are a SequenceExample dataset's specs (a ``SequenceFeatures``:
    none exists before its module is imported, here or by unpickling)."""
    module = sys.modules.get(_SEQSPECS)
    return module is not None and isinstance(features, module.SequenceFeatures)


class AccessMethods:
    """The random-access and decoding methods of :class:`~.dataset.RecordDataset`."""

    if TYPE_CHECKING:  # (what they use of the dataset, which defines them)
        features: Mapping[str, Any] | None
        verify: bool
        on_damage: DamagePolicy
        _files: DatasetFiles | None
        _decoder: Any
        _single: SingleDecoder | None
        _view: views.Selection | None
        _output: SampleOutput | None

        @property
        def indexes(self) -> list[Index]: ...
        def __len__(self) -> int: ...
        def _open(self) -> list[FileRecords]: ...
        def _opened(self) -> DatasetFiles: ...
        def _normalize(self, indices: IntArray) -> IntArray: ...
        def _read_one(self, i: int) -> bytes: ...
        def _records(self, indices: IntArray) -> IntArray: ...
        def _with_view(self, view: views.Selection) -> Any: ...
        def read_raw(self, indices: Sequence[int] | IntArray) -> list[bytes]: ...
        def read_spans(self, indices: Sequence[int] | IntArray) -> Spans | None: ...
        def _few(
            self, key: Sequence[int] | IntArray, *, scalars: bool = True
        ) -> list[bytes] | None: ...
        def _few_held(
            self, key: Sequence[int] | IntArray
        ) -> list[tuple[list[int], HeldSpans]] | None: ...
        def _out_one(self, sample: Any, index: int) -> Any: ...
        def _out_batch(self, batch: Any) -> Any: ...
        def _out_many(self, samples: list[Any], indices: IntArray) -> list[Any]: ...

    @property
    def decoder(self) -> Any:
        """The :class:`~tfrecord_engine.example.batch.BatchDecoder` of ``features``
        (of SequenceExamples: a :class:`~.sequences.SequenceBatchDecoder`).

        Its ``stats`` count the records decoded and how many took the exact path.
        """
        if self.features is None:
            raise InvalidArgumentError("this dataset has no features to decode")
        if self._decoder is None:
            if _is_sequence(self.features):
                self._decoder = _sequences().SequenceBatchDecoder(self.features)
            else:
                self._decoder = _example_batch().BatchDecoder(self.features)
        return self._decoder

    def _parse(self, records: list[bytes]) -> dict[str, Any]:
        return dict(self.decoder.decode_records(records))

    def _decode(self, spans: Spans) -> dict[str, Any]:
        """The batch of the records ``spans``; one that holds an error is decoded by the
        exact path, which raises it (outside any handler: the one error shown)."""
        decoder = self.decoder
        columns = decoder.columns(*spans)
        if columns is None:
            return dict(decoder.decode_exact(spans.records()))
        return dict(decoder.assemble(columns, 0, len(spans.starts)))

    def _single_decoder(self) -> SingleDecoder:
        """The per-record decoder of an Example dataset's ``features`` (never made for
        SequenceExamples: :meth:`_sample` takes a made one for an Example dataset's)."""
        assert self.features is not None
        assert not _is_sequence(self.features)
        single = self._single
        if single is None:
            single = self._single = SingleDecoder(self.features)
        return single

    def _sample(self, record: bytes) -> dict[str, Any]:
        single = self._single  # (made only for Examples: no spec test once it exists)
        if single is None:
            if _is_sequence(self.features):
                return self.decoder.sample(record)  # type: ignore[no-any-return]
            single = self._single_decoder()
        out = single.sample(record)
        if out is not None:
            return out
        # Defaults, unusual specs or encodings, errors: the exact path decides.
        assert self.features is not None
        return sample_of(self.features, _example().parse_single_example(record, self.features))

    def _samples(self, indices: IntArray) -> list[dict[str, Any]]:
        """One sample per record, cut from one batch decode (no per-record parsing)."""
        assert self.features is not None
        if len(indices) == 0:
            return []
        spans = self.read_spans(indices)
        records: list[bytes] | None = None
        if spans is None:
            records = self.read_raw(indices)
            spans = Spans(*_example_batch().join_records(records))
        buf, starts, ends = spans
        decoder = self.decoder
        columns = decoder.columns(buf, starts, ends)
        if _is_sequence(self.features):
            return decoder.samples(columns)  # type: ignore[no-any-return]
        if columns is None:
            # The batch holds an error: the exact path raises it (index within the batch).
            if records is None:
                records = spans.records()
            decoder.decode_exact(records)
            return [self._sample(r) for r in records]  # not reached while exact agrees
        n = len(indices)
        batch = decoder.assemble(columns, 0, n, sparse=False)

        def one(i: int) -> Any:
            return self._sample(buf[int(starts[i]) : int(ends[i])].tobytes())

        return samples_of(self.features, batch, columns, n, one)

    def __getitem__(self, key: int | str | slice | Sequence[int] | IntArray) -> Any:
        """``ds[i]`` -> one record; ``ds[list | slice | ndarray]`` -> a batch.

        With ``features``, one record is a *sample* (see :mod:`tfrecord_engine.data.samples`):
        a dict of numpy values and ``bytes`` that PyTorch's ``default_collate`` batches
        (a scalar string is ``bytes``, a number a numpy scalar, a ``VarLenFeature`` a 1-D
        array), the same as ``ds.__getitems__([i])[0]``. A batch (list, slice or array
        of indices) is a dict of columns exactly as ``tfe.parse_example`` returns it.

        Raises:
            OutOfRangeError: an index outside ``[-len, len)`` (an ``IndexError``).
            InvalidArgumentTypeError: a key that is no int, slice or list of ints
                (``ds[1.0]``; a ``TypeError``).
            ParseError: a record does not match ``features``; it names the file, the
                record and its offset (as damage errors do) and what to do.
        """
        if type(key) is int or isinstance(key, (int, np.integer)):
            try:
                single = self._single
                files = self._files
                if (
                    single is not None
                    and files is not None
                    and files.random_holds
                    and single.takes_held()
                ):
                    # Decoded where it lies in its file's copy in memory, if held there
                    # (random reads', an epoch's, the loader workers' shared copy).
                    i = int(key) if self._view is None else self._view.record(int(key))
                    span = files.held_one(i, self.verify)
                    got = None if span is None else single.sample_at(*span)
                    if got is not None:
                        return self._out_one(got, int(key))
                record = self._read_one(int(key))
                if self.features is None and self._output is None:
                    return record
                out = record if self.features is None else self._sample(record)
                return self._out_one(out, int(key))
            except (ParseError, DataLossError) as exc:
                locate(exc, self, int(key))  # the file, record and offset; a hint
                raise
        if isinstance(key, str):
            return self._column_by_name(key)
        if isinstance(key, slice):
            key = np.arange(len(self), dtype=np.int64)[key]
        elif not isinstance(key, (Sequence, np.ndarray)) or isinstance(key, (bytes, bytearray)):
            raise refuse_record_key(key)
        try:
            if self.features is None:
                return self.read_raw(record_indices(key))
            few = self._few(cast("Sequence[int] | IntArray", key))
            if few is not None:
                columns = self._single_decoder().columns(few)
                if columns is not None:
                    return self._out_batch(columns)
            key = record_indices(key)  # (floats refused, never truncated)
            # Decoded from the buffer the records were read into (no bytes per record).
            spans = self.read_spans(key)
            if spans is None:
                return self._out_batch(self._parse(self.read_raw(key)))
            return self._out_batch(self._decode(spans))
        except (ParseError, DataLossError) as exc:
            locate(exc, self, key)
            raise

    def _column_by_name(self, key: str) -> Any:
        """``ds["label"]``: one feature's values for every record, in order (Hugging
        Face's column access): from the index column when every file's index has it
        (no record is read), else from one read of the feature (see
        :func:`.views.column_by_name`).
        """
        if _is_sequence(self.features):
            return _sequences().sequence_column(self, key)
        return views.column_by_name(self, key)

    def _one(self, record: bytes, i: int) -> Any:
        """What iteration yields for record ``i``; a parse error names its record."""
        try:
            sample = record if self.features is None else self._sample(record)
        except ParseError as exc:
            locate(exc, self, i)
            raise
        return self._out_one(sample, i)

    def __getitems__(self, indices: Sequence[int] | IntArray) -> list[Any]:
        """The records at ``indices`` as a list, one item per record (PyTorch's contract).

        ``torch.utils.data.DataLoader`` calls this with each batch of sampler indices and
        hands the list straight to ``collate_fn``; ``Subset`` and ``random_split``
        forward to it. Raw datasets give ``bytes``; with ``features`` each item is a
        sample as ``ds[i]`` returns it (``default_collate`` batches the fixed-size
        kinds, :func:`tfrecord_engine.collate` every kind). A few records are read and
        decoded record by record (``ds[i]``'s decoder, its compiled part one call for
        them all; a batch decode's set-up costs more for them; where their files are
        held in memory, decoded where they lie, without reading them out): up to ``SMALL_BATCH``
        for specs of a few scalars in records of a few lengths, up to
        ``SAMPLES_WALK_MIN_HELD - 1`` (95) for other specs once the compiled kernels
        are loaded, ``SAMPLES_WALK_MIN - 1`` (63) where random reads go to the files
        (from there on, their compiled batch walk is cheaper). More
        are cut from one batch decode, as fast as ``ds[indices]``, which returns the
        columnar batch dict.

        Raises:
            OutOfRangeError: an index outside ``[-len, len)`` (an ``IndexError``).
            ParseError: a record does not match ``features`` (it names the file, the
                record and its offset).
        """
        idx = record_indices(indices)  # (floats refused, never truncated)
        try:
            if self.features is None:
                return self._out_many(self.read_raw(idx), idx)
            walk = self._walk_beats_single(len(idx))
            if not walk and kernels.ready():
                held = self._few_held(idx)
                if held is not None:
                    samples = self._held_samples(held, len(idx))
                    if samples is not None:
                        return self._out_many(samples, idx)
            few = None if walk else self._few(idx, scalars=False)
            if few is not None:
                single = self._single_decoder()
                samples = (
                    single.sample_batch(few)
                    if kernels.ready()
                    else single.samples(few)
                    if single.scalars
                    else single.sample_list(few)
                )
                if samples is not None:
                    return self._out_many(samples, idx)
            self._open()
            return self._out_many(self._samples(self._normalize(idx)), idx)
        except (ParseError, DataLossError) as exc:
            locate(exc, self, idx)
            raise

    def _held_samples(
        self, groups: list[tuple[list[int], HeldSpans]], count: int
    ) -> list[Any] | None:
        """The samples of a small batch whose records lie in their files' copies in
        memory, decoded from those copies file by file (``SingleDecoder.sample_spans``:
        a record is copied only into its values), in the order asked; ``None`` where
        the per-record decoder leaves a record to the exact path."""
        single = self._single_decoder()
        out: list[Any] = [None] * count
        for places, spans in groups:
            got = single.sample_spans(*spans)
            if got is None:
                return None
            for k, sample in zip(places, got, strict=True):
                out[k] = sample
        return out

    def explain_decode(self, batch_size: int = 256) -> DecodePath:
        """Which decode path this dataset's batches of ``batch_size`` take and why, with
        what its decoder did so far (see :func:`tfrecord_engine.explain_decode`)."""
        return explain_decode(self, batch_size=batch_size)

    def _walk_beats_single(self, n: int) -> bool:
        """Whether ``n`` samples are cheaper cut from one batch decode (the compiled
        walk, once the kernels are loaded) than decoded record by record: from
        ``SAMPLES_WALK_MIN`` records on, for the specs ``SingleDecoder.prefers_walk``
        names (not all scalars; scalars of many keys or of varied record lengths);
        ``SAMPLES_WALK_MIN_HELD`` where random reads slice whole-file copies."""
        files = self._files
        held = files is not None and files.random_holds
        return (
            n >= (SAMPLES_WALK_MIN_HELD if held else SAMPLES_WALK_MIN)
            and not _is_sequence(self.features)
            and self._single_decoder().prefers_walk
            and kernels.ready()
        )

    def _getitems(self, indices: Sequence[int] | IntArray) -> list[Any]:
        """Grain's batched read hook: the same list of records as :meth:`__getitems__`."""
        return self.__getitems__(indices)
