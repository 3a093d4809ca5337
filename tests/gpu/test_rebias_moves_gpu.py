"""The rebias of small-float codes moved from their conversion to the float32 scale of
the dot product they feed (csrc/codegen/rebias_moves.h) on the GPU: bit for bit the
build that keeps it (tilus.option.codegen(fold_scales=False), and the same product also
stored, which keeps it too), and the model's value within float32 rounding. The move's
exactness rests on the tensor cores scaling every product and partial sum alike; this is
the test of it. Fresh random data each run, outputs poisoned before."""

import numpy as np
import pytest
import torch

import tilus
from tests.lang.lowp_model import decode_all
from tests.scaled_dot_kernels import ScaledDot, lane_codes_model

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def _inputs(kernel, gen):
    x = (torch.randn(16, 16, generator=gen) * 4).half()
    x[0, :3] = torch.tensor([6e-8, -3e-5, 60000.0]).half()  # a subnormal, a small and a large activation
    packed = torch.randint(0, 256, (32 * kernel.nbytes,), dtype=torch.uint8, generator=gen)
    scale = ((torch.rand(1, 64, generator=gen) + 0.01) * 3).half()
    scale[0, :3] = torch.tensor([65504.0, 2.0 ** -24, -0.0]).half()
    return x, packed, scale


def _run(kernel, x, packed, scale):
    y = torch.full((16, 64), float("nan"), device="cuda")
    extra = torch.full((16, 64), float("nan"), device="cuda")
    kernel(x.cuda(), packed.cuda(), scale.cuda(), y, extra)
    torch.cuda.synchronize()
    return y.cpu()


@pytest.mark.parametrize("name", ["float6_e3m2", "float4_e2m1", "float5_e2m2", "float7_e4m2"])
def test_moved_rebias_matches_the_kept_one_bit_for_bit(name):
    w_dtype = getattr(tilus, name)
    gen = torch.Generator().manual_seed(np.random.SeedSequence().entropy % (1 << 63))
    moved = ScaledDot(w_dtype, "moved")
    x, packed, scale = _inputs(moved, gen)
    y_moved = _run(moved, x, packed, scale)
    y_read_twice = _run(ScaledDot(w_dtype, "product_read_twice"), x, packed, scale)
    try:
        tilus.option.codegen(fold_scales=False)
        y_kept = _run(ScaledDot(w_dtype, "moved"), x, packed, scale)
    finally:
        tilus.option.reset_codegen()
    assert torch.equal(y_moved.view(torch.int32), y_kept.view(torch.int32))
    assert torch.equal(y_moved.view(torch.int32), y_read_twice.view(torch.int32))
    w = torch.from_numpy(lane_codes_model(moved, packed.numpy(), decode_all(name)))
    ref = (x.double() @ w) * scale.double()
    torch.testing.assert_close(y_moved.double(), ref, rtol=1e-4, atol=1e-3 * ref.abs().max().item())
