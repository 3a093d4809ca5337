"""The CUDA generated for void_p parameters and tfloat32 casts compiles with NVRTC
(sm_80 and sm_90a): the kernel takes `void*` and each global view casts it to its dtype's
pointer; float32 -> tfloat32 is cvt.rna.tf32.f32."""

import os

import pytest
import torch

import tilus
from tests.lang.test_tfloat32 import DotTf32, RoundTf32
from tests.lang.test_void_p import Bytes, ElementAddress, ScaleRows
from tilus import _C

from .nvrtc_ctypes import device_headers, load_nvrtc

rt = _C.runtime

if not rt.nvrtc_available():
    if os.environ.get("TILUS_REQUIRE_NVRTC"):
        raise RuntimeError("TILUS_REQUIRE_NVRTC is set but NVRTC cannot be loaded")
    pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc)", allow_module_level=True)

ARCHS = ["sm_80", "sm_90a"]


def _source(kernel, args, arch, aligned=True):
    program = kernel.compile(*args).program
    generated = _C.generate_cuda(program, aligned, arch)
    report = rt.compile_report(generated["source"], generated["name"], arch, [], None)
    assert report["cubin"][:4] == b"\x7fELF"
    return generated["source"]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", [tilus.float16, tilus.bfloat16, tilus.float32, tilus.int8])
def test_void_p_kernel(arch, dtype):
    x = torch.zeros(4, 4)
    src = _source(ScaleRows(dtype), (37, 29, x, x, x), arch)
    assert "void* x_ptr, void* w_ptr, void* y_ptr)" in src
    assert f"(({dtype.c_name}*)x_ptr)" in src


@pytest.mark.parametrize("arch", ARCHS)
def test_void_p_bytes_and_element_address(arch):
    x = torch.zeros(64, dtype=torch.uint8)
    assert "((unsigned char*)src)" in _source(Bytes(), (64, x, x), arch, aligned=False)
    _source(ElementAddress(), (1, 2, torch.zeros(20, dtype=torch.int32)), arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_tf32_cast(arch):
    x = torch.zeros(8)
    src = _source(RoundTf32(), (8, x, x), arch)
    assert "tilus::cast<tilus::tfloat32>(" in src
    # the rounding is the hardware's: its PTX instruction is in the kernel
    nvrtc, why = load_nvrtc()
    assert nvrtc is not None, why
    ok, log, _, ptx = nvrtc.compile(src, arch, device_headers(), None)
    assert ok, log
    assert "cvt.rna.tf32.f32" in ptx


@pytest.mark.parametrize("arch", ARCHS)
def test_tf32_dot(arch):
    # tf32 operands, float32 accumulators: on CUDA cores (no m16n8k8 tf32 mma atom yet)
    x = torch.zeros(8)
    src = _source(DotTf32(), (37, 29, 19, x, x, x), arch)
    assert "tilus::cast<tilus::tfloat32>(" in src and "dot on CUDA cores" in src
