"""The CUDA generated for loads, stores and copy_async through reshaped and permuted
shared views compiles (NVRTC, sm_80 and sm_90a); a view that keeps the allocation's
rows keeps vector accesses, one that does not moves single elements; a dot whose
operand is loaded through a transposed view is not folded into wgmma."""

import os

import pytest
import torch

from tests.interp.test_shared_views import VIEWS, DotThroughTransposedView, ThroughView
from tilus import _C, float16, float32
from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc

rt = _C.runtime

require_nvrtc()


_source = kernel_source


def _kernel(shape, fn, want, write, dtype=float32):
    base = torch.zeros(shape)
    view_shape = list(want(base).shape)
    kernel = ThroughView(list(shape), fn, view_shape, write, dtype=dtype, warps=4)
    return kernel, (torch.zeros(view_shape if write else shape), torch.zeros(shape if write else view_shape))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("write", [None, "store", "copy"])
@pytest.mark.parametrize("case", range(len(VIEWS)))
def test_accesses_through_views_compile(arch, write, case):
    shape, fn, want = VIEWS[case]
    _source(*_kernel(shape, fn, want, write), arch)


def test_a_view_of_a_swizzled_tile_compiles_and_addresses_it_with_xor():
    # float16 [32, 64]: 128-byte rows, the default layout is swizzled
    src = _source(*_kernel((32, 64), lambda s, v: v.transpose(), lambda x: x.t(), None, dtype=float16))
    assert "^" in src


def test_merging_leading_dimensions_keeps_vector_accesses():
    src = _source(*_kernel((2, 32, 64), lambda s, v: s.reshape_shared(v, [64, 64]), lambda x: x.reshape(64, 64),
                           "store"))
    assert "store_shared_vec<16>" in src


def test_a_transposed_view_moves_single_elements():
    src = _source(*_kernel((32, 64), lambda s, v: v.transpose(), lambda x: x.t(), "store"))
    assert "store_shared_vec" not in src


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_dot_operand_read_through_a_transposed_view_is_wgmma_b_k_major_on_sm90a(arch):
    # B = sb.transpose() of a whole [n, k] tile: wgmma reads sb as stored (K-major, like
    # A) with imm-trans-b 0; sm_80 keeps mma.sync.
    args = (torch.zeros(64, 32, dtype=torch.float16), torch.zeros(64, 32, dtype=torch.float16), torch.zeros(64, 64))
    src = _source(DotThroughTransposedView(), args, arch)
    if arch == "sm_80":
        assert "wgmma" not in src.split("__global__")[1]
    else:
        assert "(B K-major)" in src and "tl_wgmma_m64n64k16_f32_f16_bk(" in src
        assert "p, 1, 1, 0, 0;" in src
