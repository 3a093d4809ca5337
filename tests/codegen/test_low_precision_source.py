"""The CUDA generated for casts between the low-precision types and float16/bfloat16/
float32/int32 compiles through NVRTC (sm_80: the codec; sm_90a: FP8 through cvt)."""

import os

import pytest
import torch

import tilus
from tests.codegen.nvrtc_ctypes import ELF_MAGIC
from tests.lang.lowp_kernels import E4M3Codes, E5M2Codes, F32Chain, I32Chain
from tests.lang.lowp_model import FLOATS, INTS
from tilus import _C, bfloat16, float16, float32, int32
from tests.codegen.nvrtc_compile import require_nvrtc

rt = _C.runtime
require_nvrtc()


def _compile(kernel, args, arch):
    program = kernel.compile(*args).program
    generated = _C.generate_cuda(program, True, arch)
    report = rt.compile_report(generated["source"], generated["name"], arch, [], None)
    assert report["cubin"][:4] == ELF_MAGIC
    return generated["source"]


_F = (torch.zeros(600), torch.zeros(600), 600)
_I = (torch.zeros(600, dtype=torch.int32), torch.zeros(600, dtype=torch.int32), 600)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(FLOATS))
def test_float_casts_compile(name, arch):
    t = getattr(tilus, name)
    src = _compile(F32Chain(float16, t, bfloat16), _F, arch)
    assert "tilus::lowp_float<" in src
    _compile(F32Chain(t, float16, t), _F, arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(INTS))
def test_int_casts_compile(name, arch):
    t = getattr(tilus, name)
    assert "tilus::lowp_int<" in _compile(I32Chain(t), _I, arch)
    _compile(F32Chain(t, bfloat16), _F, arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_fp8_loads_compile(arch):
    x = torch.zeros(600, dtype=torch.uint8)
    _compile(E4M3Codes(), (x.view(torch.float8_e4m3fn), torch.zeros(600), 600), arch)
    _compile(E5M2Codes(), (x.view(torch.float8_e5m2), torch.zeros(600), 600), arch)


def test_existing_casts_unchanged():
    """Casts among the old types still print tilus::cast<...> with no lowp code."""
    src = _compile(F32Chain(float16, bfloat16, int32), _F, "sm_80")
    assert "tilus::lowp" not in src


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,via", [("uint4b", float16), ("int4b", bfloat16), ("int3b", float16),
                                      ("int8", float16), ("uint8", float16), ("float4_e2m1", float16),
                                      ("float6_e3m2", bfloat16), ("float8_e4m3", float16),
                                      ("float8_e5m2", bfloat16)])
def test_casts_to_16bit_run_four_at_a_time(name, via, arch):
    """One-byte codes to float16/bfloat16 go through tilus::cast4 (device/lowp_vec.cuh)."""
    from tests.lang.lowp_kernels import FP8To16

    t = getattr(tilus, name)
    if name.startswith("float8"):
        src = _compile(FP8To16(t, via), (torch.zeros(600, dtype=torch.uint8), torch.zeros(600), 600), arch)
    elif name in INTS or name in ("int8", "uint8"):
        src = _compile(I32Chain(t, via), _I, arch)
    else:
        src = _compile(F32Chain(t, via), _F, arch)
    assert "tilus::cast4(" in src


def test_casts_the_tricks_do_not_cover_stay_scalar():
    # uint8 -> bfloat16 (128 + 255 does not fit the mantissa) and e5m1 (past fp16's range)
    assert "tilus::cast4(" not in _compile(I32Chain(tilus.uint8, bfloat16), _I, "sm_80")
    assert "tilus::cast4(" not in _compile(F32Chain(tilus.float7_e5m1, float16), _F, "sm_80")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", ["uint4b", "int4b"])
