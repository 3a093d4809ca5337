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


# The three ops differ only in the one-line combine (checked below for each), so each
# (dtype, shape, arch) compiles one of them, taken in turn: every op still compiles for
# both architectures, both shapes and several dtypes (a third of the NVRTC time).
_OPS = ["and", "or", "xor"]
_DTYPES = [int8, uint8, int32, int64]
_SHAPES = [(37, 70, 1), (64, 128, 0)]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("m,n,dim", _SHAPES)
@pytest.mark.parametrize("dtype", _DTYPES)
def test_bitwise_scans_compile(arch, m, n, dim, dtype):
    op = _OPS[(_DTYPES.index(dtype) + _SHAPES.index((m, n, dim)) + (arch == "sm_90a")) % len(_OPS)]
    scan_source(m, n, dim, op, True, dtype, arch)


def test_every_op_compiles_for_both_architectures_and_shapes():
    covered = {(_OPS[(d + s + a) % len(_OPS)], a, s) for d in range(len(_DTYPES)) for s in range(len(_SHAPES))
               for a in range(2)}
    assert covered == {(op, a, s) for op in _OPS for a in range(2) for s in range(len(_SHAPES))}


@pytest.mark.parametrize("op,symbol", [("and", "a & b"), ("or", "a | b"), ("xor", "a ^ b")])
def test_the_combine_is_the_bitwise_operator(op, symbol):
    src = scan_source(64, 128, 1, op)
    assert f"tl_reduce_{op}_unsigned_int(unsigned int a, unsigned int b) {{ return {symbol}; }}" in src


def test_a_64_bit_and_starts_from_all_ones():
    src = scan_source(64, 128, 1, "and", True, int64)
    assert "0xffffffffffffffffull" in src
