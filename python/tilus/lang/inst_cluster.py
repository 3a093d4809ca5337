"""Thread-block clusters: Tilus 0.2's ``self.cluster`` group (sync, blockIdx, clusterDim,
blockRank, map_shared_addr), and tile loads and stores of a peer block's shared tensor
(``load_shared``, ``store_shared``: distributed shared memory, ours). The cluster's shape is
``self.attrs.cluster_blocks``.

The IR instructions are ``cluster_sync``, ``cluster_query``, ``cluster_map_shared_addr``,
``cluster_load_shared`` and ``cluster_store_shared`` (csrc/ops/clusters.cc). A kernel
without cluster_blocks runs in clusters of one block: ranks are 0 and sync is a
block-wide barrier.
"""

from __future__ import annotations

from tilus.lang.context import current_builder
from tilus.lang.operands import _tensor
from tilus.lang.structs import Dim3
from tilus.lang.types import uint32
from tilus.lang.values import Expr, as_expr

_QUERIES = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "clusterDim.x", "clusterDim.y",
            "clusterDim.z", "blockRank")


def _query(what: str) -> Expr:
    """What ``self.cluster.blockIdx`` (``%cluster_ctaid``), ``self.cluster.clusterDim``
    (``%cluster_nctaid``) and ``self.cluster.blockRank`` (``%cluster_ctarank``, x fastest)
    read: one coordinate of the block in its cluster or of the cluster's shape.

    Args:
        what: ``'blockIdx.x'`` ... ``'clusterDim.z'`` or ``'blockRank'``.

    Returns:
        A uint32 scalar (a fresh variable set by one ``cluster_query`` instruction).

    Dtypes and layouts:
        uint32 scalars. Without ``self.attrs.cluster_blocks`` the cluster is one block.

    Raises:
        NotImplementedError: code generation for sm_80.

    Example:
        .. code-block:: python

            rank: int32 = self.cluster.blockRank
            peer: int32 = (rank + 1) % self.cluster.clusterDim.x
    """
    builder = current_builder()
    var = builder.declare("cluster_" + what.replace(".", "_"), uint32, None)
    builder.tile_op("cluster_query", [], int_attr=_QUERIES.index(what), args=[var])
    return var


