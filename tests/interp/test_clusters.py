"""Thread-block clusters in the interpreter (Tilus 0.2's self.cluster and
self.attrs.cluster_blocks): the blocks of a cluster run together, so cluster.sync and
arrivals on a peer block's mbarrier (remote and multicast) complete; the cluster queries;
the deadlock report and the refusals."""
import pytest
import torch

import tilus
from tests.conftest import script_line
from tilus import float32, int32, uint32


class ClusterExchange(tilus.Script):
    """Each block of a 2-block cluster arrives on its peer's barrier and waits on its own:
    this completes only when the two run at the same time. Then each writes its cluster
    coordinates and a value its peer stored in global memory before the cluster barrier."""

    def __init__(self, cluster=2):
        super().__init__()
        self.cluster_size = cluster

    def __call__(self, blocks: int32, out_ptr: ~int32, scratch_ptr: ~int32):
        self.attrs.blocks = [blocks]
        self.attrs.cluster_blocks = [self.cluster_size]
        self.attrs.warps = 4
        out = self.global_view(out_ptr, dtype=int32, shape=[blocks, 5])
        scratch = self.global_view(scratch_ptr, dtype=int32, shape=[blocks])
        bar = self.mbarrier.alloc(counts=[128])
        self.cluster.sync()  # every block's barriers are initialised
        rank: int32 = self.cluster.blockRank
        peer: int32 = (rank + 1) % self.cluster_size
        self.mbarrier.arrive_and_expect_tx_remote(bar, 0, target_rank=peer)
        self.mbarrier.wait(bar, phase=0, scope="cluster")
        mine = self.register_tensor(dtype=int32, shape=[1], init=self.blockIdx.x * 10 + 7)
        self.store_global(scratch, mine, offsets=[self.blockIdx.x])
        self.cluster.sync()
        peer_block: int32 = self.blockIdx.x - rank + peer
        seen = self.load_global(scratch, offsets=[peer_block], shape=[1])
        out4 = self.global_view(out_ptr, dtype=int32, shape=[blocks * 5])
        for col, value in enumerate([rank, self.cluster.clusterDim.x, self.cluster.blockIdx.x,
                                     self.cluster.clusterDim.y]):
            v = self.register_tensor(dtype=int32, shape=[1, 1], init=value)
            self.store_global(out, v, offsets=[self.blockIdx.x, col])
        self.store_global(out4, seen, offsets=[self.blockIdx.x * 5 + 4])


@pytest.mark.parametrize("blocks, cluster", [(4, 2), (6, 3), (2, 2)])
def test_cluster_blocks_meet_at_barriers_and_see_each_other(blocks, cluster):
    out = torch.full((blocks, 5), -1, dtype=torch.int32)
    scratch = torch.full((blocks,), -1, dtype=torch.int32)
    ClusterExchange(cluster)(blocks, out, scratch)
    for b in range(blocks):
        rank = b % cluster
        peer_block = b - rank + (rank + 1) % cluster
        assert out[b].tolist() == [rank, cluster, rank, 1, peer_block * 10 + 7], (b, out)


class MulticastSignal(tilus.Script):
    """Rank 0's first warp signals every block of the cluster through one multicast
    arrival carrying expected bytes that nobody sends: the peers must then see their
    barrier's phase still open, and a remote arrival of the bytes' count closes it."""

    def __call__(self, out_ptr: ~int32):
        self.attrs.blocks = [4]
        self.attrs.cluster_blocks = [4]
        self.attrs.warps = 4
        out = self.global_view(out_ptr, dtype=int32, shape=[4])
        bar = self.mbarrier.alloc(counts=[1])
        self.cluster.sync()
        rank: int32 = self.cluster.blockRank
        if rank == 0:
            with self.single_warp(0):
                self.mbarrier.arrive_and_expect_tx_multicast(bar, 0, multicast_mask=0b1011)
        if rank == 2:
            with self.single_thread():
                self.mbarrier.arrive_and_expect_tx_remote(bar, 0, target_rank=2)
        self.mbarrier.wait(bar, phase=0)
        v = self.register_tensor(dtype=int32, shape=[1], init=rank + 100)
        self.store_global(out, v, offsets=[self.blockIdx.x])


