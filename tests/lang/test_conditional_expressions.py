"""`a if condition else b`: a compile-time condition picks one branch as Python does; a
runtime one selects between scalars (only the chosen value is read); between tiles it is
refused at the line, pointing at an if statement or self.where."""

import pytest
import torch

import tilus
from tilus import float32, int32


class Pick(tilus.Script):
    def __init__(self, tiles: bool):
        super().__init__()
        self.tiles = tiles

    def __call__(self, k: int32, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[2, 32])
        go = self.global_view(out_ptr, dtype=float32, shape=[2, 32])
        a = self.load_global(gx, offsets=[0, 0], shape=[32])
        b = self.load_global(gx, offsets=[1, 0], shape=[32])
        if self.tiles:
            a = a if k > 3 else b
        scale = 1.5 if k > 3 else 2.5  # runtime: a select of scalars
        self.store_global(go, a * scale, offsets=[0, 0])
        self.store_global(go, a if self.tiles is False else b, offsets=[1, 0])  # compile-time


@pytest.mark.parametrize("k", [5, 1])
def test_a_runtime_condition_selects_between_scalars(k):
    x = torch.randn(2, 32)
    out = torch.full_like(x, float("nan"))
    Pick(False)(k, x, out)
    torch.testing.assert_close(out[0], x[0] * (1.5 if k > 3 else 2.5))
    torch.testing.assert_close(out[1], x[0])


def test_a_runtime_condition_between_tiles_is_refused_at_the_line():
    x = torch.randn(2, 32)
    with pytest.raises(TypeError) as info:
        Pick(True)(5, x, torch.zeros_like(x))
    assert "for tiles write an if statement, or self.where(condition, a, b)" in str(info.value)
    assert "a = a if k > 3 else b" in str(info.value)
