"""Two fast paths of the dequantising matmuls against the CPU interpreter, bit for bit:
sub-byte codes cast to float16/bfloat16 straight from the words a view unpacked them
from (every code of every type, codes straddling two words included), and +, -, * on float16/bfloat16 tiles paired into f16x2 /
bf16x2 instructions (random bit patterns: subnormals, infinities and NaNs included)."""

import numpy as np
import pytest
import torch

import tilus
from tests.lang.lowp_kernels import Arith16, PackedViewCast
from tests.lang.packed_kernels import pack
from tilus import bfloat16, float16

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def _interpreted_and_on_gpu(kernel, packed):
    """kernel's [128, 32] float32 result in the interpreter, and on the GPU asserted equal
    to it bit for bit (NaN poisoned before both)."""
    cpu = torch.full((128, 32), float("nan"))
    kernel(packed, cpu)
    gpu = torch.full((128, 32), float("nan"), device="cuda")
    kernel(packed.cuda(), gpu)
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=0, atol=0, equal_nan=True)
    return cpu


@pytest.mark.parametrize("name", ["uint4b", "int4b"])
@pytest.mark.parametrize("to", [float16, bfloat16])
def test_packed_4bit_view_cast_matches_interpreter(name, to):
    g = torch.Generator().manual_seed(7)
    packed = torch.randint(0, 256, (128, 16), generator=g, dtype=torch.int32).to(torch.uint8)
    packed[0] = torch.arange(16, dtype=torch.uint8) * 17  # every code, in both nibbles
    packed[1] = torch.arange(16, dtype=torch.uint8) + 16 * (15 - torch.arange(16, dtype=torch.uint8))
    kernel = PackedViewCast(getattr(tilus, name), to)
    cpu = _interpreted_and_on_gpu(kernel, packed)
    lo = (packed.to(torch.int32) & 15).float()
    if name == "int4b":
        lo = torch.where(lo >= 8, lo - 16, lo)
    assert torch.equal(cpu[:, 0::2], lo)  # the low nibble of byte j is code 2j


@pytest.mark.parametrize("order", ["paired", "swapped"])
@pytest.mark.parametrize("name", ["uint4b", "int4b"])
@pytest.mark.parametrize("to", [float16, bfloat16])
def test_reordering_4bit_cast_matches_interpreter(name, to, order):
    """A cast of viewed 4-bit codes into a layout that reorders each thread's codes:
    "paired" takes tilus::int4x8_paired_to_half/_bf16 (one lop3 per pair of nibbles j and
    j + 4), "swapped" moves the codes within the thread first; both against the
    interpreter bit for bit, and against the bytes' nibbles at their columns."""
    from tests.lang.lowp_kernels import code_columns

    g = torch.Generator().manual_seed(11)
    packed = torch.randint(0, 256, (128, 16), generator=g, dtype=torch.int32).to(torch.uint8)
    packed[0] = torch.arange(16, dtype=torch.uint8) * 17  # every code, in both nibbles
    packed[1] = torch.arange(16, dtype=torch.uint8) + 16 * (15 - torch.arange(16, dtype=torch.uint8))
    kernel = PackedViewCast(getattr(tilus, name), to, order)
    cpu = _interpreted_and_on_gpu(kernel, packed)
    nibbles = torch.stack([(packed.to(torch.int32) >> s) & 15 for s in (0, 4)], dim=2).reshape(128, 32)
    if name == "int4b":
        nibbles = torch.where(nibbles >= 8, nibbles - 16, nibbles)
    expect = torch.empty(128, 32)
    expect[:, code_columns(order)] = nibbles.float()
    assert torch.equal(cpu, expect)


