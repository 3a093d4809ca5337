"""Small-float codes times one scale a pair with the codes' rebias folded into the scales
(CudaEmitter::emit_scale_fold) on the GPU: bit for bit the CPU interpreter and an
independent model (the codes' values from the format's definition, times the scale in
torch, one rounding), for scales that fit (the folded path), scales whose product with
the rebias overflows (the unfolded branch, per thread), and inf, NaN, -0 and subnormal
scales. Fresh random codes each run, outputs poisoned before."""

import numpy as np
import pytest
import torch

import tilus
from tests.lang.lowp_model import decode_all
from tests.lang.packed_kernels import ScaledCodes, unpack

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

_TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16}
_BITS = {"float16": torch.int16, "bfloat16": torch.int16}


def _scales(regime, t, gen):
    """[8, 1]: the rows of threads 0-7 and 8-15 are rows 0 and 4, 1 and 5 ... (the layout's
    local(2, 1) over spatial(4, 8)), so a large scale in row 4 sends threads 0-7 down the
    unfolded branch while the other threads fold."""
    s = (torch.rand(8, 1, generator=gen) * 4 + 0.01) * torch.where(torch.rand(8, 1, generator=gen) < 0.5, -1.0, 1.0)
    if regime == "large":
        s[4, 0], s[6, 0] = 16.0, -300.0
    elif regime == "huge":
        s[:, 0] = torch.tensor([20.0, -1000.0, 65504.0, 16.0, 30000.0, -17.0, 15.99, 1e4])
    elif regime == "special":
        s[1, 0], s[2, 0], s[5, 0], s[7, 0] = float("inf"), float("nan"), -0.0, 2.0 ** -20
    return s.to(t)


def _model(kernel, raw, scales, t):
    """The products from the format's definition: the codes' values (exact in the 16-bit
    type) times each row's scale, in torch (float products of two 16-bit floats are exact;
    one rounding to t)."""
    values = decode_all(kernel.dtype.name)
    bits, per = kernel.dtype.bits, kernel.per_thread
    out = torch.empty(8, 64, dtype=torch.float64)
    for thread in range(32):
        codes = unpack(raw[thread * per:(thread + 1) * per], bits, kernel.LAYOUT.local_size)
        for e, code in enumerate(codes):
            out[kernel.LAYOUT.coords(thread, e)] = values[code]
    return (out.to(t) * scales).to(t)


@pytest.mark.parametrize("regime", ["small", "large", "huge", "special"])
@pytest.mark.parametrize("to", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["float6_e3m2", "float4_e2m1", "float5_e2m2", "float7_e4m2"])
def test_folded_scales_match_interpreter_and_model(name, to, regime):
    t = _TORCH[to]
    kernel = ScaledCodes(getattr(tilus, name), getattr(tilus, to))
    gen = torch.Generator().manual_seed(np.random.SeedSequence().entropy % (1 << 63))
    raw = torch.randint(0, 256, (32 * kernel.per_thread,), dtype=torch.uint8, generator=gen)
    scales = _scales(regime, t, gen)
    cpu = torch.full((8, 64), float("nan"), dtype=t)
    kernel(raw, scales, cpu)
    gpu = torch.full((8, 64), 12345.0, dtype=t, device="cuda")
    kernel(raw.cuda(), scales.cuda(), gpu)
    torch.cuda.synchronize()
    gpu = gpu.cpu()
    model = _model(kernel, raw.numpy(), scales, t)
    nan = model.isnan()
    assert torch.equal(gpu.isnan(), nan) and torch.equal(cpu.isnan(), nan)
    assert torch.equal(gpu[~nan].view(_BITS[to]), model[~nan].view(_BITS[to]))
    assert torch.equal(cpu[~nan].view(_BITS[to]), model[~nan].view(_BITS[to]))
