"""Hopper's asynchronous primitives: Tilus 0.2's ``self.mbarrier``, ``self.tma`` and
``self.fence`` groups.

A mixin of tilus.Script (lang/instructions.py InstructionMixin); the methods follow the
docstring rules of instructions.py. The IR instructions are ``mbarrier_*``, ``tma_*`` and
``fence_proxy_async*`` (csrc/ops/mbarrier.cc, csrc/ops/tma.cc).

Every instruction runs for the whole thread block (warps * 32 threads), the thread group
Tilus 0.2 uses when no thread-group context narrows it: ``arrive`` counts one arrival
per thread (times ``count``), ``arrive_and_expect_tx`` one arrival and
``transaction_bytes`` per thread, and a TMA copy is issued once for the block (on CUDA by
thread 0, under an ``if``: Tilus 0.2 issues from each warp's elected leader lane of the
current thread group, which is one issue only when the group is a single warp).
"""

from __future__ import annotations

from tilus.lang.context import current_builder, current_launch_attrs
from tilus.lang.operands import _const_ints, _exprs, _tensor
from tilus.lang.types import uint32
from tilus.lang.values import Expr, as_expr

_ARRIVE_SEMS = ("relaxed", "release")
_WAIT_SEMS = ("acquire", "relaxed")
_SCOPES = ("cta", "cluster")


def _attr(sem, sems, scope) -> int:
    if sem not in sems:
        raise ValueError(f"sem must be one of {', '.join(map(repr, sems))}, got {sem!r}")
    if scope not in _SCOPES:
        raise ValueError(f"scope must be one of {', '.join(map(repr, _SCOPES))}, got {scope!r}")
    return sems.index(sem) + 4 * _SCOPES.index(scope)


class Barriers:
    """The barriers of one ``self.mbarrier.alloc``: ``bars[i]`` is barrier ``i``'s shared
    address (a uint32 scalar); a single barrier may be passed as ``bars`` itself."""

    __slots__ = ("base", "count")

    def __init__(self, base: Expr, count: int):
        self.base = base
        self.count = count

    def __len__(self):
        return self.count

    def tolist(self):
        """The barriers' addresses, one scalar each (Tilus 0.2's alloc returns a uint32
        tensor of them: ``full, empty = self.mbarrier.alloc(counts=[1, 128]).tolist()``)."""
        return [self[i] for i in range(self.count)]

    def item(self):
        """The address of the one barrier allocated."""
        return _barrier(self)

    def __getitem__(self, index):
        if isinstance(index, int) and not isinstance(index, bool):
            if not -self.count <= index < self.count:
                raise IndexError(f"barrier index {index} out of range for {self.count} barriers")
            index %= self.count
            return self.base if index == 0 else self.base + index * 8
        return self.base + as_expr(index, "a barrier index") * 8


def _barrier(barrier, what: str = "barrier") -> Expr:
    if isinstance(barrier, Barriers):
        if barrier.count != 1:
            raise ValueError(f"{what}: {barrier.count} barriers were allocated together; pick one "
                             "with bars[i]")
        return barrier.base
    if isinstance(barrier, Expr) or (isinstance(barrier, int) and not isinstance(barrier, bool)):
        return as_expr(barrier, what)
    raise TypeError(f"{what} must be a barrier from self.mbarrier.alloc, got "
                    f"{type(barrier).__name__}")


def _no_cluster(name, **forms):
    for key, value in forms.items():
        if value is not None and value is not False and value != 1:
            raise NotImplementedError(f"{name}: {key}= (CTA pairs, cache hints) is not supported yet")


