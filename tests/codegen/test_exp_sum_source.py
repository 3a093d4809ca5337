"""The CUDA generated for exp and sum compiles (NVRTC, sm_80 and sm_90a), and sum's
lowering follows the operand's layout: shuffles across lanes of a row, shared memory
only when a row spans warps."""

import os

import pytest
import torch

from tests.interp.test_exp_sum import ExpTile, SumTile
from tilus import _C, bfloat16, float16, float32, float64, int32
from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc

rt = _C.runtime

require_nvrtc()


_source = kernel_source


@pytest.mark.parametrize("dtype", [float16, bfloat16, float32, float64])
def test_exp_compiles_with_the_fast_path(dtype):
    src = _source(ExpTile(5, 7, dtype), (torch.zeros(5, 7), torch.zeros(5, 7)))
    assert ("exp(" if dtype == float64 else "__expf(") in src


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("m,n,dim,keepdim,dtype", [
    (5, 7, 1, False, float32), (5, 7, 0, True, float32), (3, 100, 1, True, float16),
    (33, 17, 0, False, float32), (64, 128, 1, False, float32), (64, 128, 0, True, int32),
    (1, 9, 1, True, float64)])
def test_sum_compiles(arch, m, n, dim, keepdim, dtype):
    out = torch.zeros([1, n] if dim == 0 else [m, 1])
    _source(SumTile(m, n, dim, keepdim, dtype), (torch.zeros(m, n), out), arch)


def test_a_row_within_a_warp_is_summed_with_shuffles_only():
    # 4 warps over [64, 128]: the default layout puts a row's threads in one warp.
    src = _source(SumTile(64, 128, 1, False), (torch.zeros(64, 128), torch.zeros(64, 1)))
    assert "__shfl_xor_sync" in src
    assert "sum across warps" not in src


def test_a_column_across_warps_goes_through_shared_memory():
    src = _source(SumTile(64, 128, 0, True), (torch.zeros(64, 128), torch.zeros(1, 128)))
    assert "sum across warps" in src
