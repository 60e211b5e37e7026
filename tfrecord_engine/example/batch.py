"""The lockstep batch decoder: ``parse_example`` for whole batches, straight from a buffer.

:class:`BatchDecoder` decodes every record of a batch at once with numpy
(:mod:`.lockstep`): structure walked in lockstep, keys matched as byte arrays, packed
int64 decoded with vectorized 7-bit arithmetic, packed float32 as one gather and a view.
Records the fast path cannot take (concatenated Examples, unknown fields, unpacked
lists, duplicate keys, anything malformed) are decoded by the exact per-record path and
merged back in place (the walks and that merge: :mod:`.batchwalk`);
:attr:`BatchDecoder.stats` counts them. Outputs are assembled by
the same code as the exact path (:mod:`.assemble`). Whenever a batch would raise — a
type mismatch, a malformed record — the whole batch is handed to the exact path, which
raises exactly what ``parse_example`` raises.
"""

from __future__ import annotations

import collections
import itertools
import logging
import pickle
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..errors import TFRecordError
from ..kernels import examples as kernel_examples
from . import batchwalk, dense, merging, template
from .assemble import assemble
from .batchwalk import Decoded
from .columns import Column
from .decode_stats import DecodeStats
from .names import example_name_list, named_errors
from .parse import _plan, parse_single_example
from .parse import parse_example as parse_example_exact
from .records import Request, tensor_value, to_records
from .specs import FeatureSpec, FixedLenFeature, RawFeature, VarLenFeature, as_feature_specs

__all__ = [
    "BatchDecoder",
    "Columns",
    "DecodeStats",
    "join_records",
    "parse_example",
]

I64 = npt.NDArray[np.int64]
_LOG = logging.getLogger(__name__)  # under "tfrecord_engine": DEBUG lines on fallbacks
Columns = dict[str, Column]
#: Batches at least this large are always batch-decoded by :func:`parse_example`
#: (smaller ones from ``TEMPLATE_MIN_RECORDS`` on when learnt templates take them).
LOCKSTEP_MIN_BATCH = 1024
#: With the compiled kernels, batches at least this large are batch-decoded by
#: :func:`parse_example` (the compiled walk's set-up costs ~30-40 µs a feature; the
#: exact path ~15-30 µs a record).
WALK_MIN_RECORDS = 12
#: Chunks at least this large try template decoding (:mod:`.template`) first.
TEMPLATE_MIN_RECORDS = 64
#: Layouts remembered across chunks, and the most new ones built per chunk.
MAX_TEMPLATES = 8
MAX_NEW_TEMPLATES = 3
#: After a chunk that templates barely helped, this many chunks skip them (a smaller
#: chunk counts as its share of one, see template.TemplateCosts.share).
TEMPLATE_RETRY_CHUNKS = 16


_Delegate = merging.Delegate  # (internal: this batch goes to the exact path, which raises)