class MbarrierGroup:
    """``self.mbarrier``: barriers in shared memory that count thread arrivals and
    asynchronous transaction bytes (Tilus's BarrierInstructionGroup)."""

    __slots__ = ()

    #: The phase a producer waits on first (the consumers have freed the slot already).
    producer_initial_phase = 1
    #: The phase a consumer waits on first (the producer's first fill).
    consumer_initial_phase = 0

    def alloc(self, counts=None):
        """Allocate and initialise mbarriers in shared memory.

        Each barrier starts in phase 0 waiting for its arrival count; a phase completes
        when all its arrivals came and its transaction bytes landed, and the next one
        starts with the same count.

        Args:
            counts: the arrival count of each barrier (a list), or one count (one barrier);
                ``None`` in the list or alone: the current thread group's thread count.

        Returns:
            The barriers: ``bars[i]`` is barrier ``i``'s uint32 shared address; a single
            barrier can be passed as ``bars``.

        Dtypes and layouts:
            Counts are integers in [1, 2^20). Each barrier takes 8 bytes of static shared
            memory.

        Raises:
            ValueError: a count is not positive (at build time when constant, in the
                interpreter otherwise).
            RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                bars = self.mbarrier.alloc(counts=[128, 128])
                self.mbarrier.arrive(bars[stage])
        """
        builder = current_builder()
        single = counts is None or isinstance(counts, (int, Expr))
        items = [counts] if single else list(counts)
        if not items:
            raise ValueError("counts: at least one barrier")
        warps = getattr(current_launch_attrs(), "warps", None)
        # None counts the threads of the current thread group (Tilus 0.2).
        threads = builder.current_thread_group()[1] if warps else None
        args = []
        for c in items:
            if c is None:
                if threads is None:
                    raise ValueError("counts: None (the thread count) needs self.attrs.warps set first")
                c = threads
            args.append(as_expr(c, "a count"))
        base = builder.declare("mbarriers", uint32, None)
        builder.tile_op("mbarrier_alloc", [], args=[base] + args)
        return Barriers(base, len(items))

    def arrive(self, barrier, count=1, sem: str = "release", scope: str = "cta"):
        """Arrive at a barrier: every thread of the block counts ``count`` arrivals.

        Args:
            barrier: a barrier (``bars[i]``).
            count: arrivals per thread, positive.
            sem: ``'release'`` (writes before it are visible to the waiters) or ``'relaxed'``.
            scope: ``'cta'`` or ``'cluster'`` (orders with the whole cluster).

        Dtypes and layouts:
            ``count`` is an integer scalar.

        Raises:
            ValueError: a bad sem/scope or count.
            RuntimeError: (interpreter) more arrivals than the barrier's phase still waits
                for.

        Example:
            .. code-block:: python

                self.mbarrier.arrive(empty_bars[stage])
        """
        attr = _attr(sem, _ARRIVE_SEMS, scope)
        current_builder().tile_op("mbarrier_arrive", [], int_attr=attr,
                                  args=[_barrier(barrier), as_expr(count, "count")])

    def arrive_and_expect_tx(self, barrier, transaction_bytes, sem: str = "release",
                             scope: str = "cta"):
        """Arrive at a barrier and add expected transaction bytes (sm_90a): every thread of
        the block arrives once and adds ``transaction_bytes``; TMA loads completing on the
        barrier take their bytes off again.

        Args:
            barrier: a barrier (``bars[i]``).
            transaction_bytes: bytes each thread expects, non-negative.
            sem: ``'release'`` or ``'relaxed'``.
            scope: ``'cta'`` or ``'cluster'`` (orders with the whole cluster).

        Dtypes and layouts:
            ``transaction_bytes`` is an integer scalar.

        Raises:
            ValueError: a bad sem/scope or byte count.
            NotImplementedError: code generation for sm_80 (the script line).

        Example:
            .. code-block:: python

                self.mbarrier.arrive_and_expect_tx(bars[s], (sa.nbytes + sb.nbytes) // 128)
        """
        attr = _attr(sem, _ARRIVE_SEMS, scope)
        current_builder().tile_op("mbarrier_arrive_expect_tx", [], int_attr=attr,
                                  args=[_barrier(barrier),
                                        as_expr(transaction_bytes, "transaction_bytes")])

    def wait(self, barrier, phase, sem: str = "acquire", scope: str = "cta"):
        """Wait until the barrier's phase with parity ``phase`` has completed (returns at
        once when the barrier has moved past it).

        Args:
            barrier: a barrier (``bars[i]``).
            phase: 0 or 1, the parity of the phase waited for.
            sem: ``'acquire'`` or ``'relaxed'``.
            scope: ``'cta'`` or ``'cluster'`` (orders with the whole cluster).

        Dtypes and layouts:
            ``phase`` is an integer scalar (a ``uint32`` flipped with ``^= 1`` typically).

        Raises:
            ValueError: phase is not 0 or 1.
            RuntimeError: (interpreter) a deadlock: the phase can never complete; the
                message names the barrier, the phase and the script line.

        Example:
            .. code-block:: python

                self.mbarrier.wait(full_bars[stage], phase=phase)
        """
        attr = _attr(sem, _WAIT_SEMS, scope)
        current_builder().tile_op("mbarrier_wait", [], int_attr=attr,
                                  args=[_barrier(barrier), as_expr(phase, "phase")])

    def arrive_and_expect_tx_multicast(self, barrier, transaction_bytes, multicast_mask,
                                       sem: str = "release", scope: str = "cluster"):
        """Arrive once, with ``transaction_bytes`` expected, at the barrier at ``barrier``'s
        offset in every block of the cluster whose rank is a bit of ``multicast_mask``:
        thread ``r`` of the group signals the block of rank ``r``.

        Args:
            barrier: a barrier of this block (``bars[i]``); the peers' barriers at the same
                offset are signalled.
            transaction_bytes: bytes each signalled barrier expects, non-negative.
            multicast_mask: bit ``r`` set: signal the block of rank ``r``.
            sem: ``'release'`` or ``'relaxed'``.
            scope: ``'cta'`` or ``'cluster'``.

        Dtypes and layouts:
            Integer scalars. Needs a thread group of at least 16 threads.

        Raises:
            ValueError: a bad sem/scope; (interpreter) a mask naming blocks outside the
                cluster or a group of fewer than 16 threads.
            NotImplementedError: code generation for sm_80.

        Example:
            .. code-block:: python

                self.mbarrier.arrive_and_expect_tx_multicast(full[s], nbytes, 0b11)
        """
        attr = _attr(sem, _ARRIVE_SEMS, scope)
        current_builder().tile_op("mbarrier_arrive_cluster", [], int_attr=attr, dims=[1],
                                  args=[_barrier(barrier), as_expr(transaction_bytes, "transaction_bytes"),
                                        as_expr(multicast_mask, "multicast_mask")])

    def arrive_and_expect_tx_remote(self, barrier, transaction_bytes, target_rank,
                                    sem: str = "release", scope: str = "cluster"):
        """Arrive at the barrier at ``barrier``'s offset in the block of rank
        ``target_rank`` of the cluster, adding ``transaction_bytes``: every thread of the
        group arrives once (``mapa`` + ``mbarrier.arrive.expect_tx.shared::cluster``).

        Args:
            barrier: a barrier of this block (``bars[i]``).
            transaction_bytes: bytes each thread adds, non-negative.
            target_rank: the peer block's rank.
            sem: ``'release'`` or ``'relaxed'``.
            scope: ``'cta'`` or ``'cluster'``.

        Dtypes and layouts:
            Integer scalars.

        Raises:
            ValueError: a bad sem/scope; (interpreter) a rank outside the cluster, or more
                arrivals than the peer's barrier waits for.
            NotImplementedError: code generation for sm_80.

        Example:
            .. code-block:: python

                self.mbarrier.arrive_and_expect_tx_remote(empty[s], 0, target_rank=0)
        """
        attr = _attr(sem, _ARRIVE_SEMS, scope)
        current_builder().tile_op("mbarrier_arrive_cluster", [], int_attr=attr, dims=[0],
                                  args=[_barrier(barrier), as_expr(transaction_bytes, "transaction_bytes"),
                                        as_expr(target_rank, "target_rank")])


