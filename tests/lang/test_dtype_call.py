"""Calling a data type makes a value of it, as Tilus 0.2 scripts write ``float16(1.0)``
or ``int32(x)``: constants of the type, conversions of runtime scalars, casts of tiles;
run in the interpreter against torch."""

import pytest
import torch

import tilus
from tilus import bfloat16, float16, float32, int32
from tilus.utils import cdiv


class Scaled(tilus.Script):
    """out = (x + float16(1.0)) * dtype(scale) with the row index converted by int32(...)."""

    def __call__(self, n: int32, x: ~float16, out: ~float32, scale: float):
        self.attrs.blocks = cdiv(n, 128)
        self.attrs.warps = 4
        gx = self.global_view(x, dtype=float16, shape=[n])
        go = self.global_view(out, dtype=float32, shape=[n])
        offset = int32(self.blockIdx.x * 128)
        t = self.load_global(gx, offsets=[offset], shape=[128])
        t = (t + float16(1.0)) * float16(scale)
        self.store_global(go, float32(t), offsets=[offset])


def test_dtype_calls_in_a_script():
    n = 300
    x = torch.randn(n).half()
    out = torch.full((n,), float("nan"))
    Scaled()(n, x, out, 0.5)
    torch.testing.assert_close(out, ((x + 1.0) * 0.5).float())


def test_dtype_calls_make_typed_constants():
    assert str(float16(1.0)) == "1.0:float16"
    assert str(bfloat16(2)) == "2.0:bfloat16"
    assert str(tilus.uint8(7)) == "7:uint8"
    with pytest.raises(TypeError, match=r"int32\(0.5\): an integer type takes an integer"):
        int32(0.5)
    with pytest.raises(TypeError, match="a pointer type makes no values"):
        (~float16)(1)
    with pytest.raises(TypeError, match="takes a number"):
        float16("1")
