"""The CUDA generated for the kernel utilities compiles with NVRTC (sm_80 and sm_90a):
printf (thread 0 of each block, the normalised format), assume (__builtin_assume), the
index tiles of register_tensor(init=f), gridDim, tilus.Class members."""

import os

import pytest
import torch

from tests.interp.test_utilities import Assume, DivMod, InitByIndex, PrintfKernel, Threads, UsesClass
from tilus import _C
from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc

rt = _C.runtime

require_nvrtc()


def _source(kernel, args, arch):
    return kernel_source(kernel, args, arch)


ARCHS = ["sm_80", "sm_90a"]


@pytest.mark.parametrize("arch", ARCHS)
def test_printf(arch):
    src = _source(PrintfKernel(), (3, 1.0), arch)
    assert 'if (threadIdx.x == 0) printf("b=%lld/%lld n=%05lld x=%.3f tag 100%%\\n"' in src


@pytest.mark.parametrize("arch", ARCHS)
def test_assume(arch):
    src = _source(Assume(), (8, torch.zeros(1, dtype=torch.int32)), arch)
    assert "__builtin_assume(" in src


@pytest.mark.parametrize("arch", ARCHS)
def test_init_by_index_and_annotated_layout(arch):
    from tilus.layout import spatial

    args = (1, 2, torch.zeros(16, 16, dtype=torch.bool), torch.zeros(16, 16))
    _source(InitByIndex(7, 13), args, arch)
    _source(InitByIndex(16, 16, spatial(8, 8).local(2, 2)), args, arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_divmod_grid_and_class(arch):
    i32 = torch.int32
    _source(DivMod(), (torch.zeros(1, dtype=i32), 3, torch.zeros(4, dtype=i32)), arch)
    _source(Threads(), (3, torch.zeros(30, dtype=i32)), arch)
    _source(UsesClass(), (4, torch.zeros(2, dtype=i32)), arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_tilus02_programs(arch):
    from tests.interp.test_tilus02_programs import AnnotatedMatmul, SwizzledMatmul, VectorAdd

    f32 = torch.zeros(8)
    _source(VectorAdd(), (8, f32, f32, f32), arch)
    h = torch.zeros(8, 8, dtype=torch.float16)
    mm = (8, 8, 8, h, h, torch.zeros(8, 8), torch.zeros(1, dtype=torch.int32))
    _source(SwizzledMatmul(), mm, arch)
    _source(AnnotatedMatmul(), mm, arch)