class TmaGroup:
    """``self.tma``: Tensor Memory Accelerator bulk copies between global and shared
    memory (Tilus's TmaInstructionGroup)."""

    __slots__ = ()

    def global_to_shared(self, *, src, dst, offsets, dims=None, mbarrier, cta_group: int = 1,
                         multicast_mask=None, cache_policy=None):
        """Copy a box of ``src`` starting at ``offsets`` into ``dst`` asynchronously; the
        copy completes ``dst.nbytes`` transaction bytes on ``mbarrier`` when it lands.

        Args:
            src: the global tensor.
            dst: the shared tile (the box).
            offsets: one start per dimension of ``src``.
            dims: which dimensions of ``src`` the tile's dimensions are (default: the last).
            mbarrier: the barrier the copy completes on (``bars[i]``).
            cta_group: 1 (2 is Blackwell's CTA pairs).
            multicast_mask: ``None``, or an integer of the cluster's blocks (bit ``r``: the
                block of rank ``r``) the box lands in, at ``dst``'s offset in each one's
                shared memory, completing its bytes on each one's barrier at
                ``mbarrier``'s offset (``.multicast::cluster``). Every block of the mask
                expects those bytes on its own barrier (``arrive_and_expect_tx``).
            cache_policy: ``None``.

        Dtypes and layouts:
            ``src`` and ``dst`` have the same dtype. The box has at most 5 dimensions of at
            most 256 elements and an innermost extent of a multiple of 16 bytes. Elements
            outside ``src`` land as zeros (and count as transaction bytes). On CUDA
            (sm_90a) the copy goes through a tensor map the host encodes before the launch:
            ``src`` is a ``global_view`` of a parameter whose extents and strides depend
            only on parameters, contiguous in its last dimension (which the tile's last
            dimension runs along), 16-byte aligned, with strides of a multiple of 16
            bytes; thread 0 issues it. The shared tile is given a layout with the TMA
            swizzle of its rows (64 or 128 bytes; 128-byte column blocks for wider rows).

        Raises:
            TypeError: wrong scopes or dtypes.
            ValueError: a box TMA cannot move, wrong offsets or dims, a view or shared
                layout TMA cannot address (at build time, with the script line); before a
                launch, an address or stride that is not a multiple of 16 bytes (naming
                the parameter).
            NotImplementedError: cta_group=2, a cache policy, or code generation for sm_80.

        Example:
            .. code-block:: python

                self.tma.global_to_shared(src=ga, dst=sa[s], offsets=[m0, k0], mbarrier=bars[s])
        """
        _no_cluster("tma.global_to_shared", cta_group=cta_group, cache_policy=cache_policy)
        src = _tensor(src, "src")
        mask = [] if multicast_mask is None else [as_expr(multicast_mask, "multicast_mask")]
        current_builder().tile_op("tma_global_to_shared", [src, _tensor(dst, "dst")],
                                  dims=[] if dims is None else _const_ints(dims, "dims"),
                                  int_attr=1 if mask else 0,
                                  args=[_barrier(mbarrier, "mbarrier")] + _exprs(offsets, "an offset") + mask)

    def shared_to_global(self, src, dst, offsets, dims=None, cache_policy=None):
        """Copy the shared tile ``src`` into ``dst`` at ``offsets`` asynchronously; retire
        it with ``commit_group`` and ``wait_group``.

        Args:
            src: the shared tile (the box).
            dst: the global tensor.
            offsets: one start per dimension of ``dst``.
            dims: which dimensions of ``dst`` the tile's dimensions are (default: the last).
            cache_policy: ``None``.

        Dtypes and layouts:
            As ``global_to_shared``; elements outside ``dst`` are dropped. Writes to
            ``src`` through ordinary stores need ``self.fence.proxy_async()`` first (on
            CUDA the copy also fences and synchronises the block before thread 0 issues
            it, so every thread's writes are in the tile).

        Raises:
            TypeError: wrong scopes or dtypes.
            ValueError: a box TMA cannot move, wrong offsets or dims, a view or shared
                layout TMA cannot address; before a launch, an address or stride that is
                not a multiple of 16 bytes (naming the parameter).
            NotImplementedError: code generation for sm_80.

        Example:
            .. code-block:: python

                self.tma.shared_to_global(sc, gc, offsets=[m0, n0])
                self.tma.commit_group()
                self.tma.wait_group(0)
        """
        _no_cluster("tma.shared_to_global", cache_policy=cache_policy)
        dst = _tensor(dst, "dst")
        current_builder().tile_op("tma_shared_to_global", [_tensor(src, "src"), dst],
                                  dims=[] if dims is None else _const_ints(dims, "dims"),
                                  args=_exprs(offsets, "an offset"))

    def commit_group(self):
        """Close the group of the ``shared_to_global`` copies issued since the last commit.

        Dtypes and layouts:
            Not applicable.

        Raises:
            NotImplementedError: code generation for sm_80.

        Example:
            .. code-block:: python

                self.tma.commit_group()
        """
        current_builder().tile_op("tma_commit_group", [])

    def wait_group(self, n: int, read: bool = False):
        """Wait until at most ``n`` committed groups of TMA stores are in flight.

        Args:
            n: a constant in [0, 7].
            read: only wait until the groups have read their shared sources.

        Dtypes and layouts:
            Not applicable.

        Raises:
            ValueError: n out of range.
            NotImplementedError: code generation for sm_80.

        Example:
            .. code-block:: python

                self.tma.wait_group(0)
        """
        (n,) = _const_ints([n], "n")
        current_builder().tile_op("tma_wait_group", [], int_attr=n, dims=[1 if read else 0])


