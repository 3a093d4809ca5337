"""NaN and the infinities as constants of float16 / bfloat16 tiles (`self.where(mask, x,
float("-inf"))`, the masking of a softmax over half-precision rows): the generated CUDA
converts them to the tile's type (it assigned a float to a half, which NVRTC refused);
the interpreter gives the values the GPU test checks (tests/gpu/test_special_float_constants_gpu.py)."""

import math

import pytest
import torch

import tilus
from tilus import bfloat16, float16, float32, int32

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc

require_nvrtc()

SPECIALS = [float("-inf"), float("inf"), float("nan")]
TORCH = {float16: torch.float16, bfloat16: torch.bfloat16, float32: torch.float32}


class SpecialFill(tilus.Script):
    """y = x where x > 0, else `value` (a Python float: -inf, inf or nan)."""

    def __init__(self, dtype, value: float):
        super().__init__()
        self.dtype, self.value = dtype, value

    def __call__(self, n: int32, x_ptr: tilus.void_p, y_ptr: tilus.void_p):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=self.dtype, shape=[n])
        gy = self.global_view(y_ptr, dtype=self.dtype, shape=[n])
        x = self.load_global(gx, offsets=[0], shape=[64])
        self.store_global(gy, self.where(x > 0.0, x, self.value), offsets=[0])


def expected(x: torch.Tensor, value: float) -> torch.Tensor:
    return torch.where(x > 0, x, torch.full_like(x, value))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", [float16, bfloat16, float32])
@pytest.mark.parametrize("value", SPECIALS)
def test_special_constants_compile(arch, dtype, value):
    x = torch.zeros(64, dtype=TORCH[dtype])
    source = kernel_source(SpecialFill(dtype, value), (64, x, x), arch)
    if dtype is not float32:
        bits = "0x7fc00000" if math.isnan(value) else "0x7f800000"
        assert f"tilus::cast<{'tilus::half' if dtype is float16 else 'tilus::bfloat16'}>(" in source
        assert bits in source


@pytest.mark.parametrize("dtype", [float16, bfloat16])
@pytest.mark.parametrize("value", SPECIALS)
def test_special_constants_in_the_interpreter(dtype, value):
    x = torch.randn(64).to(TORCH[dtype])
    y = torch.zeros_like(x)
    SpecialFill(dtype, value)(64, x, y)
    torch.testing.assert_close(y, expected(x, value), equal_nan=True)
