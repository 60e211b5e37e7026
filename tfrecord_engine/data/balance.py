"""Class-balanced epochs over an index column.

``ds.batches(batch_size, balance="label")`` (or ``balance=Balance("label", per_class=m)``)
runs epochs in which every class of the column appears equally often. The scheme, a
pure function of ``(column values, seed, epoch, per_class)``:

1. The classes are the distinct values of the column (every record must have one: see
   ``RecordDataset.index_column``), sorted.
2. Each class's records are put in a seeded random order for the epoch (a new one each
   epoch), and its first ``m`` are taken: ``m`` is ``per_class``, or by default the size
   of the smallest class (undersampling: every record of the smallest class once per
   epoch, a fresh sample of each larger class). A class smaller than ``m`` is drawn
   whole as often as it fits, then its next random order continues (oversampling
   without replacement within each pass: each record then appears ``m // size`` or
   ``m // size + 1`` times).
3. The epoch is ``m`` rounds of one record of every class, the classes in a seeded
   random order within each round: ``k * m`` records for ``k`` classes. Every run of
   ``k`` positions starting at a multiple of ``k`` holds each class once, so a batch of
   ``b`` records holds each class ``b // k`` or ``b // k + 1`` times, give or take one at
   the batch's ends (exactly ``b / k`` when ``k`` divides the batch size and the batch
   starts at a multiple of ``k``).

Shuffles, shards, padding and resumable state work as for any epoch: the positions
``0 .. k*m - 1`` of the balanced order are what ``shuffle``/``shard_index`` slice (with
``shuffle=True`` the rounds are mixed and only the per-epoch class counts stay exact).
The state records the balanced order's digest, so it resumes only the same balance.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError
from .sampler import IndexBatch, IndexBatchIterator, ShardLayout
from .views import ViewSource, index_column

__all__ = ["Balance", "BalancedOrder", "BalancedSampler", "balanced_order", "balanced_positions"]

IntArray = npt.NDArray[np.int64]
_STREAM = 0xBA1A  # keeps this generator's stream apart from the epoch shuffle's


@dataclasses.dataclass(frozen=True, slots=True)
class Balance:
    """How ``batches(..., balance=...)`` balances an epoch: over index column
    ``column``, ``per_class`` records of each class per epoch (default: as many as the
    smallest class has). See :mod:`tfrecord_engine.data.balance` for the scheme.

    >>> Balance("label", per_class=100)
    Balance(column='label', per_class=100)
    """

    column: str
    per_class: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise InvalidArgumentError(f"Balance needs a column name, got {self.column!r}")
        if self.per_class is not None and (
            isinstance(self.per_class, bool)
            or not isinstance(self.per_class, int)
            or self.per_class < 1
        ):
            raise InvalidArgumentError(f"per_class must be an int >= 1, got {self.per_class!r}")


def as_balance(balance: str | Balance) -> Balance:
    """``balance`` as a :class:`Balance` (a column name is ``Balance(name)``)."""
    if isinstance(balance, Balance):
        return balance
    if isinstance(balance, str):
        return Balance(balance)
    raise InvalidArgumentError(
        f"balance takes an index column name or a tfe.Balance, got {balance!r}"
    )


def balanced_order(
    labels: npt.NDArray[Any], *, seed: int, epoch: int, per_class: int | None = None
) -> IntArray:
    """The positions (into ``labels``) of one balanced epoch (see the module docstring).

    >>> balanced_order(np.array([0, 0, 0, 1]), seed=0, epoch=0).tolist()  # k=2, m=1
    [3, 1]
    """
    if isinstance(seed, bool) or seed < 0 or epoch < 0:
        raise InvalidArgumentError(f"seed and epoch must be >= 0, got {seed}, {epoch}")
    if len(labels) == 0:
        return np.zeros(0, np.int64)
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    m = int(counts.min()) if per_class is None else per_class
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, epoch, _STREAM])))
    grouped = np.argsort(inverse, kind="stable").astype(np.int64)  # each class in order
    bounds = np.concatenate([[0], np.cumsum(counts)])
    drawn = np.empty((len(counts), m), dtype=np.int64)
    for c in range(len(counts)):
        members = grouped[bounds[c] : bounds[c + 1]]
        passes = -(-m // len(members))
        picks = np.concatenate([members[rng.permutation(len(members))] for _ in range(passes)])
        drawn[c] = picks[:m]
    rounds = rng.permuted(np.broadcast_to(np.arange(len(counts)), (m, len(counts))), axis=1)
    order: IntArray = drawn[rounds, np.arange(m)[:, None]].reshape(-1)
    return order


def balanced_positions(ds: ViewSource, balance: Balance, seed: int, epoch: int) -> IntArray:
    """The dataset positions of ``ds``'s balanced epoch ``epoch`` (its index column)."""
    labels = index_column(ds, balance.column)
    return balanced_order(labels, seed=seed, epoch=epoch, per_class=balance.per_class)


