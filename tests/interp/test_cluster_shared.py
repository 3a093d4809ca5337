"""A peer block's shared tensor (self.cluster.store_shared / load_shared, distributed
shared memory) in the interpreter: split partials meeting in rank 0's shared memory, a
ring exchange through the peers' tiles, strided views, and the refusals: a peer that has
not allocated the tensor or has already finished, a rank outside the cluster, operands
that do not match; and the cross-block race check (two blocks touching one element
between the same two cluster barriers)."""
import pytest
import torch

import tilus
from tilus import float32, int32


class ClusterSplitSum(tilus.Script):
    """out[c] = the sum over the `cluster` blocks of cluster c of their [rows, cols] tiles
    x[block]: ranks 1.. store their tile into slot rank - 1 of rank 0's `partials`, which
    adds them to its own after the cluster barrier."""

    def __init__(self, cluster: int, rows: int = 8, cols: int = 48, warps: int = 2):
        super().__init__()
        self.cluster_size, self.rows, self.cols, self.warps = cluster, rows, cols, warps

    def __call__(self, clusters: int32, x_ptr: ~float32, out_ptr: ~float32):
        n, r, c = self.cluster_size, self.rows, self.cols
        self.attrs.blocks = [clusters * n]
        self.attrs.cluster_blocks = [n]
        self.attrs.warps = self.warps
        gx = self.global_view(x_ptr, dtype=float32, shape=[clusters * n, r, c])
        go = self.global_view(out_ptr, dtype=float32, shape=[clusters, r, c])
        partials = self.shared_tensor(dtype=float32, shape=[n - 1, r, c])
        tile = self.load_global(gx, offsets=[self.blockIdx.x, 0, 0], shape=[r, c])
        rank: int32 = self.cluster.blockRank
        self.cluster.sync()  # every block has allocated partials
        if rank > 0:
            self.cluster.store_shared(partials[rank - 1], tile, target_rank=0)
        self.cluster.sync()  # the partials have landed
        if rank == 0:
            total = tile
            for k in range(n - 1):
                total = total + self.load_shared(partials[k])
            self.store_global(go, total, offsets=[self.blockIdx.x // n, 0, 0], dims=[1, 2])
        self.free_shared(partials)


class ClusterRing(tilus.Script):
    """out[b] = x[the next block of b's cluster]: each block stores its tile in its own
    shared memory and reads its neighbour's (load_shared of the peer), through a
    transposed view when `transposed`."""

    def __init__(self, cluster: int, transposed: bool = False):
        super().__init__()
        self.cluster_size, self.transposed = cluster, transposed

    def __call__(self, blocks: int32, x_ptr: ~int32, out_ptr: ~int32):
        n = self.cluster_size
        self.attrs.blocks = [blocks]
        self.attrs.cluster_blocks = [n]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=int32, shape=[blocks, 16, 24])
        go = self.global_view(out_ptr, dtype=int32, shape=[blocks, 16, 24])
        mine = self.shared_tensor(dtype=int32, shape=[16, 24])
        self.store_shared(mine, self.load_global(gx, offsets=[self.blockIdx.x, 0, 0], shape=[16, 24]))
        rank: int32 = self.cluster.blockRank
        self.cluster.sync()  # every block's tile is written
        peer = (rank + 1) % n
        if self.transposed:
            theirs = self.transpose(self.cluster.load_shared(mine.transpose(), target_rank=peer))
        else:
            theirs = self.cluster.load_shared(mine, target_rank=peer)
        self.cluster.sync()  # every peer outlives the reads of its tile
        self.store_global(go, theirs, offsets=[self.blockIdx.x, 0, 0], dims=[1, 2])
        self.free_shared(mine)


def split_sum_reference(x, cluster):
    return x.view(-1, cluster, *x.shape[1:]).sum(dim=1)


@pytest.mark.parametrize("cluster,warps", [(2, 1), (4, 2), (8, 4)])
def test_split_partials_meet_in_rank_zero(cluster, warps):
    clusters = 3
    x = torch.randn(clusters * cluster, 8, 48)
    out = torch.full((clusters, 8, 48), float("nan"))
    ClusterSplitSum(cluster, warps=warps)(clusters, x, out)
    torch.testing.assert_close(out, split_sum_reference(x, cluster))


@pytest.mark.parametrize("cluster,transposed", [(2, False), (4, False), (4, True)])
def test_ring_reads_the_next_blocks_tile(cluster, transposed):
    blocks = 2 * cluster
    x = torch.randint(-1000, 1000, (blocks, 16, 24), dtype=torch.int32)
    out = torch.full_like(x, -7)
    ClusterRing(cluster, transposed)(blocks, x, out)
    nxt = [(b // cluster) * cluster + (b % cluster + 1) % cluster for b in range(blocks)]
    assert torch.equal(out, x[nxt])


class PeerTooEarly(tilus.Script):
    """Rank 0 stores into rank 1 before rank 1 has allocated (no cluster barrier first),
    or, with `after_exit`, after rank 1 has finished."""

    def __init__(self, after_exit: bool):
        super().__init__()
        self.after_exit = after_exit

    def __call__(self, out_ptr: ~float32):
        self.attrs.blocks = [2]
        self.attrs.cluster_blocks = [2]
        self.attrs.warps = 1
        s = self.shared_tensor(dtype=float32, shape=[4, 8])
        tile = self.register_tensor(dtype=float32, shape=[4, 8], init=1.0)
        rank: int32 = self.cluster.blockRank
        if self.after_exit:
            self.cluster.sync()
        if rank == 0:
            self.cluster.store_shared(s, tile, target_rank=1)
        self.free_shared(s)


def test_a_peer_not_yet_allocated_is_refused():
    with pytest.raises(RuntimeError, match=r"cluster.store_shared: the block of rank 1 has not allocated s's shared"):
        PeerTooEarly(after_exit=False)(torch.zeros(1))


def test_a_finished_peer_is_refused():
    with pytest.raises(RuntimeError, match=r"the block of rank 1 has already finished.*self.cluster.sync\(\) after"):
        PeerTooEarly(after_exit=True)(torch.zeros(1))


class PeerRank(tilus.Script):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank

    def __call__(self, out_ptr: ~float32):
        self.attrs.blocks = [2]
        self.attrs.cluster_blocks = [2]
        self.attrs.warps = 1
        s = self.shared_tensor(dtype=float32, shape=[4, 8])
        self.cluster.sync()
        t = self.cluster.load_shared(s, target_rank=self.rank)
        self.cluster.sync()
        self.free_shared(s)


def test_a_rank_outside_the_cluster_is_refused():
    with pytest.raises(ValueError, match=r"cluster.load_shared: target rank 2 is not a block of the cluster \(2 blocks\)"):
        PeerRank(2)(torch.zeros(1))


class PeerMismatch(tilus.Script):
    def __call__(self, out_ptr: ~float32):
        self.attrs.blocks = [2]
        self.attrs.cluster_blocks = [2]
        self.attrs.warps = 1
        s = self.shared_tensor(dtype=float32, shape=[4, 8])
        self.cluster.store_shared(s, self.register_tensor(dtype=float32, shape=[8, 4], init=0.0), target_rank=1)
        self.free_shared(s)


def test_operands_that_do_not_match_are_refused_at_build():
    with pytest.raises(ValueError, match=r"cluster.store_shared: the value has shape \[8, 4\] but shared tensor s"):
        PeerMismatch()(torch.zeros(1))


class MissingBarrier(tilus.Script):
    """Rank 0 writes its s, rank 1 overwrites it (cluster.store_shared), rank 0 reads it,
    a cluster barrier between each step; `drop` leaves one out: "before" (rank 1's store
    races rank 0's own write), "after" (rank 0's read races the store), or "none"."""

    def __init__(self, drop: str):
        super().__init__()
        self.drop = drop

    def __call__(self, out_ptr: ~float32):
        self.attrs.blocks = [2]
        self.attrs.cluster_blocks = [2]
        self.attrs.warps = 1
        go = self.global_view(out_ptr, dtype=float32, shape=[4, 8])
        s = self.shared_tensor(dtype=float32, shape=[4, 8])
        rank: int32 = self.cluster.blockRank
        self.store_shared(s, self.register_tensor(dtype=float32, shape=[4, 8], init=2.0))
        if self.drop != "before":
            self.cluster.sync()
        if rank == 1:
            self.cluster.store_shared(s, self.register_tensor(dtype=float32, shape=[4, 8], init=5.0), target_rank=0)
        if self.drop != "after":
            self.cluster.sync()
        if rank == 0:
            self.store_global(go, self.load_shared(s), offsets=[0, 0])
        self.cluster.sync()
        self.free_shared(s)


def test_cluster_barriers_order_peer_stores():
    out = torch.zeros(4, 8)
    MissingBarrier("none")(out)
    assert torch.equal(out, torch.full((4, 8), 5.0))


@pytest.mark.parametrize("drop,first,then", [
    ("before", r"written by block \(0, 0, 0\) \(rank 0\) itself", r"written by block \(1, 0, 0\) \(rank 1\)"),
    ("after", r"written by block \(1, 0, 0\) \(rank 1\)", r"read by block \(0, 0, 0\) \(rank 0\) itself"),
])
def test_a_missing_cluster_barrier_is_a_race(drop, first, then):
    with pytest.raises(Exception, match=rf"data race on the shared memory of block \(0, 0, 0\) \(rank 0\): "
                                        rf"element s\[0, 0\] is {first} at .* and {then} at .*, with no "
                                        rf"self.cluster.sync\(\) between them"):
        MissingBarrier(drop)(torch.zeros(4, 8))


class PeerReadRace(tilus.Script):
    """Rank 0 reads rank 1's tile while rank 1 may still be writing it (no barrier
    between rank 1's store and rank 0's read), or with the barrier (`ordered`)."""

    def __init__(self, ordered: bool):
        super().__init__()
        self.ordered = ordered

    def __call__(self, out_ptr: ~float32):
        self.attrs.blocks = [2]
        self.attrs.cluster_blocks = [2]
        self.attrs.warps = 1
        go = self.global_view(out_ptr, dtype=float32, shape=[4, 8])
        s = self.shared_tensor(dtype=float32, shape=[4, 8])
        rank: int32 = self.cluster.blockRank
        self.cluster.sync()
        if rank == 1:
            self.store_shared(s, self.register_tensor(dtype=float32, shape=[4, 8], init=3.0))
        if self.ordered:
            self.cluster.sync()
        if rank == 0:
            self.store_global(go, self.cluster.load_shared(s, target_rank=1), offsets=[0, 0])
        self.cluster.sync()
        self.free_shared(s)


def test_reading_a_peer_needs_a_barrier_after_its_write():
    out = torch.zeros(4, 8)
    PeerReadRace(ordered=True)(out)
    assert torch.equal(out, torch.full((4, 8), 3.0))
    with pytest.raises(Exception, match=r"element s\[0, 0\] is written by block \(1, 0, 0\) \(rank 1\) itself at .* "
                                        r"and read by block \(0, 0, 0\) \(rank 0\) at"):
        PeerReadRace(ordered=False)(torch.zeros(4, 8))


class LandingBesidePeerStore(tilus.Script):
    """Rank 0 fills its tile `s` by `how` ("copy_async" from global, "tma" through an
    mbarrier, or "atomic": shared atomics adding to a stored tile) while rank 1 stores into
    the same tile of rank 0; with `ordered`, a cluster barrier separates the two."""

    def __init__(self, how: str, ordered: bool):
        super().__init__()
        self.how, self.ordered = how, ordered

    def __call__(self, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [2]
        self.attrs.cluster_blocks = [2]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[4, 8])
        go = self.global_view(out_ptr, dtype=float32, shape=[4, 8])
        s = self.shared_tensor(dtype=float32, shape=[4, 8])
        rank: int32 = self.cluster.blockRank
        if self.how == "tma":
            bar = self.mbarrier.alloc(counts=[1])
        self.cluster.sync()  # both blocks have allocated s
        if rank == 0:
            if self.how == "copy_async":
                self.copy_async(src=gx, dst=s, offsets=[0, 0])
                self.copy_async_wait_all()
            elif self.how == "tma":
                with self.single_thread():
                    self.mbarrier.arrive_and_expect_tx(bar, 4 * 8 * 4)
                    self.tma.global_to_shared(src=gx, dst=s, offsets=[0, 0], mbarrier=bar)
                self.mbarrier.wait(bar, phase=0)
            else:
                self.store_shared(s, self.register_tensor(dtype=float32, shape=[4, 8], init=1.0))
                self.cluster.sync()
                self.atomic.shared_add(s, self.load_global(gx, offsets=[0, 0], shape=[4, 8]))
        elif self.how == "atomic":
            self.cluster.sync()
        if self.ordered:
            self.cluster.sync()
        if rank == 1:
            self.cluster.store_shared(s, self.register_tensor(dtype=float32, shape=[4, 8], init=7.0), target_rank=0)
        self.cluster.sync()
        if rank == 0:
            self.store_global(go, self.load_shared(s), offsets=[0, 0])
        self.cluster.sync()
        self.free_shared(s)


@pytest.mark.parametrize("how", ["copy_async", "tma", "atomic"])
def test_own_landings_and_atomics_race_with_a_peer_store(how):
    """A copy landing (cp.async or TMA) or a shared atomic in a block's tile is that block's
    write: a peer's store to the same element between the same two cluster barriers races
    with it; with a barrier between them the peer's store lands last."""
    x = torch.rand(4, 8)
    out = torch.zeros(4, 8)
    LandingBesidePeerStore(how, ordered=True)(x, out)
    assert torch.equal(out, torch.full((4, 8), 7.0))
    with pytest.raises(Exception, match=r"data race on the shared memory of block \(0, 0, 0\) \(rank 0\): element "
                                        r"s\[0, 0\] is written by ") as caught:
        LandingBesidePeerStore(how, ordered=False)(x, torch.zeros(4, 8))
    # the two writes, in the order the blocks ran
    own = {"copy_async": "self.copy_async(", "tma": "self.tma.global_to_shared(", "atomic": "self.atomic.shared_add("}
    message = str(caught.value)
    assert f"written by block (0, 0, 0) (rank 0) itself at " in message and own[how] in message
    assert "written by block (1, 0, 0) (rank 1) at " in message and "self.cluster.store_shared(" in message
