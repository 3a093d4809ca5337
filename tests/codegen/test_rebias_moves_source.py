"""A small-float conversion whose one reader is a fresh dot, whose product's one reader
multiplies it by a float32 scale cast from float16, leaves its rebias (the multiplication
by 2^(15 - bias)) to that scale (csrc/codegen/rebias_moves.h): the A16Wx decode kernels'
`part * scale`. Every other shape keeps it; tilus.option.codegen(fold_scales=False) too.
The GPU results, bit for bit against the build that keeps it: tests/gpu/test_rebias_moves_gpu.py."""

import pytest
import torch

import tilus
from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.conftest import load_benchmark
from tests.lang.lowp_model import decode_all
from tests.scaled_dot_kernels import VARIANTS, ScaledDot, lane_codes_model

require_nvrtc()

# format: the rebias exponent 15 - (2^(e-1) - 1)
FORMATS = {"float6_e3m2": 12, "float4_e2m1": 14, "float5_e2m2": 14, "float7_e4m2": 8}


def _args(kernel, seed=0):
    gen = torch.Generator().manual_seed(seed)
    scale_type = torch.float32 if kernel.variant == "float32_scale" else torch.float16
    return (torch.randn(16, 16, generator=gen).half(),
            torch.randint(0, 256, (32 * kernel.nbytes,), dtype=torch.uint8, generator=gen),
            (torch.rand(1, 64, generator=gen) + 0.5).to(scale_type), torch.full((16, 64), float("nan")),
            torch.randn(16, 64, generator=gen))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_the_scale_takes_the_rebias(name, arch):
    kernel = ScaledDot(getattr(tilus, name), "moved")
    source = kernel_source(kernel, _args(kernel), arch)
    assert "tilus::packed_cast_placed<tilus::half, " in source and "tilus::packed_cast<" not in source
    assert f" * {2 ** FORMATS[name]}.0f)" in source


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v != "moved"])
def test_other_shapes_keep_the_rebias(variant):
    kernel = ScaledDot(tilus.float6_e3m2, variant)
    source = kernel_source(kernel, _args(kernel), "sm_90a")
    assert "packed_cast_placed" not in source and "tilus::packed_cast<" in source


def test_fold_scales_off_keeps_the_rebias():
    kernel = ScaledDot(tilus.float6_e3m2, "moved")
    source = kernel_source(kernel, _args(kernel), "sm_90a", fold_scales=False)
    assert "packed_cast_placed" not in source and "tilus::packed_cast<" in source


@pytest.mark.parametrize("env", ["1", "0"])
def test_the_environment_and_the_option_reach_the_build(monkeypatch, env):
    """TILUS_FOLD_SCALES reaches a script's source; tilus.option.codegen(fold_scales=)
    wins over it and takes only a bool."""
    kernel = ScaledDot(tilus.float6_e3m2, "moved")
    monkeypatch.setenv("TILUS_FOLD_SCALES", env)
    assert ("packed_cast_placed" in kernel.source(*_args(kernel), arch="sm_90a")) == (env == "1")
    try:
        tilus.option.codegen(fold_scales=env == "0")
        assert ("packed_cast_placed" in kernel.source(*_args(kernel), arch="sm_90a")) == (env == "0")
        with pytest.raises(TypeError, match="fold_scales must be a bool"):
            tilus.option.codegen(fold_scales="no")
    finally:
        tilus.option.reset_codegen()
    assert tilus.option.get_codegen().fold_scales == (env == "1")


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_the_kernel_computes_the_scaled_dot(name):
    """(The interpreter, which the move does not touch: the kernel the GPU test runs is the
    product it means to be.)"""
    kernel = ScaledDot(getattr(tilus, name), "moved")
    x, packed, scale, y, extra = _args(kernel, seed=3)
    kernel(x, packed, scale, y, extra)
    w = torch.from_numpy(lane_codes_model(kernel, packed.numpy(), decode_all(name)))
    torch.testing.assert_close(y.double(), (x.double() @ w) * scale.double(), rtol=1e-5, atol=1e-5)


def test_the_a16wx_decode_loop_has_no_rebias_multiplications(nvdisasm):
    sass_loop = load_benchmark("sass_loop")
    counts = sass_loop.loop_mix(sass_loop.build(*sass_loop.a16wx_decode_kernel(tilus.float6_e3m2), "sm_90a"),
                                nvdisasm)
    # three k-steps a trip, 256 codes a thread a step: the pairs' rebias (384 HMUL2) is gone
    assert counts["HMUL2"] == 0, counts
    assert sum(counts.values()) < 3000, counts