class BalancedOrder:
    """One balanced epoch's order, as ``batches`` runs it (positions -> dataset
    indices), with the digest its state carries."""

    def __init__(self, positions: IntArray, balance: Balance) -> None:
        self.positions = positions
        self.tag = {
            "column": balance.column,
            "per_class": balance.per_class,
            "digest": hashlib.sha256(positions.tobytes()).hexdigest()[:16],
        }

    def __len__(self) -> int:
        return len(self.positions)

    def batches(self, length: int, batch_size: int, **kwargs: Any) -> IndexBatchIterator:
        """An :class:`IndexBatchIterator` over this order (arguments as its own)."""
        return _OrderedBatches(self, length, batch_size, **kwargs)


class _OrderedBatches(IndexBatchIterator):
    """Batches of an epoch over the positions of a :class:`BalancedOrder`: the order
    arguments (shuffle, seed, shards, state) slice its positions, each batch holds the
    dataset indices at them."""

    def __init__(self, order: BalancedOrder, length: int, batch_size: int, **kwargs: Any) -> None:
        state: Mapping[str, Any] | None = kwargs.get("state")
        if state is not None and state.get("balance") != order.tag:
            raise InvalidArgumentError(
                f"cannot resume: the state has balance={state.get('balance')!r}, this "
                f"epoch has balance={order.tag!r} (pass the same balance, seed and epoch "
                "on the same dataset)"
            )
        self._order = order
        super().__init__(length, batch_size, **kwargs)

    def peek(self) -> IndexBatch:
        batch = super().peek()
        return IndexBatch(self._order.positions[batch.indices], batch.mask)

    def get_state(self) -> dict[str, Any]:
        return {**super().get_state(), "balance": dict(self._order.tag)}


class BalancedSampler:
    """Balanced epochs as a sampler of dataset indices, for map-style loaders
    (``torch.utils.data.DataLoader(ds, sampler=..., batch_size=...)``).

    Rank ``rank`` of ``world_size`` gets its contiguous slice of the epoch's balanced
    order (as ``batches(..., balance=..., shard_index=rank, shard_count=world_size)``).
    Call :meth:`set_epoch` before each epoch; :meth:`state_dict` and
    :meth:`load_state_dict` resume in the middle of one (torchdata's protocol).

    Args:
        dataset: the dataset (or a view of one) whose index column is balanced.
        balance: an index column name or a :class:`Balance`.
        seed, epoch: select the order.
        rank, world_size: this process's share.
    """

    def __init__(
        self,
        dataset: ViewSource,
        balance: str | Balance,
        *,
        seed: int = 0,
        epoch: int = 0,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        self.dataset = dataset
        self.balance = as_balance(balance)
        self.layout = ShardLayout(rank, world_size)
        self.seed = seed
        self.epoch = epoch
        self._yielded = 0
        self._labels = index_column(dataset, self.balance.column)

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration run ``epoch`` (from its start)."""
        if epoch < 0:
            raise InvalidArgumentError(f"epoch must be >= 0, got {epoch}")
        self.epoch = epoch
        self._yielded = 0

    def _part(self) -> IntArray:
        order = balanced_order(
            self._labels, seed=self.seed, epoch=self.epoch, per_class=self.balance.per_class
        )
        start, stop = self.layout.span(len(order))
        return order[start:stop]

    def __len__(self) -> int:
        return len(self._part())

    def __iter__(self) -> Iterator[int]:
        part = self._part()
        start, self._yielded = self._yielded, 0
        for j, i in enumerate(part[start:].tolist(), start + 1):
            self._yielded = j
            yield i
        self._yielded = 0

    def state_dict(self) -> dict[str, Any]:
        """``{"epoch", "yielded"}``: where the current iteration stands."""
        return {"epoch": self.epoch, "yielded": self._yielded, "balance": self.balance.column}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Makes the next iteration go on after the ``yielded`` indices of ``epoch``."""
        if state.get("balance") != self.balance.column:
            raise InvalidArgumentError(
                f"cannot resume: the state balances {state.get('balance')!r}, this "
                f"sampler {self.balance.column!r}"
            )
        self.epoch = int(state["epoch"])
        self._yielded = int(state["yielded"])