class ClusterGroup:
    """``self.cluster``: the blocks of one cluster synchronise together and reach each
    other's shared memory (Tilus's BlockClusterInstructionGroup)."""

    __slots__ = ()

    def sync(self):
        """A barrier across every thread of every block of the cluster
        (``barrier.cluster.arrive`` + ``barrier.cluster.wait``, sm_90a).

        Dtypes and layouts:
            Not applicable. Writes to shared memory before it, including a peer block's,
            are visible to the cluster's threads after it.

        Raises:
            NotImplementedError: code generation for sm_80.
            RuntimeError: (interpreter) a deadlock: some thread of the cluster never
                reaches the barrier.

        Example:
            .. code-block:: python

                bars = self.mbarrier.alloc(counts=[1])
                self.cluster.sync()  # every block's barriers are initialised
        """
        current_builder().tile_op("cluster_sync", [])

    @property
    def blockIdx(self) -> Dim3:
        """The block's position inside its cluster (``%cluster_ctaid``), uint32 x, y, z."""
        return Dim3(_query("blockIdx.x"), _query("blockIdx.y"), _query("blockIdx.z"))

    @property
    def clusterDim(self) -> Dim3:
        """The cluster's shape in blocks (``%cluster_nctaid``), uint32 x, y, z."""
        return Dim3(_query("clusterDim.x"), _query("clusterDim.y"), _query("clusterDim.z"))

    @property
    def blockRank(self) -> Expr:
        """The block's rank in its cluster (``%cluster_ctarank``): x fastest, a uint32."""
        return _query("blockRank")

    def map_shared_addr(self, addr, target_rank):
        """The address of the same shared location in the block of rank ``target_rank``
        of the cluster (``mapa.shared::cluster``); use it with the cluster forms of the
        mbarrier instructions.

        Args:
            addr: a shared address of this block (a uint32 scalar, e.g. ``bars[i]``).
            target_rank: the peer block's rank in the cluster.

        Returns:
            The mapped address, a uint32 scalar.

        Dtypes and layouts:
            ``addr`` and ``target_rank`` are integer scalars.

        Raises:
            TypeError: non-integer operands.
            ValueError: (interpreter) the rank is not a block of the cluster.
            NotImplementedError: code generation for sm_80.

        Example:
            .. code-block:: python

                peer = self.cluster.map_shared_addr(bars[0], target_rank=1)
        """
        builder = current_builder()
        var = builder.declare("mapped_addr", uint32, None)
        builder.tile_op("cluster_map_shared_addr", [],
                        args=[var, as_expr(addr, "addr"), as_expr(target_rank, "target_rank")])
        return var

    def store_shared(self, dst, src, *, target_rank):
        """Store a register tile into the block of rank ``target_rank``'s instance of a
        shared tensor (``st.shared::cluster`` at this block's address of each element
        mapped to the peer: distributed shared memory, sm_90a).

        Every block of the cluster runs the same program, so ``dst`` (a shared tensor or a
        view of one) names the same elements in each; the store writes the peer's.
        Order it with the peer's reads by ``self.cluster.sync()``; the peer must have
        allocated ``dst`` and not freed it or finished.

        Args:
            dst: a shared tensor (or a slice) that has not been freed.
            src: a register tensor of the same shape and dtype.
            target_rank: the peer block's rank in the cluster (an integer scalar; this
                block's own rank stores locally).

        Dtypes and layouts:
            Any dtype of 8 bits or more (packed sub-byte tiles: move their uint8 bytes);
            any register layout, written with up to 16-byte accesses.

        Raises:
            TypeError: ``dst`` is not shared, ``src`` is not a register tensor, the dtypes
                differ, or ``target_rank`` is not an integer.
            ValueError: the shapes differ; (interpreter) the rank is not a block of the
                cluster.
            RuntimeError: (interpreter) the peer has not allocated ``dst``, has freed it,
                or has finished.
            ScriptDataRaceError: (interpreter) the peer, or another block, touches an element
                written here with no ``self.cluster.sync()`` between.
            NotImplementedError: code generation for sm_80.

        Example:
            .. code-block:: python

                # split-K partials meeting in rank 0's shared memory
                self.cluster.sync()  # every block is done with the memory partials reuses
                if rank > 0:
                    self.cluster.store_shared(partials[rank - 1], acc, target_rank=0)
                self.cluster.sync()  # the partials have landed
        """
        current_builder().tile_op("cluster_store_shared", [_tensor(dst, "dst"), _tensor(src, "src")],
                                  args=[as_expr(target_rank, "target_rank")])

    def load_shared(self, src, *, target_rank, layout=None):
        """Load the block of rank ``target_rank``'s instance of a shared tensor into
        registers (``ld.shared::cluster``: distributed shared memory, sm_90a).

        The counterpart of ``self.cluster.store_shared``: ``src`` names the same elements in every
        block of the cluster and the load reads the peer's. Order it after the peer's
        writes, and keep the peer alive until the read is done, with
        ``self.cluster.sync()``.

        Args:
            src: a shared tensor (or a slice) that has not been freed.
            target_rank: the peer block's rank in the cluster (an integer scalar).
            layout: the tile's register layout, as ``self.annotate_layout`` gives it.

        Returns:
            A register tensor with ``src``'s dtype and shape.

        Dtypes and layouts:
            Any dtype of 8 bits or more; the layout is ``layout`` or inferred from the
            tile's uses, read with up to 16-byte accesses.

        Raises:
            TypeError: ``src`` is not shared or ``target_rank`` is not an integer.
            ValueError: (interpreter) the rank is not a block of the cluster.
            RuntimeError: (interpreter) the peer has not allocated ``src``, has freed it,
                or has finished.
            ScriptDataRaceError: (interpreter) the peer writes an element read here with no
                ``self.cluster.sync()`` between.
            NotImplementedError: code generation for sm_80.

        Example:
            .. code-block:: python

                self.cluster.sync()  # the peer's tile is written
                theirs = self.cluster.load_shared(tile, target_rank=rank ^ 1)
                self.cluster.sync()  # the peer outlives this read
        """
        tile = current_builder().tile_op("cluster_load_shared", [_tensor(src, "src")],
                                         args=[as_expr(target_rank, "target_rank")])
        if layout is not None:
            tile.annotate_layout(layout)
        return tile


_CLUSTER = ClusterGroup()


class ClusterInstructions:
    @property
    def cluster(self) -> ClusterGroup:
        """The cluster instruction group: ``self.cluster.sync()`` and friends."""
        return _CLUSTER
