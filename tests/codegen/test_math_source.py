"""The CUDA generated for the math family, ^ and item() compiles (NVRTC, sm_80 and
sm_90a), and each function takes the lowering its docstring names: the MUFU
approximations (ex2/lg2/sin/cos/rsqrt/sqrt.approx.f32) where the docstring says so, the
accurate libdevice functions otherwise."""

import os

import pytest
import torch

from tests.codegen.nvrtc_ctypes import ELF_MAGIC, device_headers, load_nvrtc
from tests.interp.test_math import Items, MathTile, Operators
from tilus import _C, bfloat16, float16, float32, float64, int8, int32
from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc

rt = _C.runtime

require_nvrtc()


_source = kernel_source


@pytest.fixture(scope="module")
def nvrtc():
    compiler, why = load_nvrtc()
    if compiler is None:
        pytest.skip(why)
    return compiler


def _ptx(nvrtc, source, arch="sm_80"):
    ok, log, cubin, ptx = nvrtc.compile(source, arch, device_headers())
    assert ok, log
    return ptx


def _tile(fn, dtype, **kw):
    return MathTile(fn, 5, 7, dtype, **kw), (torch.zeros(5, 7), torch.zeros(5, 7))


_FUNCTIONS = ["abs", "exp", "exp2", "log", "sin", "cos", "round", "square", "sqrt", "rsqrt"]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", [float16, bfloat16, float32, float64])
@pytest.mark.parametrize("fn", _FUNCTIONS)
def test_every_function_compiles(fn, dtype, arch):
    _source(*_tile(fn, dtype), arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype,bounds", [(float32, (-1.0, 1.0)), (bfloat16, (0, 2)),
                                          (int32, (-3, 3)), (int8, (0, 9))])
def test_clip_and_integer_functions_compile(dtype, bounds, arch):
    _source(*_tile("clip", dtype, bounds=bounds), arch)
    if dtype in (int32, int8):
        _source(*_tile("abs", dtype), arch)
        _source(*_tile("square", dtype), arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_operators_and_items_compile(arch):
    z = lambda dtype=torch.int32: torch.zeros(5, 7, dtype=dtype)  # noqa: E731
    src = _source(Operators(5, 7), (z(), z(), z(), z(), z(), 1), arch)
    assert "tilus::bit_xor(" in src
    src = _source(Items(5, 7), (z(torch.float32), z(torch.float32), torch.zeros(2, dtype=torch.int32)),
                  arch)
    assert "_item = " in src


# fn, approx -> (what the kernel source calls, what the PTX must contain)
_LOWERING = {
    ("exp2", False): ("tilus::ex2_approx(", "ex2.approx.f32"),
    ("rsqrt", False): ("tilus::rsqrt_approx(", "rsqrt.approx.f32"),
    ("log", True): ("tilus::lg2_approx(", "lg2.approx.f32"),
    ("sin", True): ("tilus::sin_approx(", "sin.approx.f32"),
    ("cos", True): ("tilus::cos_approx(", "cos.approx.f32"),
    ("sqrt", True): ("tilus::sqrt_approx(", "sqrt.approx.f32"),
    ("sqrt", False): ("__fsqrt_rn(", "sqrt.rn.f32"),
    ("round", False): ("rintf(", "cvt.rni.f32.f32"),
    ("log", False): ("logf(", None),
    ("sin", False): ("sinf(", None),
}


@pytest.mark.parametrize("fn,approx", sorted(_LOWERING))
@pytest.mark.parametrize("dtype", [float32, float16])
def test_lowering_takes_the_documented_path(nvrtc, fn, approx, dtype):
    call, ptx_op = _LOWERING[(fn, approx)]
    src = _source(*_tile(fn, dtype, approx=approx))
    assert call in src
    if dtype == float16:  # computed in float32, rounded once
        assert "tilus::cast<float>(" in src
    if ptx_op is not None:
        assert ptx_op in _ptx(nvrtc, src)
    if not approx and fn in ("log", "sin"):  # the accurate libdevice function, not the MUFU one
        assert {"log": "lg2.approx", "sin": "sin.approx"}[fn] not in _ptx(nvrtc, src)


def test_float64_uses_the_double_functions(nvrtc):
    for fn, call in [("exp2", "exp2("), ("log", "log("), ("rsqrt", "rsqrt("), ("round", "rint(")]:
        src = _source(*_tile(fn, float64))
        assert call in src and "approx" not in src.split("tilus/runtime.cuh")[1]
