"""Small-float codes converted from their packed words and multiplied by one scale a pair
(a group's scale, as the A16Wx kernels dequantise) take the codes' rebias into the scales
(csrc/codegen/emit_compute.cc, CudaEmitter::emit_scale_fold): one multiplication a pair
instead of two, with the rebias and the multiplication apart where a scale times the
rebias would not fit the 16-bit type. The GPU results: tests/gpu/test_scale_fold_gpu.py."""

import pytest
import torch

import tilus
from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.lang.packed_kernels import ScaledCodes

require_nvrtc()

_TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def _args(kernel, per_element):
    t = _TORCH[kernel.to.name]
    return (torch.zeros(32 * kernel.per_thread, dtype=torch.uint8), torch.zeros(8, 64 if per_element else 1, dtype=t),
            torch.zeros(8, 64, dtype=t))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("to", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["float6_e3m2", "float4_e2m1", "float5_e2m2", "float7_e4m2"])
def test_a_scale_a_pair_takes_the_rebias(name, to, arch):
    kernel = ScaledCodes(getattr(tilus, name), getattr(tilus, to))
    source = kernel_source(kernel, _args(kernel, False), arch)
    # eight pairs a thread placed once, two scales (its two rows), each rebiased once
    assert source.count("tilus::packed_place<") == 1
    assert source.count("tilus::rebiased_scale<") == 1 and "[2];" in source.split("tilus::rebiased_scale<")[0][-200:]
    folded, unfolded = source.split("if (tl_scales_fit")[1].split("else {")[:2]
    # one multiplication a pair where the scales fit; the rebias then the scale where not
    assert folded.count("tilus::times_pair<") == 8 and "rebias_placed" not in folded
    assert unfolded.count("tilus::times_pair<") == 8 and unfolded.count("tilus::rebias_placed<") == 8


def test_a_scale_an_element_is_not_folded():
    kernel = ScaledCodes(tilus.float6_e3m2, tilus.float16, per_element=True)
    source = kernel_source(kernel, _args(kernel, True), "sm_90a")
    assert "packed_place" not in source and "rebiased_scale" not in source
    assert "tilus::packed_cast<" in source


def test_the_a16wx_prefill_kernel_folds_its_fp6_scales(example):
    hx = example("matmul_a16wx_hopper")
    half, codes = torch.zeros(8, dtype=torch.float16), torch.zeros(8, dtype=torch.uint8)
    kernel = hx.MatmulA16WxHopper(tilus.float16, tilus.float6_e3m2, 128, False, block_m=256, stages=5, group_m=8,
                                  num_blocks=132)
    source = kernel_source(kernel, (4096, 4096, 4096, half, codes, half, half, half), "sm_90a")
    assert "tilus::packed_place<tilus::half, tilus::lowp_float<3, 2, 0>, 32>" in source
    assert "tilus::rebiased_scale<tilus::half, tilus::lowp_float<3, 2, 0>>" in source


@pytest.mark.parametrize("env", ["1", "0"])
def test_the_environment_and_the_option_reach_the_build(monkeypatch, env):
    """TILUS_FOLD_SCALES reaches a script's source; tilus.option.codegen(fold_scales=)
    wins over it and takes only a bool."""
    kernel = ScaledCodes(tilus.float6_e3m2, tilus.float16)

    def folds():
        return "tilus::rebiased_scale<" in kernel.source(*_args(kernel, False), arch="sm_90a")

    monkeypatch.setenv("TILUS_FOLD_SCALES", env)
    assert folds() == (env == "1")
    try:
        tilus.option.codegen(fold_scales=env == "0")
        assert folds() == (env == "0")
        with pytest.raises(TypeError, match="fold_scales must be a bool"):
            tilus.option.codegen(fold_scales="no")
    finally:
        tilus.option.reset_codegen()
    assert tilus.option.get_codegen().fold_scales == (env == "1")
