"""TMA loads and stores in the interpreter against torch, with the hardware's edge rules:
boxes reaching outside the tensor read zeros (above, left, below, right) and stores are
clipped to the tensor (padding columns of a strided view stay untouched); a rank-3 view
with a tile over two of its dimensions; a multi-stage TMA + mbarrier matmul."""

import pytest
import torch

import tilus
from tilus import float16

from tests.interp.tma_scripts import TmaBatchedCopy, TmaPipelineMatmulStages, TmaRoundTrip


def shifted_plus_one(x, m, n, shift):
    """y[i, j] = x[i - shift, j + 8 * shift] + 1 inside x, 0 + 1 outside."""
    i = torch.arange(m).view(m, 1) - shift
    j = torch.arange(n).view(1, n) + 8 * shift
    inside = (i >= 0) & (i < m) & (j >= 0) & (j < n)
    src = x[:m, :n].float()[i.clamp(0, m - 1), j.clamp(0, n - 1)]
    return torch.where(inside, src, torch.zeros(())).add(1).half()


@pytest.mark.parametrize("block_m, block_n", [(16, 16), (16, 32), (32, 64), (16, 128)])
@pytest.mark.parametrize("shift", [0, 5, -3])
def test_round_trip_zero_fills_and_clips(block_m, block_n, shift):
    m, n, ld = 37, 72, 80
    x = torch.randn(m, ld, dtype=torch.float16)
    y = torch.full((m, ld), float("nan"), dtype=torch.float16)
    TmaRoundTrip(block_m, block_n, shift)(m, n, ld, x, y)
    torch.testing.assert_close(y[:, :n], shifted_plus_one(x, m, n, shift))
    assert torch.isnan(y[:, n:]).all(), "a clipped store wrote the padding columns"


def test_batched_rank3_view():
    b, m, n = 3, 45, 72
    x = torch.randn(b, m, n, dtype=torch.float32)
    y = torch.full((b, m, n), float("nan"), dtype=torch.float32)
    TmaBatchedCopy()(b, m, n, x, y)
    torch.testing.assert_close(y, x * 2)


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("m, n, k", [(45, 40, 56), (70, 72, 120)])
def test_multi_stage_matmul(stages, m, n, k):
    a = torch.randn(m, k, dtype=torch.float16)
    b = torch.randn(k, n, dtype=torch.float16)
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    TmaPipelineMatmulStages(32, 32, 16, stages)(m, n, k, a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=3e-2, rtol=3e-2)


def test_example_matmul_tma_pipeline(example):
    """The example at a small size (the interpreter takes the first configuration)."""
    module = example("matmul_tma_pipeline")
    m, n, k = 37, 72, 136
    a = torch.randn(m, k, dtype=torch.float16)
    b = torch.randn(k, n, dtype=torch.float16)
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    module.MatmulTmaPipeline(num_warps=4, block_m=64, block_n=128, block_k=64, stages=3)(m, n, k, a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=2e-2)
    module.main("cpu")  # the autotuned script as the example runs it


def test_a_box_starting_off_a_16_byte_multiple_is_refused():
    # The TMA unit faults (illegal instruction) on such a box on sm_90; the interpreter
    # refuses the same programs, naming the copy and the offset.
    m, n, ld = 37, 72, 80
    x = torch.randn(m, ld, dtype=torch.float16)
    y = torch.full((m, ld), float("nan"), dtype=torch.float16)
    with pytest.raises(Exception, match=r"tma.global_to_shared: the offset 5 along the last dimension .* multiple of 8 float16"):
        TmaRoundTrip(16, 16, 0, col_shift=5)(m, n, ld, x, y)


class StoreUnwritten(tilus.Script):
    """A TMA store of a shared tile that nothing wrote."""

    def __call__(self, y_ptr: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        gy = self.global_view(y_ptr, dtype=float16, shape=[16, 32])
        s = self.shared_tensor(dtype=float16, shape=[16, 32])
        self.fence.proxy_async()
        with self.single_thread():
            self.tma.shared_to_global(s, gy, offsets=[0, 0])
            self.tma.commit_group()
            self.tma.wait_group(0)
        self.sync()


def test_a_tma_store_of_unwritten_shared_memory_is_an_error():
    with pytest.raises(Exception, match=r"tma.shared_to_global reads element s\[0, 0\] of shared memory before "
                                        r"anything wrote it"):
        StoreUnwritten()(torch.zeros(16, 32, dtype=torch.float16))
