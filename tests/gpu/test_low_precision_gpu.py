"""GPU casts of the low-precision types against the CPU interpreter: every value of
every type both ways (the same kernels and sweeps as tests/lang/test_low_precision_types.py)."""

import numpy as np
import pytest
import torch

import tilus
from tests.lang.lowp_kernels import E4M3Codes, E5M2Codes, F32Chain, I32Chain
from tests.lang.lowp_model import FLOATS, INTS, decode_all, sweep
from tilus import bfloat16, float16, float32, int32

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def _both(kernel, x, poison):
    cpu = torch.full_like(x, poison)
    kernel(x, cpu, x.numel())
    xg = x.cuda()
    gpu = torch.full_like(xg, poison)
    kernel(xg, gpu, x.numel())
    torch.cuda.synchronize()
    return cpu.numpy(), gpu.cpu().numpy()


def _same(cpu, gpu):
    nan = np.isnan(cpu)
    assert np.array_equal(nan, np.isnan(gpu))
    assert np.array_equal(cpu[~nan].view(np.int32), gpu[~nan].view(np.int32))


@pytest.mark.parametrize("chain", ["f32", "f16", "bf16", "f16-in"])
@pytest.mark.parametrize("name", sorted(FLOATS))
def test_float_casts_match_interpreter(name, chain):
    t = getattr(tilus, name)
    kernel = {"f32": F32Chain(t, float32), "f16": F32Chain(t, float16), "bf16": F32Chain(t, bfloat16),
              "f16-in": F32Chain(float16, t, bfloat16)}[chain]
    x = torch.from_numpy(np.concatenate([sweep(name, seed=1), decode_all(name).astype(np.float32)]))
    _same(*_both(kernel, x, float("nan")))


@pytest.mark.parametrize("name", sorted(INTS))
def test_int_casts_match_interpreter(name):
    t = getattr(tilus, name)
    x = torch.arange(-1000, 1001, dtype=torch.int32)
    cpu, gpu = _both(I32Chain(t), x, -77)
    assert np.array_equal(cpu, gpu)
    f = torch.from_numpy(np.concatenate([np.linspace(-300, 300, 4801), [np.inf, -np.inf, np.nan]]).astype(np.float32))
    _same(*_both(F32Chain(t, int32), f, float("nan")))


@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e5m2"])
def test_fp8_every_code_matches_interpreter(name):
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).repeat(3)[:701]
    x = codes.view(torch.float8_e4m3fn if name == "float8_e4m3" else torch.float8_e5m2)
    kernel = E4M3Codes() if name == "float8_e4m3" else E5M2Codes()
    cpu = torch.full((701,), 12345.0)
    kernel(x, cpu, 701)
    gpu = torch.full((701,), 12345.0, device="cuda")
    kernel(x.cuda(), gpu, 701)
    _same(cpu.numpy(), gpu.cpu().numpy())


@pytest.mark.parametrize("via", [float16, bfloat16])
def test_nan_bits_through_16bit_match_interpreter(via):
    """The NaN bit patterns themselves (which _same skips): float32 NaNs of both signs
    and several payloads through float16/bfloat16 and back, and into float4_e2m1, whose
    NaN-free encoding shows the sign the 16-bit NaN kept."""
    bits = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF,
                     0x7FA00000, 0xFFA00000] * 40, dtype=np.uint32)
    x = torch.from_numpy(bits.view(np.float32).copy())
    cpu, gpu = _both(F32Chain(via, float32), x, 12345.0)
    assert np.array_equal(cpu.view(np.uint32), gpu.view(np.uint32))
    cpu, gpu = _both(F32Chain(via, tilus.float4_e2m1), x, 12345.0)
    assert np.array_equal(cpu.view(np.uint32), gpu.view(np.uint32))


@pytest.mark.parametrize("via", [float16, bfloat16])
@pytest.mark.parametrize("name", sorted(INTS) + ["int8", "uint8"])
def test_int_to_16bit_four_at_a_time_matches_interpreter(name, via):
    """Every code of every integer type through the four-at-a-time casts to float16 and
    bfloat16 (tilus::cast4's prmt/sub tricks), back to int32 exactly."""
    x = torch.arange(-1000, 1001, dtype=torch.int32)
    cpu, gpu = _both(I32Chain(getattr(tilus, name), via), x, -77)
    assert np.array_equal(cpu, gpu)


@pytest.mark.parametrize("via", [float16, bfloat16])
@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e5m2"])
def test_fp8_to_16bit_four_at_a_time_matches_interpreter(name, via):
    from tests.lang.lowp_kernels import FP8To16

    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).repeat(3)[:701]
    kernel = FP8To16(getattr(tilus, name), via)
    cpu = torch.full((701,), 12345.0)
    kernel(codes, cpu, 701)
    gpu = torch.full((701,), 12345.0, device="cuda")
    kernel(codes.cuda(), gpu, 701)
    _same(cpu.numpy(), gpu.cpu().numpy())
