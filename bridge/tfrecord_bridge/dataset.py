"""``to_tf_dataset``: a ``RecordDataset`` as a checkpointable ``tf.data`` source.

The pipeline (every stage is checkpointable; ``from_generator`` would not be)::

    range(num_chunks)
      .scan(one numpy_function: e = next_epoch() at chunk 0, else the state e;
            the batches of chunk c of epoch e, one row per batch -> state e)
      .prefetch(2)                                 # chunk calls on a thread of their own
      .unbatch()                                   # one element per batch
      [.map(rebuild SparseTensor, RaggedTensor)]   # only if some feature is not dense
      .assert_cardinality(num_batches).prefetch(...)
      .with_options(no autotuning model, no default graph rewrites)
      [.apply(prefetch_to_device(device))]

(Where each chunk is one batch, :func:`default_chunk_batches` for batches of large
strings, the scan's call returns the batch's own arrays and there is no ``unbatch``,
which would copy every string, nor a rebuild ``map``: the scan's function rebuilds.
With ``num_parallel_calls > 1`` the scan only carries the epoch and a parallel ``map``
fetches the chunks.) Each iteration (each Keras epoch) draws the next epoch number once,
at its first chunk, and carries it as ``scan`` state. ``tf.train.Checkpoint`` of an
iterator saves the scan state as a tensor next to the range position; the chunk
``prefetch`` saves the chunks it holds and ``unbatch`` the chunk it is in and its
position (a checkpoint holds up to three chunks' arrays, plus the batches of the final
``prefetch``), so a restored iterator continues the same epoch exactly, in any process.
(Carrying the epoch as a ``flat_map`` input element does not work: TensorFlow 2.21
restores ``flat_map`` by re-running its input, which would draw a new epoch.)

Batches cross into TensorFlow a chunk (~4,096 records, or 8 MB of them where records
are large, or one batch where its strings are large: :func:`default_chunk_batches`) per
``numpy_function`` call: a
call costs about as much as decoding a few hundred records, so one per batch would cap
the bridge well below the engine. The chunk function is a pure function of
``(epoch, chunk)`` (:class:`~tfrecord_bridge.source.EpochBatches`), served by the
engine's chunked batch decoder. For specs of strings and scalars it decodes inside the
call, on the thread of the chunk ``prefetch``, which is then the read-ahead, while the
final ``prefetch``'s thread splits chunks into batches: an engine read-ahead thread as
well would be one more thread contending for the GIL (measured slower). Where the spec
decodes lists of numbers, whose compiled decode runs without the GIL, the engine's
read-ahead threads prepare two chunks ahead (:func:`default_readahead`; see
``docs/bridge.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from tfrecord_engine.data.dataset import DEFAULT_CHUNK_RECORDS, MASK_KEY, RecordDataset
from tfrecord_engine.data.epochs import decodes_lists, decodes_strings, strings_dominate
from tfrecord_engine.data.leaves import mean_record_bytes
from tfrecord_engine.data.mixing import MixedDataset
from tfrecord_engine.data.sampler import Shuffle
from tfrecord_engine.errors import InvalidArgumentError
from tfrecord_engine.example.dense import eligible as dense_eligible
from tfrecord_engine.example.seqspecs import SequenceFeatures
from tfrecord_engine.example.specs import RaggedFeature, VarLenFeature

from .fpenv import default_floats
from .layout import Layout
from .source import EpochBatches
from .specs import element_spec

__all__ = [
    "AUTO_READAHEAD",
    "CHUNK_CALL_BYTES",
    "SINGLE_BATCH_BYTES",
    "default_chunk_batches",
    "default_readahead",
    "to_tf_dataset",
    "uses_string_rows",
]

# TensorFlow ships no complete type stubs: TF objects are ``Any`` at this boundary.
TFDataset = Any

# Chunks the engine prepares ahead where a second thread pays (see :func:`default_readahead`).
AUTO_READAHEAD = 2

# Record bytes per ``numpy_function`` call, at most (see :func:`default_chunk_batches`).
CHUNK_CALL_BYTES = 8 << 20

# Batches of this many record bytes or more whose spec keeps a string cross one per
# call, without ``unbatch`` (see :func:`default_chunk_batches`).
SINGLE_BATCH_BYTES = 5 << 18

# Mean record bytes per string value, at most, for string values to cross as rows
# (see :func:`uses_string_rows`).
STRING_ROWS_MEAN_BYTES = 256

# Chunks made ahead of ``unbatch`` (with one chunk call at a time): measured on the
# MNIST-like file with one worker, median epoch 482k -> 572k records/s (12 epochs each,
# alternating in one process); a checkpoint also saves these chunks.
_CHUNKS_AHEAD = 2


def _tf() -> Any:
    import tensorflow as tf  # noqa: PLC0415 - the core must stay importable without TF

    return tf


def to_tf_dataset(  # noqa: PLR0917 - the public contract takes these positionally
    ds: RecordDataset | MixedDataset,
    batch_size: int,
    shuffle: Shuffle = False,
    seed: int = 0,
    drop_remainder: bool = False,
    input_context: Any = None,
    device: str | None = None,
    *,
    pad_remainder: bool = False,
    epoch: int = 0,
    num_parallel_calls: int = 1,
    prefetch: int | None = None,
    readahead: int | None = None,
    workers: int = 0,
    chunk_batches: int | None = None,
) -> TFDataset:
    """A ``tf.data.Dataset`` of parsed batches of ``ds``, from the engine's batch decoder.

    Elements are dicts ``{key: tf.Tensor | tf.SparseTensor | tf.RaggedTensor}`` with the
    same values, order and element spec as TensorFlow's own
    ``TFRecordDataset(files).batch(batch_size).map(tf.io.parse_example)`` when
    ``shuffle=False``.

    Args:
        ds: a :class:`~tfrecord_engine.RecordDataset` built with ``features=`` (or
            ``context_features=``/``sequence_features=``: elements are then
            ``parse_sequence_example``'s outputs as one dict, each
            ``FixedLenSequenceFeature``'s step counts under ``"<name>_lengths"``), or a mix
            of them (``tfe.sample_from_datasets``: ``shuffle`` permutes each dataset's
            records, the proportions stay exact).
        batch_size: records per batch (per replica under ``tf.distribute``).
        shuffle: the engine's global shuffle (``True`` or a ``BlockShuffle``); each
            iteration of the returned dataset (each Keras epoch) uses the next epoch's
            order.
        seed: the shuffle seed; orders are a pure function of (seed, epoch).
        drop_remainder: drop the last partial batch (the batch dimension is then static).
        input_context: a ``tf.distribute.InputContext``: this pipeline reads shard
            ``input_pipeline_id`` of ``num_input_pipelines`` (every record in exactly one
            pipeline, shard sizes within one record). Use it from
            ``strategy.distribute_datasets_from_function``.
        device: e.g. ``"/GPU:0"``: end with ``prefetch_to_device(device)``
            (``"/CPU:0"`` runs the same code path).
        pad_remainder: exact evaluation: every batch is full and a boolean ``"mask"``
            entry marks real records; every pipeline yields the same number of batches.
            Use the mask as the sample weight and each record counts exactly once.
            Under ``input_context``, fully masked batches are appended so that every
            replica has a batch at every step (``tf.distribute`` drops a last step
            that some replica lacks).
        epoch: the epoch of the first iteration; later iterations take the next ones.
            A restored iterator keeps the epoch it saved; when restoring in a new
            process, pass the epoch the following iteration should use (as Keras's
            ``fit(initial_epoch=...)``).
        num_parallel_calls: concurrent chunk requests. One (the default) decodes on the
            thread of a prefetch of two chunks; more only contend for the GIL.
        prefetch: batches buffered at the end (default ``tf.data.AUTOTUNE``).
        readahead: chunks of ~4,096 records the engine prepares ahead on threads of
            its own. Default (``None``): :func:`default_readahead`, 2 where the spec
            decodes lists of numbers (their compiled decode runs beside TensorFlow
            without the GIL), else 0 (the chunk ``prefetch`` already reads ahead, and
            one more thread making strings and scalars under the GIL only contends).
            Worth 1-2 for remote files too, where reading mostly waits on the network.
        workers: decode in this many worker processes (see ``RecordDataset.batches``
            and docs/workers.md): the engine's decoding then leaves this process's GIL
            to TensorFlow's threads and the training loop. 0 (the default) decodes in
            the ``numpy_function`` call.
        chunk_batches: batches handed to TensorFlow per ``numpy_function`` call
            (default: about 4,096 records' worth, and no more than 8 MB of records;
            one batch where a batch holds 1.25 MiB of records or more and the spec
            keeps a string: see :func:`default_chunk_batches`). A call costs ~0.1-1
            ms whatever its size, so one per batch would cap small batches well below
            the engine; with one batch a call, the batch crosses without ``unbatch``,
            which copies every string.

    Returns:
        a ``tf.data.Dataset`` with a known cardinality (batches per epoch); its
        iterators can be saved with ``tf.train.Checkpoint(iterator=it)`` (without
        ``device``: TensorFlow cannot checkpoint ``prefetch_to_device``). Its options
        turn tf.data's autotuning model off (``options().autotune.enabled`` is
        ``False``, inherited by what is built on it; ``AUTOTUNE`` parallelism then
        means one call per core) and its default graph rewrites
        (``experimental_optimization.apply_default_optimizations`` is ``False``):
        re-enable them with ``with_options`` if wanted.

    Raises:
        InvalidArgumentError: ``ds`` has no features, or the arguments are invalid.

    Example:
        >>> import os, tempfile, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
        >>> with tfe.TFRecordWriter(path, index=True) as w:
        ...     w.write_many([tfe.encode_example({"i": [i]}) for i in range(5)])
        5
        >>> ds = tfe.RecordDataset(path, features={"i": tfe.FixedLenFeature([], "int64")})
        >>> [b["i"].numpy().tolist() for b in to_tf_dataset(ds, 2)]
        [[0, 1], [2, 3], [4]]
    """
    tf = _tf()
    shard_index, shard_count, multiple = 0, 1, 1
    if input_context is not None:
        shard_index = int(input_context.input_pipeline_id)
        shard_count = int(input_context.num_input_pipelines)
        # Each step takes one batch per replica from this pipeline's share of replicas.
        multiple = max(1, int(input_context.num_replicas_in_sync) // shard_count)
    if readahead is None:
        readahead = default_readahead(ds, workers)
    engine_ds, varlen = _varlen_as_ragged(ds)
    string_rows = uses_string_rows(ds, workers)
    if string_rows:
        if engine_ds is ds:
            engine_ds = ds._copy()  # (its own decoder: the caller's keeps its bytes)
        engine_ds.decoder.string_rows = True
    source = EpochBatches(
        engine_ds,
        batch_size,
        shuffle=shuffle,
        seed=seed,
        shard_index=shard_index,
        shard_count=shard_count,
        drop_remainder=drop_remainder,
        pad_remainder=pad_remainder,
        first_epoch=epoch,
        readahead=readahead,
        batch_multiple=multiple,
        workers=workers,
    )
    if num_parallel_calls < 1:
        raise InvalidArgumentError(f"num_parallel_calls must be >= 1, got {num_parallel_calls}")
    features = ds.features or {}
    static = batch_size if (drop_remainder or pad_remainder) else None
    specs = element_spec(tf, features, static)
    if pad_remainder:
        specs[MASK_KEY] = tf.TensorSpec([batch_size], tf.bool)
    layout = Layout(tf, specs, varlen, string_rows=string_rows)
    num_batches = source.num_batches

    per_chunk = default_chunk_batches(ds, batch_size) if chunk_batches is None else chunk_batches
    if per_chunk < 1:
        raise InvalidArgumentError(f"chunk_batches must be >= 1, got {chunk_batches}")
    bounds = source.chunks(per_chunk)
    num_chunks = len(bounds) - 1

    def next_epoch() -> npt.NDArray[np.int64]:
        return np.array(source.next_epoch(), np.int64)

    def fetch(e: int, c: int) -> list[npt.NDArray[Any]]:
        if per_chunk == 1:
            return layout.flatten(source.get(e, c))
        return layout.pack([source.get(e, k) for k in range(bounds[c], bounds[c + 1])])

    out = _chunk_pipeline(
        tf,
        layout,
        num_chunks=num_chunks,
        num_batches=num_batches,
        fetch=fetch,
        next_epoch=next_epoch,
        num_parallel_calls=num_parallel_calls,
        prefetch=prefetch,
        single=per_chunk == 1,
    )
    if device is not None:
        # Must be the last transformation (TensorFlow's rule).
        out = out.apply(tf.data.experimental.prefetch_to_device(device))
    return out


def uses_string_rows(ds: RecordDataset | MixedDataset, workers: int = 0) -> bool:
    """Whether :func:`to_tf_dataset` has the string values of ``ds`` cross as rows
    (:mod:`tfrecord_engine.example.string_rows`, cut into TensorFlow's string tensor
    with ``tf.strings.substr``) rather than one ``bytes`` object each.

    For a dataset (not a mix) decoded in this process whose spec is all
    ``FixedLenFeature``, with a string among them, where the records' mean size over
    the string values a record holds is at most :data:`STRING_ROWS_MEAN_BYTES`: short
    strings (ids, codes, the string columns of wide records), whose objects cost more
    than their bytes. Large values (images) keep their objects, copied once.
    """
    features = ds.features
    if workers > 0 or not isinstance(ds, RecordDataset) or not isinstance(features, dict):
        return False
    if ds._output is not None or not dense_eligible(features):
        return False
    strings = sum(math.prod(spec.shape) for spec in features.values() if spec.dtype == "string")
    return bool(strings > 0 and _mean_record_bytes(ds) <= STRING_ROWS_MEAN_BYTES * strings)


def default_readahead(ds: RecordDataset | MixedDataset, workers: int = 0) -> int:
    """``to_tf_dataset``'s ``readahead`` when not given: :data:`AUTO_READAHEAD` chunks
    where the spec decodes some list of numbers and strings do not dominate the records
    (a mean under ``STRINGS_DOMINATE_BYTES``, 8 KB, where it keeps a string), else 0;
    0 with decode ``workers`` (they read ahead themselves).

    The engine's compiled list decodes release the GIL, so a read-ahead thread overlaps
    them with TensorFlow's side; strings and scalars become Python objects under the
    GIL, where that thread only contends. ``python -m benchmarks.bench_bridge_shapes
    --readahead 0,2 --shuffled`` (2026-11-28, one process alternating, best-of ratio to
    TensorFlow, 0 -> 2): tokens 1.11 -> 1.17 in order and 1.31 -> 1.54 shuffled, mixed
    0.95 -> 1.12 and 1.52 -> 1.86, SequenceExamples 0.87 -> 0.97 and 1.11 -> 1.39,
    ragged 0.77 -> 0.81 and 0.96 -> 1.06, tabular 1.66 -> 1.60 and 2.25 -> 2.38; image
    0.91 -> 0.75 and 1.55 -> 1.48, detection 0.58 -> 0.55 and 1.41 -> 1.31 and
    MNIST-like records 879k -> 795k records/s in order (these three get 0).
    """
    if workers > 0:
        return 0
    features = ds.features
    if not isinstance(features, Mapping) or not decodes_lists(features):
        return 0
    if strings_dominate(features, _mean_record_bytes(ds)):
        return 0
    return AUTO_READAHEAD


def _leaves(ds: RecordDataset | MixedDataset) -> list[RecordDataset]:
    """The datasets ``ds`` reads: itself, or a mix's datasets."""
    return ds.leaves if isinstance(ds, MixedDataset) else [ds]