class BatchDecoder:
    """Decodes batches of serialized Examples against fixed feature specs.

    Args:
        features: feature key -> spec, as for :func:`parse_example`.
        compiled_plan: when every spec is an int64 / float32 ``FixedLenFeature`` and the
            compiled kernels are enabled, decode with one compiled pass per batch
            (:mod:`.dense`); False keeps the template and lockstep paths.

    Example:
        >>> from tfrecord_engine.example.encode import encode_example
        >>> from tfrecord_engine.example.specs import FixedLenFeature
        >>> dec = BatchDecoder({"x": FixedLenFeature([2], "int64")})
        >>> dec.decode_records([encode_example({"x": [1, 2]}), encode_example({"x": [3, 4]})])["x"]
        array([[1, 2],
               [3, 4]])
    """

    def __init__(self, features: Mapping[str, FeatureSpec], *, compiled_plan: bool = True) -> None:
        self.features = dict(as_feature_specs(features))
        self._requests: dict[str, Request] = _plan(self.features)
        self._order = list(self._requests.values())
        self._keys = [r.raw_key for r in self._order]
        self._kinds = [r.kind for r in self._order]
        self._fusion: batchwalk.Fusion | None = None
        # Bytes per value of each RawFeature key (None for other keys, and for a
        # fixed_length, whose values may have any size): their values are gathered as
        # uint8 rows, never as bytes objects (see :mod:`.raw`).
        self._widths = [
            spec.nbytes
            if isinstance(spec := self.features.get(r.key), RawFeature)
            and spec.fixed_length is None
            else None
            for r in self._order
        ]
        self._templates: list[template.Template] = []
        self._table: kernel_examples.KeyTable | None = None  # (the compiled walk's)
        # Chunks (or shares of one, see TemplateCosts.share) left to walk without
        # trying templates.
        self._skip_templates = 0.0
        self._costs = template.TemplateCosts()  # whether templates pay off on these files
        self._dense = all(type(f) in (FixedLenFeature, RawFeature) for f in self.features.values())
        #: Leave template-decoded FixedLenFeature string values as ``V<size>`` arrays (the
        #: bytes objects are made later, by whoever receives them: decode workers ship
        #: the rows and the parent makes the objects once). Outputs then hold such
        #: arrays (``tfrecord_engine.data.procpool`` converts them).
        self.defer_bytes = False
        #: Leave the string values of the compiled dense plan (:mod:`.dense`) as rows
        #: (:mod:`.string_rows`) where they allow it: outputs then hold string features
        #: as rows or as ``bytes`` objects, batch by batch (the tf.data bridge asks for
        #: them and takes both).
        self.string_rows = False
        self._deferrable = {
            key
            for key, f in self.features.items()
            if type(f) is FixedLenFeature and f.dtype == "string"
        }
        self.stats = DecodeStats()
        # The compiled plan of an all-int64/float32 FixedLenFeature spec (None without
        # numba, or for other specs): built on first use.
        self._dense_plan: dense.DensePlan | bool | None = compiled_plan and dense.eligible(
            self.features
        )

    def _compiled_plan(self) -> dense.DensePlan | None:
        if self.defer_bytes and self._deferrable:
            # Decode workers: string values that one template takes whole ship as rows
            # (``V<size>``) and become bytes in the parent; the plan makes bytes here.
            return None
        plan = self._dense_plan
        if plan is True:
            if not kernels.ready():  # (loading in the background: the other paths serve)
                return None
            plan = self._dense_plan = dense.DensePlan.of(self.features, self._requests)
        return plan or None

    def _decode_dense(
        self, buf: npt.NDArray[np.uint8], starts: I64, ends: I64
    ) -> dict[str, Any] | None:
        """Outputs by the compiled plan (:mod:`.dense`), or None where it does not apply.

        Raises:
            _Delegate: the batch holds an error (the exact path raises it).
        """
        plan = self._compiled_plan()
        if plan is None:
            return None
        try:
            done = plan.decode_counted(buf, starts, ends, rows=self.string_rows)
        except dense.NeedsExact:
            raise _Delegate from None
        if done is None:
            return None
        out, slow = done
        self.stats.count("fallback_records", slow)
        return out

    def decode_records(self, records: Sequence[bytes]) -> dict[str, Any]:
        """Decodes a list of serialized Examples (joined into one buffer first)."""
        plan = self._compiled_plan() if self._dense_plan is not False else None
        if plan is not None:
            self.stats.count("records", len(records))
            try:
                done = plan.decode_records(records)
                exact = False
            except dense.NeedsExact:
                exact = True
            if exact:
                # Outside the handler: the error it raises is the only one shown.
                self._exact_batch()
                return self.decode_exact(records)
            if done is not None:
                self.stats.count("fallback_records", done[1])
                return done[0]
            self.stats.records -= len(records)
        buf, starts, ends = join_records(records)
        return self.decode(buf, starts, ends, records=records)

    def decode(
        self,
        buf: npt.NDArray[np.uint8],
        starts: I64,
        ends: I64,
        records: Sequence[bytes] | None = None,
    ) -> dict[str, Any]:
        """Decodes the Examples at ``buf[starts[i]:ends[i]]`` (half-open spans).

        Args:
            buf: the bytes, e.g. ``np.frombuffer(mmap, np.uint8)`` (not copied).
            starts, ends: int64 spans of each serialized Example within ``buf``.
            records: the same records as bytes, if the caller has them (saves copies
                when a batch must be parsed by the exact path).

        Raises:
            ExampleParseError / MalformedExampleError: exactly as :func:`parse_example`.
        """
        if self._dense_plan is not False:
            self.stats.count("records", int(starts.shape[0]))
            delegated = False
            try:
                out = self._decode_dense(buf, starts, ends)
            except _Delegate:
                delegated = True
            if delegated:
                # (Outside the handler: an error of the exact path is raised alone, not
                # chained to the _Delegate that sent the batch there.)
                self._exact_batch()
                return self.decode_exact(_records_of(buf, starts, ends, records))
            if out is not None:
                return out
            self.stats.records -= int(starts.shape[0])
        columns = self.columns(buf, starts, ends)
        if columns is None:
            return self.decode_exact(_records_of(buf, starts, ends, records))
        return self.assemble(columns, 0, int(starts.shape[0]))

    def columns(self, buf: npt.NDArray[np.uint8], starts: I64, ends: I64) -> Columns | None:
        """Decodes a chunk into per-key columns, or ``None`` if it holds an error.

        Slice the columns into batches with :meth:`assemble`; a ``None`` chunk must be
        parsed batch by batch with :meth:`decode_exact`, which raises the error for the
        batch that holds it (with its index within that batch).
        """
        self.stats.count("records", int(starts.shape[0]))
        try:
            if self._dense_plan is not False:
                out = self._decode_dense(buf, starts, ends)
                if out is not None:
                    return merging.dense_columns(out)
            return self._columns(buf, starts, ends)
        except _Delegate:
            self._exact_batch()
            return None

    def assemble(
        self, columns: Columns, start: int, stop: int, *, sparse: bool = True
    ) -> dict[str, Any]:
        """Outputs for records ``[start, stop)`` of a decoded chunk, as one batch.

        ``sparse=False`` leaves the ``VarLenFeature`` outputs out (their sparse indices
        are the costly part, and raise nothing): a caller cutting per-record samples takes
        those values from the columns (:func:`~..data.samples.samples_of`).
        """
        n = next(iter(columns.values())).counts.shape[0]
        if start == 0 and stop == n:
            part = columns
        else:
            part = {k: c.slice(start, stop) for k, c in columns.items()}
        features = self.features
        if not sparse:
            features = {k: s for k, s in features.items() if not isinstance(s, VarLenFeature)}
        return assemble(features, part.__getitem__, single=False)

    def assemble_batches(
        self, columns: Columns, bounds: Sequence[int]
    ) -> list[dict[str, Any] | TFRecordError]:
        """Outputs of batches ``[bounds[i], bounds[i+1])`` of a chunk, or each one's error.

        When every feature is a :class:`FixedLenFeature` or :class:`RawFeature`, each
        batch's outputs are row slices of the whole chunk's, so the chunk is assembled
        once and sliced (views);
        if that raises, batches are assembled one by one so the error is the batch's own.
        """
        if self._dense and len(bounds) > 2:
            try:
                whole = self.assemble(columns, bounds[0], bounds[-1])
            except TFRecordError:
                pass
            else:
                base = bounds[0]
                return [
                    {k: v[a - base : b - base] for k, v in whole.items()}
                    for a, b in itertools.pairwise(bounds)
                ]
        return [self._assemble_or_error(columns, a, b) for a, b in itertools.pairwise(bounds)]

    def _assemble_or_error(
        self, columns: Columns, start: int, stop: int
    ) -> dict[str, Any] | TFRecordError:
        try:
            return self.assemble(columns, start, stop)
        except TFRecordError as exc:
            return exc

    def _exact_batch(self) -> None:
        """Counts (and logs at DEBUG) a batch handed whole to the exact path."""
        self.stats.count("exact_batches", 1)
        _LOG.debug(
            "decode: a batch holds an error (or a record the fast paths cannot place): "
            "the exact path parses it and raises TensorFlow's error"
        )

    def try_templates(self, records: int | None = None) -> bool:
        """Whether the next chunk (of ``records``) tries templates (counts a skipped
        chunk, or its share of one, if not).

        :func:`parse_example` asks before decoding a mid-size batch, which pays off only
        when templates take (nearly) all of it.
        """
        return not self._skipping(records)

    def _skipping(self, records: int | None) -> bool:
        """Whether templates are skipped for a chunk of ``records`` (then counted)."""
        if self._skip_templates <= 0:
            return False
        self._skip_templates = max(0.0, self._skip_templates - self._costs.share(records))
        return True

    def decode_exact(self, records: Sequence[bytes]) -> dict[str, Any]:
        """The exact per-record path (:func:`parse_example`), for batches that raise."""
        return parse_example_exact(list(records), self.features)

    def _columns(self, buf: npt.NDArray[np.uint8], starts: I64, ends: I64) -> Columns:
        """Template groups first (records sharing one layout), the lockstep walk for the rest."""
        n = int(starts.shape[0])
        if n < TEMPLATE_MIN_RECORDS:
            return self._walk_columns(buf, starts, ends)
        if self._skipping(n):
            return self._walk_columns(buf, starts, ends)
        tried = self._costs.choose(n)
        began = time.perf_counter()
        out = self._template_columns(buf, starts, ends) if tried else None
        if out is None:
            out = self._walk_columns(buf, starts, ends)
        self._costs.record(tried, time.perf_counter() - began, n)
        return out

    def _template_columns(
        self, buf: npt.NDArray[np.uint8], starts: I64, ends: I64
    ) -> Columns | None:
        """Template groups merged with the walk of the rest (None: no template took any)."""
        n = int(starts.shape[0])
        groups, rest = self._match_templates(buf, starts, ends)
        if rest.size * 8 > n * 7:
            # Templates took under an eighth: records vary too much here (ragged
            # lists, free text). Walk the next chunks without trying, then retry.
            self._skip_templates = float(TEMPLATE_RETRY_CHUNKS)
        if not groups:
            return None
        walked = self._walk_columns(buf, starts[rest], ends[rest]) if rest.size else None
        self.stats.count("template_records", n - int(rest.size))
        return {
            req.key: merging.merge_groups(
                buf,
                starts,
                ends,
                i,
                kind=req.kind,
                width=self._widths[i],
                groups=groups,
                rest=rest,
                walked=walked,
                key=req.key,
                as_void=self.defer_bytes and req.key in self._deferrable,
            )
            for i, req in enumerate(self._order)
        }

    def _match_templates(
        self, buf: npt.NDArray[np.uint8], starts: I64, ends: I64
    ) -> tuple[list[template.Group], npt.NDArray[np.intp]]:
        """Groups of records matching a template, and the positions matching none.

        Layouts seen in earlier chunks come first (a file keeps its few layouts), then
        new ones built from the first record no template took: a fixed layout first,
        a flexible one (one int64 list of varying length) when a fixed one takes less
        than an eighth of the chunk.
        """
        n = int(starts.shape[0])
        groups: list[template.Group] = []
        rest = np.arange(n)
        known = list(self._templates)
        used: list[template.Template] = []
        fresh = 0
        flexible = False
        while rest.size and (known or fresh < MAX_NEW_TEMPLATES):
            built = not known
            j = int(rest[0])
            if known:
                tpl: template.Template | None = known.pop(0)
            else:
                tpl = template.build_template(
                    buf, int(starts[j]), int(ends[j]), self._keys, self._kinds, flexible=flexible
                )
                fresh += 1
            if tpl is None:
                break  # this record cannot be a template: the walk takes the rest
            group = template.match_template(buf, starts[rest], ends[rest], tpl)
            if built and not tpl.flexible and group.pos.size * 8 < rest.size * 7:
                # A fixed layout that leaves much behind: one flexible template over
                # the same record may take (nearly) all, sparing a merge of groups.
                flex = template.build_template(
                    buf, int(starts[j]), int(ends[j]), self._keys, self._kinds, flexible=True
                )
                if flex is not None:
                    wide = template.match_template(buf, starts[rest], ends[rest], flex)
                    if wide.pos.size > group.pos.size:
                        tpl, group = flex, wide
            if group.pos.size == 0:
                continue
            groups.append(replace(group, pos=rest[group.pos]))
            used.append(tpl)
            keep = np.ones(rest.size, np.bool_)
            keep[group.pos] = False
            rest = rest[keep]
            if built and group.pos.size * 8 < n:
                if tpl.flexible:
                    break  # layouts vary too much here for more templates to pay off
                flexible = True
        self._templates = (used + [t for t in self._templates if t not in used])[:MAX_TEMPLATES]
        return groups, rest

    def _walk_columns(self, buf: npt.NDArray[np.uint8], starts: I64, ends: I64) -> Columns:
        """The columns of records no template took, by a walk (:mod:`.batchwalk`)."""
        walked = self._compiled_lists(buf, starts, ends)
        if walked is None:
            walked = batchwalk.lockstep_lists(
                buf, starts, ends, self._keys, order=self._order, widths=self._widths
            )
        fallback, decoded = walked
        out, fb = batchwalk.merged_columns(
            buf,
            starts,
            ends,
            fallback,
            decoded,
            order=self._order,
            widths=self._widths,
            requests=self._requests,
        )
        self.stats.count("fallback_records", int(fb.size))
        if fb.size and _LOG.isEnabledFor(logging.DEBUG):
            _LOG.debug(
                "decode: %d of %d records are not in the canonical layout (the first: "
                "record %d of the batch): the exact per-record path decoded them "
                "(tfe.explain_decode says which paths a spec takes)",
                fb.size,
                int(starts.shape[0]),
                int(fb[0]),
            )
        return out

    def _key_table(self) -> kernel_examples.KeyTable | None:
        """The spec's keys hashed for the compiled walk (None until the kernels load)."""
        if self._table is None and kernels.ready():
            self._table = kernel_examples.key_table(self._keys)
        return self._table

    def _compiled_lists(
        self, buf: npt.NDArray[np.uint8], starts: I64, ends: I64
    ) -> tuple[npt.NDArray[np.bool_], list[Decoded]] | None:
        """Each key's values by the compiled walk, or None without the kernels."""
        table = self._key_table()
        walk = None if table is None else kernel_examples.walk_examples(buf, starts, ends, table)
        if walk is None:
            return None
        self.stats.count("walked_records", int(starts.shape[0]))
        if self._fusion is None:
            self._fusion = batchwalk.fused_layout(self._kinds, self._widths)
        return batchwalk.walked_lists(buf, walk, self._kinds, self._widths, self._fusion)


