"""A peer block's shared tensor on the GPU (self.cluster.store_shared / load_shared,
st/ld.shared::cluster, sm_90a) against torch: split partials meeting in rank 0's shared
memory and a ring exchange, clusters of 2 to 8 over many SMs, fresh random data,
poisoned outputs.

One command: PYTHONPATH=python python -m pytest -q -m gpu tests/gpu/test_cluster_shared_gpu.py
"""

import pytest
import torch

from tests.interp.test_cluster_shared import ClusterRing, ClusterSplitSum, split_sum_reference

pytestmark = pytest.mark.gpu

needs_hopper = pytest.mark.skipif(not (torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 9),
                                  reason="needs sm_90 (clusters)")


@needs_hopper
@pytest.mark.parametrize("cluster,warps,clusters", [(2, 1, 5), (4, 2, 66), (8, 4, 33)])
def test_split_partials_meet_in_rank_zero(cluster, warps, clusters):
    x = torch.randn(clusters * cluster, 8, 48, device="cuda")
    out = torch.full((clusters, 8, 48), float("nan"), device="cuda")
    ClusterSplitSum(cluster, warps=warps)(clusters, x, out)
    torch.testing.assert_close(out, split_sum_reference(x, cluster))


@needs_hopper
@pytest.mark.parametrize("cluster,transposed", [(2, False), (4, False), (4, True), (8, True)])
def test_ring_reads_the_next_blocks_tile(cluster, transposed):
    blocks = 40 * cluster
    x = torch.randint(-1000, 1000, (blocks, 16, 24), dtype=torch.int32, device="cuda")
    out = torch.full_like(x, -7)
    ClusterRing(cluster, transposed)(blocks, x, out)
    nxt = torch.tensor([(b // cluster) * cluster + (b % cluster + 1) % cluster for b in range(blocks)], device="cuda")
    assert torch.equal(out, x[nxt])
