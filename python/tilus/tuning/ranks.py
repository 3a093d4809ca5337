"""Ranks that agree: one configuration per tuning key across a torch.distributed job.

Timing noise differs from GPU to GPU, so ranks that each tuned on their own would launch
different configurations for the same key (different numerics, stragglers). When
``torch.distributed`` is initialised with more than one rank, ``tuner.choose`` goes
through :func:`agree` instead, in one of two modes (``tilus.option.distributed_tuning``):

``"rank0"`` (default)
    Global rank 0 chooses as a single process would (disk store first, else build and
    time everything) and publishes the winner's index; every other rank waits for it
    and builds only the winner (one compile, or none when the cache directory is
    shared: rank 0's build is already on disk). Global rank 0 and not the node-local
    rank 0: one choice for the whole job, so nodes cannot disagree either; with a cache
    directory shared between nodes, later jobs start tuned on every node.
``"all"``
    Rank 0 looks the key up in the disk store and publishes a hit; on a miss every rank
    builds and times every configuration on its own GPU, publishes its timings, and
    every rank picks the configuration with the smallest total over the ranks (ties:
    the first in product order). Only configurations that every rank could time count.
    Rank 0 stores the winner with the summed timings.
``"off"``
    Every rank tunes for itself (the single-process behaviour).

The side channel is the default process group's key-value store
(``torch.distributed.distributed_c10d._get_default_store()``, a TCPStore under
torchrun), not collectives on the user's group: collectives must be issued in the same
order on every rank, so a kernel that only some ranks reach, or two keys reached in a
different order, would desynchronise or deadlock the user's own NCCL traffic; they
would also enqueue work on the user's streams, possibly inside a CUDA graph capture.
Store keys name the tuning (script identity and key), so ranks may tune different keys
in any order, and a wait has a timeout.

No deadlock when only some ranks reach a kernel: rank 0 never waits in ``"rank0"`` mode
(it publishes and goes on). A rank that waits longer than the timeout
(``tilus.option.distributed_tuning(timeout_s=...)``, default 900 s) raises
:class:`RankAgreementTimeout` naming the kernel, the key and the rank(s) it waited for.
Every rank of the job must therefore call a tuned kernel with the same key at some
point, or the job must use mode ``"off"``.

The device is not part of a channel key: all ranks are expected to hold the same kind
of GPU (rank 0's choice is launched everywhere).
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from typing import Callable, Dict, Optional

from tilus import option

PREFIX = "tilus/tuning/"


class RankAgreementTimeout(TimeoutError):
    """A rank waited too long for the other ranks' choice of a configuration."""


class RankAgreementError(RuntimeError):
    """Another rank failed while choosing the configuration of a key."""


class RankChannel:
    """This process's place in the job (rank, world size) and a key-value store all
    ranks share. Tests build one over any ``torch.distributed.Store``."""

    def __init__(self, rank: int, world: int, store, timeout_s: float):
        self.rank = rank
        self.world = world
        self.store = store
        self.timeout_s = timeout_s

    def publish(self, key: str, value: dict):
        self.store.set(PREFIX + key, json.dumps(value, sort_keys=True))

    def wait(self, key: str, what: str, waited_for: str) -> dict:
        """The value published under `key`; RankAgreementTimeout after the timeout."""
        full = PREFIX + key
        try:
            self.store.wait([full], timedelta(seconds=self.timeout_s))
        except Exception as e:  # noqa: BLE001 - torch raises DistStoreError/RuntimeError by version
            raise RankAgreementTimeout(
                f"tilus: rank {self.rank} of {self.world} waited {self.timeout_s:g} s for "
                f"{waited_for} to choose the configuration of {what}, in vain "
                f"({type(e).__name__}: {_first_line(str(e))}). Every rank must call a tuned "
                "kernel with the same tuning key; if only some ranks reach it, use "
                "tilus.option.distributed_tuning('off') (each rank tunes alone) or raise "
                "the timeout (TILUS_DIST_TUNING_TIMEOUT).") from None
        return json.loads(self.store.get(full).decode("utf-8"))


