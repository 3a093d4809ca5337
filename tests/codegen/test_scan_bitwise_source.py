"""The CUDA generated for bitwise scans (and, or, xor) compiles with NVRTC for sm_80 and
sm_90a, within a warp (shfl_up) and across warps (shared memory), for narrow and wide
integer dtypes, and combines with the bitwise operator its op names."""

import pytest
import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.interp.test_scan_bitwise import BitScan
from tilus import int8, int32, int64, uint8

require_nvrtc()


def scan_source(m, n, dim, op, exclusive=False, dtype=int32, arch="sm_80", warps=4):
    args = (torch.zeros(m, n, dtype=torch.int32), torch.zeros(m, n, dtype=torch.int32))
    return kernel_source(BitScan(m, n, dim, op, exclusive, dtype, warps), args, arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("op", ["and", "or", "xor"])
@pytest.mark.parametrize("m,n,dim", [(37, 70, 1), (64, 128, 0)])
@pytest.mark.parametrize("dtype", [int8, uint8, int32, int64])
def test_bitwise_scans_compile(arch, op, m, n, dim, dtype):
    scan_source(m, n, dim, op, True, dtype, arch)


@pytest.mark.parametrize("op,symbol", [("and", "a & b"), ("or", "a | b"), ("xor", "a ^ b")])
def test_the_combine_is_the_bitwise_operator(op, symbol):
    src = scan_source(64, 128, 1, op)
    assert f"tl_reduce_{op}_unsigned_int(unsigned int a, unsigned int b) {{ return {symbol}; }}" in src


def test_a_64_bit_and_starts_from_all_ones():
    src = scan_source(64, 128, 1, "and", True, int64)
    assert "0xffffffffffffffffull" in src
