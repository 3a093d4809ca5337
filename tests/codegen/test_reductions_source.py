"""The CUDA generated for reductions compiles (NVRTC, sm_80 and sm_90a), and the lowering
follows the operand's layout: shuffles across the lanes of a row, shared memory only
when a row spans warps."""

import os
import re

import pytest
import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.interp.test_reductions import Reduce
from tilus import _C, bfloat16, float16, float32, float64, int8, int32, int64, uint8

rt = _C.runtime

require_nvrtc()


source = kernel_source


def reduce_source(op, m, n, dim, keepdim, dtype=float32, arch="sm_80", warps=4):
    kernel = Reduce(op, m, n, dim, keepdim, dtype, warps)
    return source(kernel, (torch.zeros(m, n), torch.zeros(kernel.rshape)), arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("op,dtype", [("max", float32), ("min", float16), ("max", bfloat16),
                                      ("min", float64), ("max", int8), ("min", uint8),
                                      ("max", int64), ("any", float32), ("all", float32),
                                      ("sum", int32)])
def test_reductions_compile(arch, op, dtype):
    reduce_source(op, 33, 17, 1, True, dtype, arch)


@pytest.mark.parametrize("op", ["max", "all"])
@pytest.mark.parametrize("dim", [0, 1, None])
def test_reductions_compile_across_warps(op, dim):
    reduce_source(op, 64, 128, dim, True)


@pytest.mark.parametrize("op", ["sum", "max", "min", "any", "all"])
def test_a_row_within_a_warp_uses_shuffles_only(op):
    # 4 warps over [64, 128]: the default layout puts a row's threads in one warp.
    src = reduce_source(op, 64, 128, 1, False, warps=4)
    assert "__shfl_xor_sync" in src
    assert "across warps" not in src and "tl_smem +" not in src


def test_a_column_across_warps_goes_through_shared_memory():
    src = reduce_source("max", 64, 128, 0, True)
    assert "max across warps through shared memory" in src


def test_max_keeps_nan_and_starts_from_minus_infinity():
    # float32: max.NaN (one instruction); float64: the compare that lets a NaN win. A
    # padded row (33 columns) starts from -inf: any of a thread's elements may be skipped.
    src = reduce_source("max", 8, 33, 1, True)
    assert "tilus::max_nan(a, b)" in src and "__int_as_float(0xff800000)" in src
    assert "a != a" in reduce_source("max", 8, 64, 1, True, float64)


def test_a_threads_own_elements_combine_in_short_chains():
    # [4, 1024] on 4 warps: each thread holds 8 elements of each of its rows; they are
    # dealt over 4 partial results, each seeded with its first element (no identity),
    # then merged pairwise
    src = reduce_source("sum", 4, 1024, 1, True)
    part = re.search(r"float (tl_\w+_part)\[(\d+)\];", src)
    assert part, src
    name, size = part.group(1), int(part.group(2))
    assert size % 4 == 0
    for p in range(4):  # every partial of the first row: seeded, then one more element
        assert re.search(rf"{name}\[{p}\] = tilus::cast<float>\(t\[\d+\]\);", src)
        assert f"{name}[{p}] = tl_reduce_sum_float({name}[{p}], tilus::cast<float>(" in src
    assert f"{name}[0] = tl_reduce_sum_float({name}[0], {name}[1]);" in src
    assert f"{name}[2] = tl_reduce_sum_float({name}[2], {name}[3]);" in src
    assert f"{name}[0] = tl_reduce_sum_float({name}[0], {name}[2]);" in src
    # short rows keep one chain
    assert "_part" not in reduce_source("sum", 8, 256, 1, True)


# ---- broadcasting and the softmax-like kernel

from tests.interp.test_broadcast_softmax import SHAPES, Broadcast, Softmax  # noqa: E402


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("n,block_m,dtype", [(70, 8, float32), (128, 16, float16), (33, 4, float32)])
def test_softmax_compiles_without_moving_data(arch, n, block_m, dtype):
    src = source(Softmax(n, block_m, dtype), (block_m, torch.zeros(block_m, n), torch.zeros(block_m, n)), arch)
    # The row max and row sum already have the layout the broadcast needs.
    assert "layout conversion" not in src
    if n == 128:  # 16 lanes share a row
        assert "__shfl_xor_sync" in src


@pytest.mark.parametrize("m,n,yshape", SHAPES)
@pytest.mark.parametrize("op", ["-", "where"])
def test_broadcast_compiles(m, n, yshape, op):
    src = source(Broadcast(m, n, yshape, op), (torch.zeros(m, n), torch.zeros(*yshape), torch.zeros(m, n)))
    assert "tl_bcast" not in src  # the index map is arithmetic on the loop counter


def test_a_loaded_row_vector_is_loaded_in_the_broadcast_layout():
    # Nothing else fixes y's layout: its load takes the one the broadcast derives, so
    # nothing is converted.
    src = source(Broadcast(64, 128, [64, 1], "-"), (torch.zeros(64, 128), torch.zeros(64, 1), torch.zeros(64, 128)))
    assert "layout conversion" not in src


def test_odd_tiles_are_spread_over_the_threads():
    # 37 x 70 used to be replicated: every thread held the whole tile (2,590 elements).
    src = reduce_source("sum", 37, 70, 1, True)
    assert "float t[64];" in src.replace("__align__(16) ", "")
    assert len(src.splitlines()) < 400


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("m,n", [(37, 70), (3, 200)])
def test_padded_tiles_through_shared_memory_compile(arch, m, n):
    from tests.interp.test_broadcast_softmax import SharedRoundTrip

    src = source(SharedRoundTrip(m, n), (torch.zeros(m, n), torch.zeros(m, n)), arch)
    assert f") < {m}" in src  # the rows past the tile are masked


# ---- scans

from tests.interp.test_scans import Scan  # noqa: E402


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("m,n,dim,op,exclusive,dtype", [
    (64, 128, 1, "add", False, float32), (64, 128, 0, "max", True, float32),
    (37, 70, 1, "mul", False, float16), (37, 70, 0, "min", False, int8), (5, 7, 1, "add", True, int64),
    (3, 100, 1, "add", False, float64)])
def test_scans_compile(arch, m, n, dim, op, exclusive, dtype):
    source(Scan(m, n, dim, op, exclusive, dtype), (torch.zeros(m, n), torch.zeros(m, n)), arch)


def test_a_scan_within_a_warp_uses_shfl_up_only():
    src = source(Scan(64, 128, 1, "add"), (torch.zeros(64, 128), torch.zeros(64, 128)))
    assert "__shfl_up_sync" in src and "tl_smem +" not in src


def test_a_scan_across_warps_goes_through_shared_memory():
    src = source(Scan(64, 128, 0, "add"), (torch.zeros(64, 128), torch.zeros(64, 128)))
    assert "scan across warps through shared memory" in src
