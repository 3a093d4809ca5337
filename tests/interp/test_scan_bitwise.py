"""Bitwise scans (scan with op="and", "or", "xor") of integer tiles in the CPU interpreter
against a reference built from torch's bitwise ops, at odd shapes; the program is shared
with tests/codegen/test_scan_bitwise_source.py and tests/gpu/test_scan_bitwise_gpu.py."""

import functools

import pytest
import torch

import tilus
from tilus import float32, int8, int16, int32, int64, uint8

RANGE = {int8: (-128, 128), uint8: (0, 256), int16: (-2**15, 2**15), int32: (-2**31, 2**31 - 1),
         int64: (-2**31, 2**31 - 1)}


class BitScan(tilus.Script):
    """out = scan(x as `dtype`, dim, op, exclusive) of an [m, n] int32 tile, back as int32."""

    def __init__(self, m, n, dim, op, exclusive=False, dtype=int32, warps=4):
        super().__init__()
        self.m, self.n, self.dim, self.op, self.exclusive = m, n, dim, op, exclusive
        self.dtype, self.warps = dtype, warps

    def __call__(self, x: ~int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=int32, shape=[self.m, self.n])
        go = self.global_view(out, dtype=int32, shape=[self.m, self.n])
        t = self.cast(self.load_global(gx, offsets=[0, 0], shape=[self.m, self.n]), dtype=self.dtype)
        r = self.scan(t, dim=self.dim, op=self.op, exclusive=self.exclusive)
        self.store_global(go, self.cast(r, dtype=int32), offsets=[0, 0])


TORCH_OP = {"and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor}
TORCH_DTYPE = {int8: torch.int8, uint8: torch.uint8, int16: torch.int16, int32: torch.int32,
               int64: torch.int64}


def bitwise_scan_reference(x, dim, op, exclusive, dtype):
    t = x.to(TORCH_DTYPE[dtype]).movedim(dim, 0)
    identity = torch.full_like(t[0], -1 if op == "and" else 0)  # all ones, wrapped to the dtype
    acc, rows = identity, []
    for k in range(t.shape[0]):
        if exclusive:
            rows.append(acc)
        acc = functools.reduce(TORCH_OP[op], [acc, t[k]])
        if not exclusive:
            rows.append(acc)
    return torch.stack(rows).movedim(0, dim).to(torch.int32)


def run_bitwise_scan(m, n, dim, op, exclusive=False, dtype=int32, warps=4, device="cpu"):
    lo, hi = RANGE[dtype]
    x = torch.randint(lo, hi, (m, n), dtype=torch.int64).to(torch.int32).to(device)
    out = torch.full((m, n), -12345, dtype=torch.int32, device=device)  # poisoned
    BitScan(m, n, dim, op, exclusive, dtype, warps)(x, out)
    return x.cpu(), out.cpu()


@pytest.mark.parametrize("op", ["and", "or", "xor"])
@pytest.mark.parametrize("m,n,dim", [(5, 7, 1), (5, 7, 0), (37, 70, 1), (37, 70, 0), (64, 128, 0), (3, 100, -1)])
@pytest.mark.parametrize("exclusive", [False, True])
def test_bitwise_scan_matches_reference(op, m, n, dim, exclusive):
    x, out = run_bitwise_scan(m, n, dim, op, exclusive)
    torch.testing.assert_close(out, bitwise_scan_reference(x, dim, op, exclusive, int32), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [int8, uint8, int16, int64])
@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise_scan_of_every_integer_dtype(dtype, op):
    x, out = run_bitwise_scan(9, 33, 1, op, True, dtype)
    torch.testing.assert_close(out, bitwise_scan_reference(x, 1, op, True, dtype), rtol=0, atol=0)


def test_a_bitwise_scan_of_a_float_tile_is_refused():
    class FloatXor(tilus.Script):
        def __call__(self, x: ~float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            t = self.register_tensor(dtype=float32, shape=[4, 4], init=0)
            self.print_tensor("s", self.scan(t, dim=1, op="xor"))  # MARK-xor

    with pytest.raises(TypeError, match="op='xor' is bitwise and needs an integer tensor") as info:
        FloatXor()(torch.zeros(1))
    assert "MARK-xor" in str(info.value)