def join_records(records: Sequence[bytes]) -> tuple[npt.NDArray[np.uint8], I64, I64]:
    """One buffer holding ``records`` back to back, with each record's (start, end)."""
    lengths = np.fromiter((len(r) for r in records), np.int64, len(records))
    ends = np.cumsum(lengths)
    return np.frombuffer(b"".join(records), np.uint8), ends - lengths, ends


def _records_of(
    buf: npt.NDArray[np.uint8], starts: I64, ends: I64, records: Sequence[bytes] | None
) -> Sequence[bytes]:
    if records is not None:
        return records
    mv = buf.data
    return [mv[s:e].tobytes() for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]


def parse_example(
    serialized: Any,
    features: Mapping[str, FeatureSpec],
    example_names: Any = None,
    name: object = None,
) -> dict[str, Any]:
    """Parses a batch of serialized Examples like ``tf.io.parse_example``.

    Batches of at least ``LOCKSTEP_MIN_BATCH`` records go through the batch decoder
    (:class:`BatchDecoder`), and so do batches of ``TEMPLATE_MIN_RECORDS`` or more
    while the record layouts it learnt in earlier calls (per thread and feature spec)
    take them; the results and errors are exactly those of the per-record path
    (:func:`tfrecord_engine.example.parse.parse_example`), which it falls back to.

    Args:
        serialized: a list, tuple or 1-D array of serialized Examples (a single
            ``bytes`` is parsed like :func:`parse_single_example`, as TensorFlow does
            for a scalar).
        features: feature key -> spec: ours, or ``tf.io``'s own spec objects
            (converted by duck typing, see :func:`~.specs.as_feature_specs`).
        example_names: one name per record (or ``None``): an error about a record
            names it (``Name: <name>, ...`` instead of ``Name: <unknown>``), as in
            TensorFlow.
        name: TensorFlow's op name; accepted and unused.

    Returns:
        feature key -> numpy output: dense ``np.ndarray`` (strings: object arrays of
        bytes), :class:`~tfrecord_engine.SparseValue` or
        :class:`~tfrecord_engine.RaggedValue`.

    Raises:
        ExampleParseError: a record does not match the specs (``.key``, ``.index``).
        MalformedExampleError: a record is not a valid Example.
        InvalidArgumentError: the specs are invalid (e.g. empty).

    Example:
        >>> from tfrecord_engine.example.encode import encode_example
        >>> from tfrecord_engine.example.specs import FixedLenFeature
        >>> batch = [encode_example({"x": [1, 2]}), encode_example({"x": [3, 4]})]
        >>> parse_example(batch, {"x": FixedLenFeature([2], "int64")})["x"].tolist()
        [[1, 2], [3, 4]]
    """
    del name  # TensorFlow's op name
    features = as_feature_specs(features)
    serialized, example_names = tensor_value(serialized), tensor_value(example_names)
    if isinstance(serialized, (bytes, bytearray, memoryview)):
        return parse_single_example(serialized, features, example_names)
    records = to_records(serialized)
    names = example_name_list(example_names, len(records))
    if names is None:
        return _parse_records(records, features)
    with named_errors(names):
        return _parse_records(records, features)