def test_multicast_arrival_reaches_the_masked_blocks():
    out = torch.full((4,), -1, dtype=torch.int32)
    MulticastSignal()(out)
    assert out.tolist() == [100, 101, 102, 103]


class MapAddr(tilus.Script):
    def __call__(self, out_ptr: ~uint32):
        self.attrs.blocks = [2]
        self.attrs.cluster_blocks = 2
        self.attrs.warps = 1
        out = self.global_view(out_ptr, dtype=uint32, shape=[2, 2])
        bars = self.mbarrier.alloc(counts=[32, 32])
        self.cluster.sync()
        rank: int32 = self.cluster.blockRank
        # rank 1 arrives on rank 0's second barrier through the mapped address
        if rank == 1:
            self.mbarrier.arrive_and_expect_tx_remote(bars[1], 0, target_rank=0)
        if rank == 0:
            self.mbarrier.wait(bars[1], phase=0)
        a = self.register_tensor(dtype=uint32, shape=[1, 1],
                                 init=self.cluster.map_shared_addr(bars[1], target_rank=rank))
        b = self.register_tensor(dtype=uint32, shape=[1, 1], init=bars[1])
        self.store_global(out, a - b, offsets=[self.blockIdx.x, 0])
        self.store_global(out, b - bars[0], offsets=[self.blockIdx.x, 1])
        self.cluster.sync()


def test_map_shared_addr_names_the_peer_barrier():
    out = torch.full((2, 2), 7, dtype=torch.int32).view(torch.uint32) if hasattr(torch, "uint32") else None
    if out is None:
        pytest.skip("torch has no uint32")
    MapAddr()(out)
    assert out.view(torch.int32)[:, 1].tolist() == [8, 8]
    # the mapped address differs from the local one only in the rank bits
    assert all(v != 0 for v in out.view(torch.int32)[:, 0].tolist())


class OneBlockSkipsSync(tilus.Script):
    def __call__(self, out_ptr: ~int32):
        self.attrs.blocks = [2]
        self.attrs.cluster_blocks = [2]
        self.attrs.warps = 2
        if self.cluster.blockRank == 0:
            self.cluster.sync()


def test_cluster_sync_missing_a_block_is_a_deadlock():
    with pytest.raises(RuntimeError, match=r"deadlock: block \(0, 0, 0\) waits in cluster.sync .* for 64 more"):
        OneBlockSkipsSync()(torch.zeros(1, dtype=torch.int32))


def test_grid_not_a_whole_number_of_clusters_is_refused():
    with pytest.raises(ValueError, match=r"not a whole number of clusters of \(2, 1, 1\)"):
        ClusterExchange(2)(3, torch.zeros(3, 5, dtype=torch.int32), torch.zeros(3, dtype=torch.int32))


def test_cluster_blocks_attribute_is_checked():
    class TooBig(tilus.Script):
        def __call__(self, out_ptr: ~int32):
            self.attrs.blocks = [16]
            self.attrs.cluster_blocks = [4, 4]
            self.attrs.warps = 1

    with pytest.raises(ValueError, match="at most 8 blocks per cluster"):
        TooBig()(torch.zeros(1, dtype=torch.int32))