def _mean_record_bytes(ds: RecordDataset | MixedDataset) -> float:
    """The mean record size of ``ds``'s files (for a mix, all its datasets')."""
    return mean_record_bytes(_leaves(ds))


def _varlen_as_ragged(ds: RecordDataset | MixedDataset) -> tuple[Any, frozenset[str]]:
    """The dataset the bridge's chunks are decoded from, and the ``VarLenFeature`` keys
    it decodes as ``RaggedFeature`` (values and row splits; TensorFlow then makes the
    ``SparseTensor``, see :class:`~.layout.Layout`): a copy of ``ds`` over the same
    files with those specs, where ``ds`` hands out batches as decoded (no ``transform``
    or output format in it or, for a mix, in any of its datasets); else ``ds`` itself.
    The keys are an Example spec's ``VarLenFeature``s, or a SequenceExample spec's
    context ``VarLenFeature``s (2-D; those of its feature lists are 3-D and keep the
    engine's sparse output).

    Measured on token lists (16-512 int64 ids a record, batches of 256, in order, one
    process alternating): 80 -> 65 ms an epoch (best), 110 -> 70 ms (median).
    """
    varlen = _varlen_keys(ds.features)
    if not varlen or any(leaf._output is not None for leaf in _leaves(ds)):
        return ds, frozenset()
    return _with_ragged(ds, varlen), varlen


