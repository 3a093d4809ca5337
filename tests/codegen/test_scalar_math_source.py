"""The CUDA generated for Python's math functions on runtime scalars (math.exp(x) ... in
a script) compiles with NVRTC (sm_80 and sm_90a) and calls CUDA's functions: expf ... on
float32 and on integers (converted to float32), exp ... on float64, the float32 function
between conversions on float16 and bfloat16, isnan / isinf for the predicates."""

import pytest
import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.interp.test_scalar_math import FUNCTIONS, PREDICATES, Gates, ScalarMath
from tilus import bfloat16, float16, float32, float64, int32

require_nvrtc()


def _source(dtype, arch, n=3):
    x = torch.zeros(len(FUNCTIONS), n)
    return kernel_source(ScalarMath(n, dtype), (x, torch.zeros_like(x)), arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", [float32, float64, float16, bfloat16, int32], ids=lambda d: d.name)
def test_every_function_compiles_to_the_device_call(dtype, arch):
    src = _source(dtype, arch)
    suffix = "" if dtype == float64 else "f"
    for name in FUNCTIONS:
        call = f"::{name}(" if name in PREDICATES else f"::{name}{suffix}("
        assert call in src, (name, dtype.name)
    if dtype == float64:
        assert "::expf(" not in src
    if dtype in (float16, bfloat16):  # through float32, and back to the half type
        assert "::expf(tilus::cast<float>(" in src
        assert f"tilus::cast<{'tilus::half' if dtype == float16 else 'tilus::bfloat16'}>(::expf(" in src
        assert "::isnan(tilus::cast<float>(" in src


def test_tilus02_spelling_compiles():
    src = kernel_source(Gates(), (torch.zeros(1, 3, 5), torch.zeros(3, 5), 3, 5), "sm_80")
    assert "::expf(" in src and "::sqrtf(" in src and "::floorf(" in src


def test_script_variables_named_like_the_functions():
    """A scalar named expf or isnan is a local of the kernel; the calls are qualified with ::
    so it does not hide CUDA's function."""
    import math

    import tilus

    class Shadow(tilus.Script):
        def __call__(self, x: ~float32, y: ~float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            gx = self.global_view(x, dtype=float32, shape=[1])
            gy = self.global_view(y, dtype=float32, shape=[2])
            expf: float32 = gx[0].item()
            isnan = math.isnan(expf)
            sqrtf = math.exp(expf) + math.sqrt(expf)
            self.store_global(gy, self.register_tensor(dtype=float32, shape=[1], init=sqrtf),
                              offsets=[0])
            self.store_global(gy, self.register_tensor(dtype=float32, shape=[1], init=float(isnan)),
                              offsets=[1])

    src = kernel_source(Shadow(), (torch.zeros(1), torch.zeros(2)), "sm_80")
    assert "float expf;" in src and "::expf(expf)" in src and "::isnan(expf)" in src