class FenceGroup:
    """``self.fence``: proxy fences between ordinary and asynchronous (TMA) memory
    accesses (Tilus's FenceInstructionGroup)."""

    __slots__ = ()

    def proxy_async(self, space: str = "shared"):
        """Order the block's ordinary memory accesses with the async proxy's (TMA) in
        ``space`` (sm_90a: ``fence.proxy.async``).

        Args:
            space: ``'shared'`` or ``'global'``.

        Dtypes and layouts:
            Not applicable.

        Raises:
            ValueError: another space.
            NotImplementedError: code generation for sm_80.

        Example:
            .. code-block:: python

                self.store_shared(sc, tile)
                self.fence.proxy_async()
        """
        if space not in ("shared", "global"):
            raise ValueError(f"space must be 'shared' or 'global', got {space!r}")
        current_builder().tile_op("fence_proxy_async", [], text=space)

    def proxy_async_release(self):
        """Release the block's ordinary shared-memory writes to the async proxy (sm_90a).

        Dtypes and layouts:
            Not applicable.

        Raises:
            NotImplementedError: code generation for sm_80.

        Example:
            .. code-block:: python

                self.fence.proxy_async_release()
        """
        current_builder().tile_op("fence_proxy_async_release", [])


_MBARRIER, _TMA, _FENCE = MbarrierGroup(), TmaGroup(), FenceGroup()


class HopperInstructions:
    @property
    def mbarrier(self) -> MbarrierGroup:
        """The mbarrier instruction group: ``self.mbarrier.alloc(...)`` and friends."""
        return _MBARRIER

    @property
    def tma(self) -> TmaGroup:
        """The TMA instruction group: ``self.tma.global_to_shared(...)`` and friends."""
        return _TMA

    @property
    def fence(self) -> FenceGroup:
        """The fence instruction group: ``self.fence.proxy_async()``."""
        return _FENCE
