"""Bitwise operators on runtime scalars, as Tilus 0.2 scripts write them (`a & b`, `a | b`,
`a ^ b`, `a << n`, `a >> n`): the interpreter's values against a Python model of the
semantics tilus defines (ir/dtype.h shift_int: the result has the operands' promoted type,
a shift by a negative amount or by the width or more gives 0, or -1 for >> of a negative
signed value; >> is arithmetic on signed values). The GPU runs the same script
(tests/gpu/test_scalar_bitwise_gpu.py); constant operands fold to the same values."""

import numpy as np
import pytest
import torch

import tilus
from tilus import int32, int64, uint32

OPS = ["&", "|", "^", "<<", ">>"]
VALUES = [0, 1, 7, -1, -8, 123456, -2**31, 2**31 - 1]
AMOUNTS = [0, 1, 5, 31, 32, 33, -1, 64]


def model(op: str, x: int, n: int, bits: int, signed: bool) -> int:
    """The value tilus defines, computed with Python integers."""
    def wrap(v):
        v &= (1 << bits) - 1
        return v - (1 << bits) if signed and v >> (bits - 1) else v
    x = wrap(x)
    if op in ("<<", ">>"):
        n = wrap(n)
        if n < 0 or n >= bits:
            return 0 if op == "<<" or not signed or x >= 0 else -1
        if op == "<<":
            return wrap(x << n)
        return x >> n if signed else (x & ((1 << bits) - 1)) >> n
    return wrap({"&": x & n, "|": x | n, "^": x ^ n}[op])


class Bitwise(tilus.Script):
    """out[i, j] = xs[i] <op> ns[j] for runtime scalars of `dtype`; the last column holds
    the constant-folded `-8 <op> 40` and the one before it `-8 <op> 3` (typed constants:
    the IR folds them)."""

    def __init__(self, op: str, dtype):
        super().__init__()
        self.op, self.dtype = op, dtype

    def combine(self, a, b):
        op = self.op
        if op == "&":
            return a & b
        if op == "|":
            return a | b
        if op == "^":
            return a ^ b
        if op == "<<":
            return a << b
        return a >> b

    def __call__(self, count: int32, xs_ptr: tilus.void_p, ns_ptr: tilus.void_p, out_ptr: tilus.void_p):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        xs = self.global_view(xs_ptr, dtype=self.dtype, shape=[count])
        ns = self.global_view(ns_ptr, dtype=self.dtype, shape=[count])
        out = self.global_view(out_ptr, dtype=self.dtype, shape=[count, count + 2])
        for i in range(count):
            x = xs[i].item()
            for j in range(count):
                self.put(out, i, j, self.combine(x, ns[j].item()))
            self.put(out, i, count, self.combine(self.dtype(-8), self.dtype(3)))
            self.put(out, i, count + 1, self.combine(self.dtype(-8), self.dtype(40)))

    def put(self, out, i, j, value):
        self.store_global(out, self.register_tensor(dtype=self.dtype, shape=[1, 1], init=value), offsets=[i, j])


TYPES = {int32: (torch.int32, 32, True), int64: (torch.int64, 64, True), uint32: (torch.int64, 32, False)}


def run(op, dtype, device):
    torch_dtype, bits, signed = TYPES[dtype]
    values = VALUES
    seconds = VALUES if op not in ("<<", ">>") else AMOUNTS
    count = len(values)
    assert len(seconds) == count
    store = np.int32 if dtype is int32 else (np.int64 if dtype is int64 else np.uint32)
    xs = torch.from_numpy(np.array([v & ((1 << bits) - 1) for v in values], dtype=np.uint64).astype(store))
    ns = torch.from_numpy(np.array([v & ((1 << bits) - 1) for v in seconds], dtype=np.uint64).astype(store))
    out = torch.from_numpy(np.full((count, count + 2), 0x5A, dtype=store))
    xs, ns, out = xs.to(device), ns.to(device), out.to(device)
    Bitwise(op, dtype)(count, xs, ns, out)
    got = out.cpu().numpy().astype(np.int64)
    if not signed:
        got &= (1 << bits) - 1
    folded = [model(op, -8, 3, bits, signed), model(op, -8, 40, bits, signed)]
    expected = np.array([[model(op, x, n, bits, signed) for n in seconds] + folded for x in values],
                        dtype=np.int64)
    if not signed:
        expected &= (1 << bits) - 1
    return got, expected


@pytest.mark.parametrize("dtype", list(TYPES), ids=lambda t: t.name)
@pytest.mark.parametrize("op", OPS)
def test_bitwise_operators_on_runtime_scalars(op, dtype):
    got, expected = run(op, dtype, "cpu")
    np.testing.assert_array_equal(got, expected)


class NonInteger(tilus.Script):
    """`x << 2` over a float, or `(x > 0) & (x < 9)` over booleans: refused."""

    def __init__(self, boolean: bool):
        super().__init__()
        self.boolean = boolean

    def __call__(self, x: tilus.float32, out_ptr: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        if self.boolean:
            y = (x > 0.0) & (x < 9.0)
        else:
            y = x << 2


@pytest.mark.parametrize("boolean,message,line", [
    (False, "<< needs integer operands, got float32", "y = x << 2"),
    (True, "operator & needs integers, got boolean", "y = (x > 0.0) & (x < 9.0)")])
def test_non_integer_operands_are_refused_at_the_line(boolean, message, line):
    with pytest.raises(TypeError, match=message) as info:
        NonInteger(boolean)(1.0, torch.zeros(1, dtype=torch.int32))
    assert line in str(info.value)