def _varlen_keys(features: Any) -> frozenset[str]:
    """The keys of ``features`` that :func:`_varlen_as_ragged` decodes as ragged rows."""
    if isinstance(features, SequenceFeatures):
        specs: Mapping[str, Any] = features.context
    elif isinstance(features, dict):
        specs = features
    else:
        return frozenset()
    return frozenset(k for k, spec in specs.items() if isinstance(spec, VarLenFeature))


def _with_ragged(ds: RecordDataset | MixedDataset, varlen: frozenset[str]) -> Any:
    """A copy of ``ds`` (for a mix: of each of its datasets, nested mixes too, with the
    same weights, seed and epoch counters) whose ``varlen`` specs are ``RaggedFeature``s
    of the same dtype with int64 row splits."""
    if isinstance(ds, MixedDataset):
        mix = MixedDataset.__new__(MixedDataset)
        state = ds.__getstate__()
        mix.__setstate__({**state, "datasets": [_with_ragged(d, varlen) for d in ds.datasets]})
        return mix

    def ragged(specs: Mapping[str, Any]) -> dict[str, Any]:
        return {
            k: RaggedFeature(spec.dtype, row_splits_dtype="int64") if k in varlen else spec
            for k, spec in specs.items()
        }

    features = ds.features
    if isinstance(features, SequenceFeatures):
        return ds._copy(features=SequenceFeatures(ragged(features.context), features.sequence))
    assert features is not None  # (the keys come from it)
    return ds._copy(features=ragged(features))