def _parse_records(records: Sequence[bytes], features: Mapping[str, FeatureSpec]) -> dict[str, Any]:
    n = len(records)
    if n and dense.eligible(features) and kernels.ready():
        # Compiled wide-record decoding (:mod:`.dense`) pays no per-feature numpy call.
        decoder = _cached_decoder(features)
        if decoder is not None:
            return decoder.decode_records(records)
    if n >= WALK_MIN_RECORDS and kernels.ready():
        # The compiled walk: a fixed cost per feature, then ~0.1-1 µs a record.
        decoder = _cached_decoder(features)
        return (decoder or BatchDecoder(features)).decode_records(records)
    if n < TEMPLATE_MIN_RECORDS:
        # numpy's per-call overhead outweighs batch decoding on small batches.
        return parse_example_exact(records, features)
    decoder = _cached_decoder(features)
    if n >= LOCKSTEP_MIN_BATCH:
        return (decoder or BatchDecoder(features)).decode_records(records)
    # Mid-size batches: worth it when the layouts learnt in earlier calls take the
    # records (a walk of many left-over records costs more than the exact path).
    if decoder is None or not decoder.try_templates(n):
        return parse_example_exact(records, features)
    return decoder.decode_records(records)


#: Per-thread decoders of recent feature specs (their templates are learnt once).
_LOCAL = threading.local()
_MAX_DECODERS = 16


def _cached_decoder(features: Mapping[str, FeatureSpec]) -> BatchDecoder | None:
    """This thread's decoder for ``features`` (by value), or None if it cannot be keyed."""
    try:
        key = pickle.dumps(dict(features), protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None  # specs that do not pickle: decode without a cache
    cache: collections.OrderedDict[bytes, BatchDecoder] | None = getattr(_LOCAL, "cache", None)
    if cache is None:
        cache = _LOCAL.cache = collections.OrderedDict()
    decoder = cache.get(key)
    if decoder is None:
        decoder = cache[key] = BatchDecoder(features)
        while len(cache) > _MAX_DECODERS:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return decoder
