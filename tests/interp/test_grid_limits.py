"""A grid larger than a CUDA launch takes (x > 2^31 - 1, y or z > 65535) is refused at
the line that sets ``self.attrs.blocks``, in the interpreter as on the GPU, before any
block runs; the native launcher's evaluator hands such grids to the Python path, which
names the line."""

import pytest
import torch

import tilus
from tilus import _C, float32, int32


class Grid(tilus.Script):
    """Block (0, 0, 0) adds one to x; the grid is [1, y, z]."""

    def __call__(self, y: int32, z: int32, x_ptr: ~float32):
        self.attrs.blocks = [1, y, z]
        self.attrs.warps = 1
        if self.blockIdx.y == 0 and self.blockIdx.z == 0:
            g = self.global_view(x_ptr, dtype=float32, shape=[32])
            self.store_global(g, self.load_global(g, offsets=[0], shape=[32]) + 1.0, offsets=[0])


@pytest.mark.parametrize("y,z,axis,size", [(65536, 1, "y", 65536), (1, 70000, "z", 70000)])
def test_a_grid_past_the_launch_limits_is_refused_at_the_blocks_line(y, z, axis, size):
    x = torch.randn(32)
    before = x.clone()
    with pytest.raises(ValueError) as info:
        Grid()(y, z, x)
    message = str(info.value)
    assert f"the grid's {axis} size {axis} evaluates to {size}, more than a CUDA launch takes (65535)" in message
    assert "self.attrs.blocks = [1, y, z]" in message
    assert torch.equal(x, before)  # nothing ran


def test_the_largest_grid_a_launch_takes_is_accepted():
    x = torch.randn(32)
    before = x.clone()
    Grid()(65535, 1, x)
    assert torch.equal(x, before + 1.0)


def test_the_native_evaluator_leaves_such_grids_to_the_python_path():
    x = torch.randn(32)
    program = Grid().compile(1, 1, x).program
    pointer = 1 << 20
    assert tuple(_C.host_launch_shape(program, [65535, 2, pointer])[0]) == (1, 65535, 2)
    assert _C.host_launch_shape(program, [65536, 1, pointer]) is None
    assert _C.host_launch_shape(program, [1, 65536, pointer]) is None
