"""Thread groups, setmaxnreg and clusters on the GPU (sm_90a for setmaxnreg and clusters)
against torch and the interpreter: fresh random data, odd shapes, poisoned outputs.

One command: PYTHONPATH=python python -m pytest -q -m gpu tests/gpu/test_thread_groups_gpu.py
"""

import pytest
import torch

import tilus
from tests.interp.test_clusters import ClusterExchange, MulticastRows, MulticastSignal, multicast_rows_reference
from tests.interp.test_thread_groups import (GroupDotOfTransposedTile, SiblingGroupColumnSums, SuffixSumsInAGroup,
                                            WsCopyMatmul, suffix_sums_args, ws_copy_matmul_reference)
from tilus import float32, int32
from tilus.utils import cdiv

pytestmark = pytest.mark.gpu


def _hopper():
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 9


needs_hopper = pytest.mark.skipif(not _hopper(), reason="needs sm_90 (setmaxnreg, clusters)")


@needs_hopper
@pytest.mark.parametrize("m, n, k, stages", [(70, 90, 100, 3), (257, 129, 333, 2), (64, 64, 32, 4),
                                             (1000, 515, 260, 3)])
def test_warp_specialized_matmul_matches_torch(m, n, k, stages):
    a = torch.randn(m, k, dtype=torch.float16, device="cuda")
    b = torch.randn(k, n, dtype=torch.float16, device="cuda")
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    s = torch.full((m, cdiv(n, 64)), float("nan"), dtype=torch.float32, device="cuda")
    WsCopyMatmul(stages=stages)(m, n, k, a, b, c, s)
    torch.cuda.synchronize()
    ref_c, ref_s = ws_copy_matmul_reference(a, b)
    torch.testing.assert_close(c.float(), ref_c, atol=5e-2, rtol=2e-2)
    torch.testing.assert_close(s, ref_s, atol=2e-1, rtol=2e-2)


class GroupSync(tilus.Script):
    """The last 4 of 8 warps (a group) load a tile spread over their 128 threads, sum it
    across warps (a named barrier for the group), sync the group and write x + sum; the
    first 4 warps write x * 2 into another output at the same time."""

    def __call__(self, n: int32, x_ptr: ~float32, y_ptr: ~float32, z_ptr: ~float32):
        self.attrs.blocks = [cdiv(n, 256)]
        self.attrs.warps = 8
        off: int32 = self.blockIdx.x * 256
        gx = self.global_view(x_ptr, dtype=float32, shape=[n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])
        gz = self.global_view(z_ptr, dtype=float32, shape=[n])
        with self.warp_group(4, 4):
            t = self.load_global(gx, offsets=[off], shape=[256])
            s = self.sum(t, dim=0)
            self.sync()
            self.store_global(gy, t + s, offsets=[off])
        with self.warp_group(0, 4):
            t2 = self.load_global(gx, offsets=[off], shape=[256])
            self.store_global(gz, t2 * 2.0, offsets=[off])


@pytest.mark.parametrize("n", [1, 255, 257, 1000])
def test_group_sum_and_sync_match_torch(n):
    x = torch.randn(n, device="cuda")
    y = torch.full((n,), float("nan"), device="cuda")
    z = torch.full((n,), float("nan"), device="cuda")
    GroupSync()(n, x, y, z)
    torch.cuda.synchronize()
    xp = torch.nn.functional.pad(x, (0, (-n) % 256)).view(-1, 256)
    sums = xp.sum(dim=1).repeat_interleave(256)[:n]
    torch.testing.assert_close(y, x + sums, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(z, x * 2)


@needs_hopper
@pytest.mark.parametrize("blocks, cluster", [(4, 2), (6, 3), (8, 8), (132, 4)])
def test_cluster_exchange_matches_the_interpreter(blocks, cluster):
    out = torch.full((blocks, 5), -1, dtype=torch.int32, device="cuda")
    scratch = torch.full((blocks,), -1, dtype=torch.int32, device="cuda")
    ClusterExchange(cluster)(blocks, out, scratch)
    torch.cuda.synchronize()
    ref_out = torch.full((blocks, 5), -1, dtype=torch.int32)
    ClusterExchange(cluster)(blocks, ref_out, torch.full((blocks,), -1, dtype=torch.int32))
    assert out.cpu().tolist() == ref_out.tolist()


@needs_hopper
def test_multicast_arrival_on_the_gpu():
    out = torch.full((4,), -1, dtype=torch.int32, device="cuda")
    MulticastSignal()(out)
    torch.cuda.synchronize()
    assert out.cpu().tolist() == [100, 101, 102, 103]


@needs_hopper
@pytest.mark.parametrize("cluster", [2, 4])
def test_tma_multicast_on_the_gpu_matches_the_interpreter(cluster):
    x = torch.randn(2 * cluster * 8, 20)
    ref = torch.full((2 * cluster, cluster * 8, 16), float("nan"))
    MulticastRows(cluster)(20, x, ref)
    torch.testing.assert_close(ref, multicast_rows_reference(x, cluster))
    out = torch.full((2 * cluster, cluster * 8, 16), float("nan"), device="cuda")
    MulticastRows(cluster)(20, x.cuda(), out)
    torch.cuda.synchronize()
    torch.testing.assert_close(out.cpu(), ref)


@needs_hopper
def test_tma_copy_issued_by_one_thread_on_the_gpu():
    from tests.interp.test_thread_groups import TmaInOneThread
    x = torch.randn(16, 16, device="cuda")
    y = torch.full((16, 16), float("nan"), device="cuda")
    TmaInOneThread()(x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, x + 1.0)


@pytest.mark.parametrize("n", [1, 5, 132, 300])
def test_a_thread_group_waits_on_a_semaphore_of_later_blocks(n):
    """Each block's consumer warpgroup waits for the block after it; the producer warpgroup
    does not take part in the semaphore's barriers (it would hang if it had to)."""
    x, out, tag, sem = suffix_sums_args(n, "cuda")
    SuffixSumsInAGroup()(n, x, out, tag, sem)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x.flip(0).cumsum(0).flip(0), rtol=1e-4, atol=1e-4)
    assert tag.flatten().tolist() == list(range(n))
    assert sem.item() == n


def test_sibling_groups_reduce_and_multiply_side_by_side():
    """Two groups of 2 warps at once: each one's cross-warp reduction and transposed mma
    operand use memory of their own (they once shared a scratch tile)."""
    for _ in range(3):  # a race shows on some runs only
        x = torch.randn(128, 32, device="cuda")
        out = torch.full((2, 32), float("nan"), device="cuda")
        SiblingGroupColumnSums()(x, out)
        torch.testing.assert_close(out, x.view(2, 64, 32).sum(1))
        a = torch.randn(32, 16, dtype=torch.float16, device="cuda")
        b = torch.randn(128, 16, dtype=torch.float16, device="cuda")
        c = torch.full((32, 128), float("nan"), device="cuda")
        GroupDotOfTransposedTile()(a, b, c)
        torch.testing.assert_close(c, a.float() @ b.float().T, atol=1e-2, rtol=1e-2)