def default_chunk_batches(ds: RecordDataset | MixedDataset, batch_size: int) -> int:
    """Batches per ``numpy_function`` call when ``chunk_batches`` is not given: about
    :data:`~tfrecord_engine.data.dataset.DEFAULT_CHUNK_RECORDS` records, but no more than
    :data:`CHUNK_CALL_BYTES` of the files' records (at their mean size).

    A call's cost is mostly fixed (~0.1-1 ms), so small records travel ~4,096 at a time.
    Large ones do not: a chunk of 4,096 images (28 MB of strings) is memory that the C
    library hands back to the kernel when TensorFlow frees it, and the next chunk's
    pages are faulted in again. Measured on 2 cores (20,000 records in batches of 256,
    Python loop, one process alternating): 6.6 KB image records 180 ms an epoch in
    chunks of 16 batches (47k page faults) and 99-107 ms in chunks of 2-4 (2-7k); 15.5
    KB detection records 445 ms and 288-300 ms in chunks of 1-4; records under 1 KB
    (tokens, ragged, tabular) were fastest in chunks of 8-16 batches, and 3.4-4.2 KB
    ones (mixed, SequenceExample, wide) in chunks of 4-16.

    Batches of :data:`SINGLE_BATCH_BYTES` (1.25 MiB) of records or more whose spec
    keeps a string cross one per call: ``unbatch`` copies every string of a chunk into
    its batch, and a chunk of one batch is its batch as it is (no ``unbatch``, no copy).
    Measured with ``python -m benchmarks.bench_bridge_shapes --chunk-batches auto,1``
    (2026-11-28 evening, one process alternating, best-of ratio to TensorFlow, in
    order): image records (6.5 KB, 1.6 MiB a batch) 0.87 -> 1.17, detection records
    (15.2 KB) 0.66 -> 0.87; level on mixed and wide records (0.8-0.9 MiB a batch); tokens
    1.16 -> 0.99 (small records need the chunks: a call costs ~0.2 ms).
    """
    mean = _mean_record_bytes(ds)
    features = ds.features
    if (
        isinstance(features, Mapping)
        and decodes_strings(features.values())
        and mean * batch_size >= SINGLE_BATCH_BYTES
    ):
        return 1
    by_count = DEFAULT_CHUNK_RECORDS // batch_size
    by_bytes = int(CHUNK_CALL_BYTES // max(1.0, mean * batch_size))
    return max(1, min(by_count, by_bytes))


def _chunk_pipeline(
    tf: Any,
    layout: Layout,
    *,
    num_chunks: int,
    num_batches: int,
    fetch: Callable[[int, int], list[npt.NDArray[Any]]],
    next_epoch: Callable[[], npt.NDArray[np.int64]],
    num_parallel_calls: int = 1,
    prefetch: int | None = None,
    single: bool = False,
) -> TFDataset:
    """The ``tf.data`` side of the bridge: ``fetch(epoch, chunk)`` packed chunks as batches.

    ``fetch`` returns :meth:`Layout.pack` of the batches of one chunk and must be a
    pure function of its arguments; ``next_epoch`` is called once per iteration. With
    ``single``, every chunk is one batch and ``fetch`` returns :meth:`Layout.flatten`
    of it: its arrays are the batch's tensors, with no ``unbatch`` (which copies every
    string of a chunk into its batch) and no op but the composites' rebuild. The
    benchmark runs it on precomputed chunks to measure the TensorFlow side alone.
    """
    unpack = layout.rebuild if single else layout.unpack_chunk
    tout = layout.dtypes if single else layout.packed_dtypes

    def epoch_of(state: npt.NDArray[np.int64], c: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        # Chunk 0 starts an iteration: it draws the epoch; later chunks carry the state.
        return next_epoch() if int(c) == 0 else state

    def fetched(e: Any, c: Any) -> list[npt.NDArray[Any]]:
        # (In TensorFlow's thread, which flushes denormals: the engine computes without.)
        with default_floats():
            return fetch(int(e), int(c))

    def with_epoch(state: npt.NDArray[np.int64], c: npt.NDArray[np.int64]) -> list[Any]:
        e = epoch_of(state, c)
        return [e, *fetched(e, c)]

    # The epoch is drawn at the first chunk and then carried as scan state, which a
    # checkpoint saves as a tensor (flat_map would not do: it re-runs its input). Both
    # are plain numpy_function calls: a tf.cond around the draw costs ~6 ms of function
    # instantiation at every new iterator (every epoch), measured.
    if num_parallel_calls == 1:
        # One call per chunk draws (at chunk 0) and fetches; it runs in the prefetch
        # thread below (map_parallelization is off, see the options).
        def chunk_with_epoch(state: Any, c: Any) -> Any:
            e, *flat = tf.numpy_function(with_epoch, [state, c], [tf.int64, *tout], stateful=True)
            e.set_shape([])
            return e, unpack(flat)

        chunks = tf.data.Dataset.range(num_chunks).scan(tf.constant(-1, tf.int64), chunk_with_epoch)
        # The chunk calls run on a thread of their own, ahead of ``unbatch``: without
        # this buffer the final prefetch's thread made each call (Python, under the GIL)
        # and then split the chunk, one after the other; now the two overlap.
        chunks = chunks.prefetch(_CHUNKS_AHEAD)
    else:

        def draw(state: Any, c: Any) -> Any:
            e = tf.numpy_function(epoch_of, [state, c], tf.int64, stateful=True)
            e.set_shape([])
            return e, (e, c)

        def chunk(e: Any, c: Any) -> Any:
            # A pure function of (e, c): stateless, so checkpoints need no Python state.
            flat = tf.numpy_function(fetched, [e, c], tout, stateful=False)
            return unpack(list(flat))

        chunks = (
            tf.data.Dataset.range(num_chunks)
            .scan(tf.constant(-1, tf.int64), draw)
            .map(chunk, num_parallel_calls=num_parallel_calls, deterministic=True)
        )
    if single:
        out = chunks  # each element is a batch already
    else:
        # One element per batch; a checkpoint saves the current chunk and the position.
        out = chunks.unbatch()
        if not layout.dense_only:
            out = out.map(layout.rebuild_packed)
    out = out.apply(tf.data.experimental.assert_cardinality(num_batches)).prefetch(
        tf.data.AUTOTUNE if prefetch is None else prefetch
    )
    options = tf.data.Options()
    # The epoch counter is Python state; what a checkpoint needs of it, the epoch of the
    # current iteration, is saved as the scan state.
    options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.IGNORE
    # Nothing here needs tuning (one chunk call at a time, the prefetch buffer sizes
    # itself), and tf.data's autotuning model costs a thread competing for the CPU and,
    # measured, 20-130 ms at the end of every iteration, while the iterator waits for
    # it: as much as decoding 20k-60k records. A caller can turn it back on with
    # ``with_options``.
    options.autotune.enabled = False
    # TensorFlow rewrites the dataset graph with its default optimizations at every new
    # iterator (every epoch): ~6-10 ms here, measured, for nothing this pipeline can use
    # (and a stateless map made parallel would only contend for the GIL).
    options.experimental_optimization.apply_default_optimizations = False
    options.experimental_optimization.map_parallelization = False
    return out.with_options(options)