def _first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0] if text else text


# Tests set this to a RankChannel (or a function returning one) instead of initialising
# torch.distributed.
test_channel: Optional[Callable[[], Optional[RankChannel]]] = None


def current_channel() -> Optional[RankChannel]:
    """The job's channel when torch.distributed is initialised with several ranks and
    the mode is not "off"; None otherwise. torch is not imported here: a program that
    never imported torch.distributed has no process group."""
    if test_channel is not None:
        return test_channel()
    mode = option.get_distributed_tuning()
    if mode.mode == "off":
        return None
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    world = dist.get_world_size()
    if world < 2:
        return None
    from torch.distributed import distributed_c10d

    store = distributed_c10d._get_default_store()
    return RankChannel(dist.get_rank(), world, store, mode.timeout_s)


def agree(channel: RankChannel, key: str, what: str, lookup: Callable[[], Optional[object]],
          choose_alone: Callable[[], object], search: Callable[[], object],
          combine: Callable[[Dict[int, Dict[int, float]]], object],
          store_combined: Callable[[object], None], received: Callable[[int, str], object]):
    """The decision every rank takes for one tuning key.

    `key` names the tuning in the shared store, `what` names it to people. The
    callbacks are the single-process pieces (tuner.py): lookup() reads the disk store;
    choose_alone() is the whole single-process choice (store, lock, tune, write);
    search() builds and times here and returns a Decision; combine({rank: timings}) the
    job's decision from every rank's timings; store_combined(decision) writes it to
    disk; received(index, how) the decision a rank adopts from a published index."""
    mode = option.get_distributed_tuning().mode
    if channel.rank == 0:
        if mode != "all":
            try:
                decision = choose_alone()
            except BaseException as e:
                channel.publish(key, {"error": f"{type(e).__name__}: {_first_line(str(e))}"})
                raise
            channel.publish(key, {"index": decision.index, "how": decision.how,
                                  "time_ms": decision.time_ms})
            return decision
        found = lookup()
        if found is not None:
            channel.publish(key, {"index": found.index, "how": found.how,
                                  "time_ms": found.time_ms})
            return found
        channel.publish(key, {"tune": True})
    else:
        message = channel.wait(key, what, "rank 0")
        if "error" in message:
            raise RankAgreementError(f"tilus: rank 0 could not choose the configuration of "
                                     f"{what}: {message['error']}")
        if "index" in message:
            decision = received(int(message["index"]), "rank 0")
            decision.time_ms = message.get("time_ms")
            return decision
    # Mode "all" on a miss: every rank times, then all pick the same best total.
    try:
        mine = search()
        channel.publish(f"{key}/timings/{channel.rank}",
                        {"timings": {str(i): t for i, t in mine.timings.items()}})
    except BaseException as e:
        channel.publish(f"{key}/timings/{channel.rank}",
                        {"error": f"{type(e).__name__}: {_first_line(str(e))}"})
        raise
    everyone: Dict[int, Dict[int, float]] = {channel.rank: dict(mine.timings)}
    for r in range(channel.world):
        if r == channel.rank:
            continue
        message = channel.wait(f"{key}/timings/{r}", what, f"rank {r}")
        if "error" in message:
            raise RankAgreementError(f"tilus: rank {r} could not time the configurations of "
                                     f"{what}: {message['error']}")
        everyone[r] = {int(i): float(t) for i, t in message["timings"].items()}
    decision = combine(everyone)
    if channel.rank == 0:
        store_combined(decision)
    return decision


def best_total(everyone: Dict[int, Dict[int, float]]) -> Optional[tuple]:
    """(index, total ms) of the configuration with the smallest total time over the
    ranks, among those every rank timed; ties go to the smaller index. None if no
    configuration was timed by every rank."""
    common = None
    for timings in everyone.values():
        common = set(timings) if common is None else common & set(timings)
    if not common:
        return None
    totals = {i: sum(timings[i] for timings in everyone.values()) for i in common}
    index = min(totals, key=lambda i: (totals[i], i))
    return index, totals[index]
