"""The pipelined matmuls with their loops unrolled by the ring of stages
(tilus.option.static_rings) against torch on the GPU: odd shapes, fresh random data,
poisoned outputs; every configuration of the seed's tiles that the autotuner picks on
Hopper (wgmma and TMA there), plus split-K with partial rounds of the ring.

One command: PYTHONPATH=python python -m pytest -q -m gpu tests/gpu/test_static_rings_gpu.py
"""

import pytest
import torch

import tilus

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def static_rings():
    tilus.option.static_rings(True)
    yield
    tilus.option.static_rings(None)


def _inputs(m, n, k):
    # scaled so that C's entries are O(1): fp16 partials of split-K then round at ~1e-3,
    # far inside the tolerance (unscaled randn at k = 4104 gives |C| ~ 64, where a
    # split-K partial rounded to fp16 is already 0.03 off and four of them exceed it)
    a = (torch.randn(m, k, device="cuda") / k ** 0.5).half()
    b = torch.randn(k, n, device="cuda").half()
    return a, b


def _check(kernel, m, n, k, rolled=None):
    """kernel's C against torch; with `rolled` (the same script built with rolled loops),
    bit for bit against it as well: unrolling by the ring reorders no arithmetic."""
    a, b = _inputs(m, n, k)
    c = torch.full((m, n), float("nan"), device="cuda").half()
    kernel(m, n, k, a, b, c)
    torch.cuda.synchronize()
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=2e-2, rtol=2e-2)
    if rolled is not None:
        tilus.option.static_rings(False)
        try:
            c_rolled = torch.full((m, n), float("nan"), device="cuda").half()
            rolled(m, n, k, a, b, c_rolled)
            torch.cuda.synchronize()
        finally:
            tilus.option.static_rings(True)
        assert torch.equal(c, c_rolled)


@pytest.mark.parametrize("warps, bm, bn, bk, stages", [(4, 128, 128, 32, 3), (8, 128, 128, 32, 4),
                                                       (4, 64, 128, 32, 5), (4, 128, 64, 16, 3),
                                                       (4, 32, 256, 32, 5)])
@pytest.mark.parametrize("split", [1, 4])
@pytest.mark.parametrize("m, n, k", [(1000, 1032, 1064), (129, 264, 4104)])
def test_seed_matmul_v5(example, warps, bm, bn, bk, stages, split, m, n, k):
    make = example("matmul_v5_splitk").MatmulV5
    config = dict(num_warps=warps, block_m=bm, block_n=bn, block_k=bk, num_stages=stages, split_k_factor=split)
    ring_step = f"current_stage = ((current_stage + 1) % {stages})"  # (split-K's semaphore has a % too)
    kernel = make(**config)
    assert ring_step not in kernel.ir(m, n, k, *[torch.empty(1, 1, device="cuda").half()] * 3)
    tilus.option.static_rings(False)
    rolled = make(**config)
    assert ring_step in rolled.ir(m, n, k, *[torch.empty(1, 1, device="cuda").half()] * 3)
    tilus.option.static_rings(True)
    _check(kernel, m, n, k, rolled)
    _check(kernel, m, n, k, rolled)  # again: split-K leaves its semaphores reset


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_pipeline_and_wgmma_examples(example, stages):
    _check(example("matmul_v3_pipeline").MatmulV3(num_stages=stages), 1000, 1032, 1064)
    if torch.cuda.get_device_capability()[0] >= 9:
        _check(example("matmul_wgmma").MatmulWgmma(num_warps=4, block_m=128, block_n=128, block_k=64,
                                                   num_stages=min(stages + 1, 4)), 1000, 1032, 1064)