def test_viewed_4bit_codes_cast_to_half_from_the_words(name, arch):
    """A cast of 4-bit codes a view just unpacked reads the packed words (eight codes per
    call); to bfloat16 two at a time (tilus::packed_cast)."""
    from tests.lang.lowp_kernels import PackedViewCast

    args = (torch.zeros(128, 16, dtype=torch.uint8), torch.zeros(128, 32))
    t = getattr(tilus, name)
    src = _compile(PackedViewCast(t, float16), args, arch)
    assert f"tilus::int4x8_to_half<{'true' if name == 'int4b' else 'false'}>(" in src
    src = _compile(PackedViewCast(t, bfloat16), args, arch)
    assert "int4x8_to_half" not in src and "tilus::packed_cast<tilus::bfloat16, " in src


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", ["uint4b", "int4b"])
@pytest.mark.parametrize("to", [float16, bfloat16])
def test_paired_4bit_codes_cast_with_one_lop3_a_pair(name, to, arch):
    """A cast of 4-bit codes whose view pairs nibbles j and j + 4 of each word into a
    layout with those two adjacent: tilus::int4x8_paired_to_*, no shared memory; codes in
    another order are moved within each thread (no shared memory either)."""
    from tests.lang.lowp_kernels import PackedViewCast

    args = (torch.zeros(128, 16, dtype=torch.uint8), torch.zeros(128, 32))
    t = getattr(tilus, name)
    signed = "true" if name == "int4b" else "false"
    fn = "half" if to == float16 else "bf16"
    src = _compile(PackedViewCast(t, to, "paired"), args, arch)
    assert f"tilus::int4x8_paired_to_{fn}<{signed}>(" in src
    assert "through shared memory" not in src and "__syncthreads" not in src
    src = _compile(PackedViewCast(t, to, "swapped"), args, arch)
    assert "int4x8_paired" not in src and "within each thread" in src
    assert "through shared memory" not in src and "__syncthreads" not in src


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", ["uint3b", "int3b"])
@pytest.mark.parametrize("to", [float16, bfloat16])
def test_paired_3bit_codes_cast_with_one_lop3_a_pair(name, to, arch):
    """3-bit codes paired as the 4-bit ones (codes j and j + 4 of each eight adjacent in
    the result): tilus::int3x8_paired_to, one call per eight codes with the group's
    index a template argument (every shift a constant); unpaired orders keep packed_cast."""
    from tests.lang.lowp_kernels import PackedViewCast

    args = (torch.zeros(128, 12, dtype=torch.uint8), torch.zeros(128, 32))
    t = getattr(tilus, name)
    signed = "true" if name == "int3b" else "false"
    fn = "half" if to == float16 else "bfloat16"
    src = _compile(PackedViewCast(t, to, "paired"), args, arch)
    for group in range(4):
        assert f"tilus::int3x8_paired_to<tilus::{fn}, {signed}, {group}>(" in src
    assert "packed_cast" not in src and "through shared memory" not in src and "__syncthreads" not in src
    src = _compile(PackedViewCast(t, to, "swapped"), args, arch)
    assert "int3x8_paired" not in src and "through shared memory" not in src


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", ["uint1b", "int2b", "int3b", "uint5b", "int6b", "uint7b", "float3_e1m1",
                                  "float5_e2m2", "float6_e3m2", "float7_e4m2"])
@pytest.mark.parametrize("to", [float16, bfloat16])
def test_viewed_sub_byte_codes_cast_from_the_words_two_at_a_time(name, to, arch):
    """Every other sub-byte type cast4 takes converts straight from the packed words too:
    no byte per code in between (tilus::packed_cast, two codes per 32-bit result)."""
    from tests.lang.lowp_kernels import PackedViewCast

    t = getattr(tilus, name)
    args = (torch.zeros(128, 4 * t.bits, dtype=torch.uint8), torch.zeros(128, 32))
    src = _compile(PackedViewCast(t, to), args, arch)
    assert f"tilus::packed_cast<{'tilus::half' if to == float16 else 'tilus::bfloat16'}, " in src
    assert "tilus::cast4(" not in src


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", [float16, bfloat16])
def test_16bit_float_arithmetic_is_paired(dtype, arch):
    from tests.lang.lowp_kernels import Arith16

    t = torch.float16 if dtype == float16 else torch.bfloat16
    z = torch.zeros(64, 64, dtype=t)
    for op, fn in [("add", "add2"), ("sub", "sub2"), ("mul", "mul2")]:
        src = _compile(Arith16(dtype, op), (z, z, z[:1], torch.zeros(2, 64, 64, dtype=t)), arch)
        assert f"tilus::{fn}(" in src, op


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("src,dst", [("float32", "int3b"), ("int3b", "float32"), ("int32", "uint4b"),
                                     ("float32", "float6_e3m2"), ("float6_e3m2", "float16"),
                                     ("float16", "float8_e4m3"), ("uint2b", "int7b"), ("bfloat16", "int8")])
def test_host_tensor_conversions_compile(src, dst, arch):
    """tilus.tensor's conversions (tilus.host_cast.CastBuffer) compile for the GPU for
    sub-byte types on either side, both at once included."""
    from tilus.host_cast import CastBuffer

    buf = torch.zeros(4096, dtype=torch.uint8)
    _compile(CastBuffer(getattr(tilus, src), getattr(tilus, dst)), (3001, buf, buf), arch)
