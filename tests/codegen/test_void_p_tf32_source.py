"""The CUDA generated for void_p parameters and tfloat32 casts compiles with NVRTC
(sm_80 and sm_90a): the kernel takes `void*` and each global view casts it to its dtype's
pointer; float32 -> tfloat32 is cvt.rna.tf32.f32."""

import os

import pytest
import torch

import tilus
from tests.lang.test_tfloat32 import DotTf32, MulAddTf32, RoundTf32
from tests.lang.test_void_p import Bytes, ElementAddress, ScaleRows
from tilus import _C
from tests.codegen.nvrtc_compile import require_nvrtc

from .nvrtc_ctypes import device_headers, load_nvrtc

rt = _C.runtime

require_nvrtc()

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
def test_tf32_tile_arithmetic(arch):
    x = torch.zeros(8)
    src = _source(MulAddTf32(), (8, x, x), arch)
    assert "tilus::tfloat32" in src


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("tile", [(16, 16, 8), (32, 32, 16), (64, 32, 16)])
def test_tf32_dot_uses_mma_m16n8k8(arch, tile):
    x = torch.zeros(8)
    src = _source(DotTf32(*tile), (37, 29, 19, x, x, x), arch)
    assert "tilus::cast<tilus::tfloat32>(" in src
    assert "m16n8k8 atoms per warp" in src and "tilus::mma_m16n8k8_tf32_f32(" in src
    nvrtc, why = load_nvrtc()
    assert nvrtc is not None, why
    ok, log, _, ptx = nvrtc.compile(src, arch, device_headers(), None)
    assert ok, log
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in ptx


def test_tf32_mma_atom_layouts():
    # the PTX ISA's m16n8k8 .tf32 fragments: A (g + 8*bit0(i), q + 4*bit1(i)), B (q + 4*i, g)
    from tilus.layout import mma_atom, mma_block_layouts, mma_kind_for

    assert mma_kind_for("tfloat32") == "m16n8k8"
    atom = mma_atom("m16n8k8")
    assert (atom["m"], atom["n"], atom["k"]) == (16, 8, 8)
    for lane in range(32):
        g, q = lane // 4, lane % 4
        assert [atom["a"].coords(lane, i) for i in range(4)] == [
            (g, q), (g + 8, q), (g, q + 4), (g + 8, q + 4)]
        assert [atom["b"].coords(lane, i) for i in range(2)] == [(q, g), (q + 4, g)]
        assert [atom["c"].coords(lane, i) for i in range(4)] == [
            (g, 2 * q), (g, 2 * q + 1), (g + 8, 2 * q), (g + 8, 2 * q + 1)]
    r = mma_block_layouts("m16n8k8", 64, 64, 32, 4)
    assert (r["warps_m"], r["warps_n"], r["rep_m"], r["rep_n"], r["rep_k"]) == (2, 2, 2, 4, 4)
