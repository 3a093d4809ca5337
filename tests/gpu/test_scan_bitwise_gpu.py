"""Bitwise scans (and, or, xor) on the GPU against a torch reference: fresh random data
over each dtype's whole range, odd shapes, 1 to 8 warps, outputs poisoned."""

import pytest

from tests.interp.test_scan_bitwise import bitwise_scan_reference, run_bitwise_scan
from tilus import int8, int16, int32, int64, uint8

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("warps", [1, 4, 8])
@pytest.mark.parametrize("op", ["and", "or", "xor"])
@pytest.mark.parametrize("m,n,dim", [(5, 7, 1), (5, 7, 0), (37, 70, 1), (37, 70, 0), (64, 128, 0),
                                     (3, 100, -1), (200, 8, 0)])
@pytest.mark.parametrize("exclusive", [False, True])
def test_bitwise_scan(op, m, n, dim, exclusive, warps):
    x, out = run_bitwise_scan(m, n, dim, op, exclusive, warps=warps, device="cuda")
    assert (out == bitwise_scan_reference(x, dim, op, exclusive, int32)).all()


@pytest.mark.parametrize("dtype", [int8, uint8, int16, int64])
@pytest.mark.parametrize("op", ["and", "or", "xor"])
@pytest.mark.parametrize("dim", [0, 1])
def test_bitwise_scan_of_every_integer_dtype(dtype, op, dim):
    x, out = run_bitwise_scan(37, 20, dim, op, True, dtype, device="cuda")
    assert (out == bitwise_scan_reference(x, dim, op, True, dtype)).all()