@pytest.mark.parametrize("order", ["paired", "swapped"])
@pytest.mark.parametrize("name", ["uint3b", "int3b"])
@pytest.mark.parametrize("to", [float16, bfloat16])
def test_reordering_3bit_cast_matches_interpreter(name, to, order):
    """Viewed 3-bit codes cast into a reordering layout: "paired" takes
    tilus::int3x8_paired_to (a window, a lop3 and a sub or fma per codes j and j + 4
    of each eight, codes straddling words included), "swapped" moves them within the
    thread first; every code at every position, against the interpreter bit for bit
    and against the codes at their columns."""
    from tests.lang.lowp_kernels import code_columns

    g = torch.Generator().manual_seed(13)
    codes = torch.randint(0, 8, (128, 32), generator=g).numpy()
    codes[:8].reshape(-1)[:] = np.arange(256) % 8 ^ (np.arange(256) // 32 % 8)  # every code at every position
    packed = torch.from_numpy(np.stack([pack(row, 3) for row in codes]))
    kernel = PackedViewCast(getattr(tilus, name), to, order)
    cpu = _interpreted_and_on_gpu(kernel, packed)
    values = torch.from_numpy(codes).float()
    if name == "int3b":
        values = torch.where(values >= 4, values - 8, values)
    expect = torch.empty(128, 32)
    expect[:, code_columns(order)] = values
    assert torch.equal(cpu, expect)


@pytest.mark.parametrize("name", ["uint1b", "int1b", "uint2b", "int2b", "uint3b", "int3b", "uint5b", "int5b",
                                  "uint6b", "int6b", "uint7b", "int7b", "float3_e1m1", "float4_e2m1",
                                  "float5_e2m2", "float5_e3m1", "float6_e3m2", "float6_e2m3", "float7_e4m2",
                                  "float7_e3m3", "float7_e2m4"])
@pytest.mark.parametrize("to", [float16, bfloat16])
def test_packed_view_cast_of_every_code_matches_interpreter(name, to):
    t = getattr(tilus, name)
    bits = t.bits
    g = torch.Generator().manual_seed(bits)
    codes = torch.randint(0, 1 << bits, (128, 32), generator=g).numpy()
    codes[:4].reshape(-1)[:] = np.arange(128) % (1 << bits)  # every code, at every position mod 2^bits
    packed = torch.from_numpy(np.stack([pack(row, bits) for row in codes]))
    kernel = PackedViewCast(t, to)
    cpu = _interpreted_and_on_gpu(kernel, packed)
    values = torch.tensor([float(v) for v in _code_values(t)])  # the interpreter's codec, code by code
    assert torch.equal(cpu, values[torch.from_numpy(codes)].to(torch.float16 if to == float16 else torch.bfloat16).float())


def _code_values(t):
    """Each code's value through a one-element interpreter cast (tilus's codec)."""
    class One(tilus.Script):
        def __call__(self, src: tilus.void_p, dst: ~tilus.float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            gs = self.global_view(src, dtype=t, shape=[1 << t.bits])
            gd = self.global_view(dst, dtype=tilus.float32, shape=[1 << t.bits])
            self.store_global(gd, self.cast(self.load_global(gs, offsets=[0], shape=[1 << t.bits]),
                                            dtype=tilus.float32), offsets=[0])

    out = torch.zeros(1 << t.bits)
    One()(torch.from_numpy(pack(np.arange(1 << t.bits), t.bits)), out)
    return out.tolist()


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("dtype", [float16, bfloat16])
def test_paired_16bit_arithmetic_matches_interpreter_bits(op, dtype):
    t = torch.float16 if dtype == float16 else torch.bfloat16
    g = torch.Generator().manual_seed(11)
    bits = lambda *s: torch.randint(-32768, 32768, s, generator=g, dtype=torch.int32).to(torch.int16).view(t)
    a, b, row = bits(64, 64), bits(64, 64), bits(1, 64)
    a[0, :8] = torch.tensor([0.0, -0.0, 1e-7, -6e-8, 65504, -65504, float("inf"), 1.0]).to(t)
    kernel = Arith16(dtype, op)
    cpu = torch.zeros(2, 64, 64, dtype=t)
    kernel(a, b, row, cpu)
    gpu = torch.zeros(2, 64, 64, dtype=t, device="cuda")
    kernel(a.cuda(), b.cuda(), row.cuda(), gpu)
    cpu_bits, gpu_bits = cpu.view(torch.int16).numpy(), gpu.cpu().view(torch.int16).numpy()
    nan = np.isnan(cpu.float().numpy())
    assert np.array_equal(nan, np.isnan(gpu.cpu().float().numpy()))
    assert np.array_equal(cpu_bits[~nan], gpu_bits[~nan])
