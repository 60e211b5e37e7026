"""Decode worker pools kept by their owner between epochs: a dataset's, or a mix's
sources' (``workers=`` of ``batches``; the pools themselves are :mod:`.procpool`'s).

An owner lists its pools in ``_pools``; :func:`take_pool` hands out an idle one of the
right shape (or starts one), :func:`return_pool` keeps it for the next epoch or stops
it, :func:`close_pools` stops them all. One lock guards every owner's list.
"""

from __future__ import annotations

import os
import threading
from typing import Protocol

from .procpool import DecodePool, PoolSource

__all__ = ["PoolOwner", "close_pools", "return_pool", "take_pool"]

#: Guards every owner's decode pools (epochs may start on several threads). Reentrant:
#: the collector may hand back an abandoned epoch's pool (PoolStream.__del__) inside it.
_POOLS_LOCK = threading.RLock()


class PoolOwner(PoolSource, Protocol):
    """A dataset (or a mix's sources) that keeps its decode pools in ``_pools``."""

    _pools: list[DecodePool]


def take_pool(owner: PoolOwner, workers: int, slots: int) -> DecodePool:
    """An idle pool of ``workers`` processes with ``slots`` slots, or a new one.

    Pools in use stay listed in ``owner._pools`` too, so that closing the owner stops
    them (:func:`close_pools`).
    """
    with _POOLS_LOCK:
        # A forked copy of a dataset must not talk to its parent's workers.
        owner._pools = [p for p in owner._pools if p.owner == os.getpid() and not p.broken]
        for pool in owner._pools:
            if not pool.in_use and pool.workers == workers and pool.slots == slots:
                pool.in_use = True
                return pool
    pool = DecodePool(owner, workers, slots=slots)
    pool.in_use = True
    with _POOLS_LOCK:
        owner._pools.append(pool)
    return pool


def return_pool(owner: PoolOwner, pool: DecodePool, *, is_open: bool) -> None:
    """Keeps a pool for the next epoch (one per shape), or stops it: a pool that saw
    an error or an interrupt, or still has replies unread, is never reused, nor one
    whose owner was closed (``is_open`` false, or the pool no longer listed)."""
    with _POOLS_LOCK:
        pool.in_use = False
        keep = not (
            pool.broken
            or pool.queued
            or not is_open
            or pool not in owner._pools  # (the owner was closed meanwhile)
            or any(
                p is not pool
                and not p.in_use
                and p.workers == pool.workers
                and p.slots == pool.slots
                for p in owner._pools
            )
        )
        if not keep and pool in owner._pools:
            owner._pools.remove(pool)
    if not keep:
        pool.close()


def close_pools(owner: PoolOwner) -> None:
    """Stops the owner's pools (those this process started)."""
    with _POOLS_LOCK:
        pools, owner._pools = owner._pools, []
    for pool in pools:
        if pool.owner == os.getpid():
            pool.close()