class MulticastRows(tilus.Script):
    """A cluster of `cluster` blocks; the block of rank r loads row block r of x with one
    TMA copy multicast to every block, so each block ends up with all `cluster` row
    blocks in its shared tile and writes them (times its rank + 1) to its own output."""

    def __init__(self, cluster=2):
        super().__init__()
        self.cluster_size = cluster

    def __call__(self, cols: int32, x_ptr: ~float32, out_ptr: ~float32):
        cs = self.cluster_size
        self.attrs.blocks = [cs * 2]
        self.attrs.cluster_blocks = [cs]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float32, shape=[2 * cs * 8, cols])
        tile = self.shared_tensor(dtype=float32, shape=[cs, 8, 16])
        full = self.mbarrier.alloc(counts=[1])
        self.cluster.sync()  # every block's barrier exists before a copy lands on it
        rank: int32 = self.cluster.blockRank
        first_row: int32 = (self.blockIdx.x - rank) * 8  # the cluster's rows
        with self.single_thread():
            self.mbarrier.arrive_and_expect_tx(full, cs * 8 * 16 * 4)
            self.tma.global_to_shared(src=gx, dst=tile[rank], offsets=[first_row + rank * 8, 0], mbarrier=full,
                                      multicast_mask=(1 << cs) - 1)
        self.mbarrier.wait(full, phase=0)
        got = self.load_shared(tile)
        out3 = self.global_view(out_ptr, dtype=float32, shape=[2 * cs, cs, 8, 16])
        self.store_global(out3, self.unsqueeze(got * (rank + 1.0), dim=0), offsets=[self.blockIdx.x, 0, 0, 0])
        self.cluster.sync()  # no block leaves while a peer's copy may still land in it


def multicast_rows_reference(x, cluster):
    blocks = 2 * cluster
    out = torch.empty(blocks, cluster * 8, 16)
    for b in range(blocks):
        rank, first = b % cluster, (b - b % cluster) * 8
        out[b] = x[first:first + cluster * 8, :16] * (rank + 1)
    return out


@pytest.mark.parametrize("cluster", [2, 4])
def test_tma_multicast_lands_in_every_masked_block(cluster):
    x = torch.randn(2 * cluster * 8, 20)
    out = torch.full((2 * cluster, cluster * 8, 16), float("nan"))
    MulticastRows(cluster)(20, x, out)
    torch.testing.assert_close(out, multicast_rows_reference(x, cluster))


class MulticastOutsideCluster(tilus.Script):
    def __call__(self, x_ptr: ~float32):
        self.attrs.blocks = [2]
        self.attrs.cluster_blocks = [2]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[8, 16])
        tile = self.shared_tensor(dtype=float32, shape=[8, 16])
        full = self.mbarrier.alloc(counts=[1])
        self.cluster.sync()
        with self.single_thread():
            self.tma.global_to_shared(src=gx, dst=tile, offsets=[0, 0], mbarrier=full, multicast_mask=0b100)


def test_multicast_to_a_block_outside_the_cluster_is_refused():
    with pytest.raises(ValueError, match=r"multicast_mask 4 names blocks outside the cluster of 2"):
        MulticastOutsideCluster()(torch.randn(8, 16))


class MulticastWithoutCluster(tilus.Script):
    def __call__(self, x_ptr: ~float32):
        self.attrs.blocks = [2]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[8, 16])
        tile = self.shared_tensor(dtype=float32, shape=[8, 16])
        full = self.mbarrier.alloc(counts=[1])
        with self.single_thread():
            self.mbarrier.arrive_and_expect_tx(full, 8 * 16 * 4)
            self.tma.global_to_shared(src=gx, dst=tile, offsets=[0, 0], mbarrier=full, multicast_mask=1)
        self.mbarrier.wait(full, phase=0)


def test_multicast_without_a_cluster_is_refused_as_on_cuda():
    with pytest.raises(ValueError, match="multicast_mask needs a cluster of blocks") as info:
        MulticastWithoutCluster()(torch.randn(8, 16))
    assert "multicast_mask=1" in info.value.text


def test_a_copy_pipeline_in_clusters_matches_torch():
    """tests/gpu/kernels.py's clustered pipeline (blocks in pairs that never talk): on CPU
    each block of a pair computes its own tile, as on the GPU."""
    from tests.gpu.kernels import ClusteredPipelineMatmul

    torch.manual_seed(0)
    m, n, k = 256, 130, 200
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    ClusteredPipelineMatmul()(m, n, k, a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2, atol=5e-2)


class ClusterChain(tilus.Script):
    """Clusters handing a semaphore down from the last cluster to the first: in each
    cluster, rank 0 waits for the cluster after it, both blocks exchange values through
    the peer's mbarrier (they must run together), and rank 1 releases the cluster before.
    out[b] = b * 10 + 1 + the number of clusters that finished before b's cluster."""

    def __call__(self, blocks: int32, out_ptr: ~int32, sem_ptr: ~int32):
        self.attrs.blocks = [blocks]
        self.attrs.cluster_blocks = [2]
        self.attrs.warps = 4
        out = self.global_view(out_ptr, dtype=int32, shape=[blocks])
        sem = self.global_view(sem_ptr, dtype=int32, shape=[1])
        bar = self.mbarrier.alloc(counts=[128])
        self.cluster.sync()
        rank: int32 = self.cluster.blockRank
        clusters: int32 = blocks // 2
        me: int32 = self.blockIdx.x // 2
        if rank == 0:
            self.lock_semaphore(~sem[0], clusters - 1 - me)
        self.mbarrier.arrive_and_expect_tx_remote(bar, 0, target_rank=1 - rank)
        self.mbarrier.wait(bar, phase=0, scope="cluster")
        done = self.load_global(sem, offsets=[0], shape=[1])
        self.store_global(out, done + (self.blockIdx.x * 10 + 1), offsets=[self.blockIdx.x])
        self.cluster.sync()
        if rank == 1:
            self.release_semaphore(~sem[0], clusters - me)


@pytest.mark.parametrize("blocks", [2, 6, 12])
def test_clusters_wait_on_semaphores_of_later_clusters(blocks):
    out = torch.full((blocks,), -1, dtype=torch.int32)
    sem = torch.zeros(1, dtype=torch.int32)
    ClusterChain()(blocks, out, sem)
    clusters = blocks // 2
    expect = [b * 10 + 1 + (clusters - 1 - b // 2) for b in range(blocks)]
    assert out.tolist() == expect
    assert sem.item() == clusters


class ClusterWaitsForever(tilus.Script):
    def __call__(self, sem_ptr: ~int32):
        self.attrs.blocks = [4]
        self.attrs.cluster_blocks = [2]
        self.attrs.warps = 4
        sem = self.global_view(sem_ptr, dtype=int32, shape=[1])
        self.lock_semaphore(~sem[0], 9)


def test_clusters_waiting_on_a_semaphore_no_block_releases_is_a_deadlock():
    with pytest.raises(RuntimeError, match=r"deadlock: block \(\d, 0, 0\) waits in lock_semaphore for value 9"):
        ClusterWaitsForever()(torch.zeros(1, dtype=torch.int32))


class GroupOfAClusterWaitsForever(tilus.Script):
    def __call__(self, out_ptr: ~int32):
        self.attrs.blocks = [2]
        self.attrs.cluster_blocks = [2]
        self.attrs.warps = 8
        bar = self.mbarrier.alloc(counts=[1])
        self.cluster.sync()
        with self.warp_group(0, 4):
            self.mbarrier.wait(bar, phase=0)
        with self.warp_group(4, 4):
            self.mbarrier.wait(bar, phase=0)


def test_a_deadlock_inside_the_groups_of_a_cluster_points_at_the_waiting_line():
    line = script_line(GroupOfAClusterWaitsForever, "self.mbarrier.wait(bar, phase=0)")
    with pytest.raises(RuntimeError, match=r"deadlock: block \(0, 0, 0\) thread group \[0, 128\) waits on mbarrier") as e:
        GroupOfAClusterWaitsForever()(torch.zeros(1, dtype=torch.int32))
    assert f"line {line}," in str(e.value), str(e.value)
