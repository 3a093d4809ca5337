"""A register shape change while a wgmma dot runs (sm_90a, 8 warps): the async pass
waits for the dot only when the change's lowering meets the block at a barrier (an
exchange through shared memory), not when it keeps the registers (csrc/transforms/
async_waits.cc, layout/register_views.h moves_data)."""

import torch

import tilus
from tilus import _C, float16, float32, int32
from tilus.utils import cdiv


class DotThenReshape(tilus.Script):
    def __init__(self, new_shape):
        super().__init__()
        self.new_shape = new_shape

    def __call__(self, m: int32, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float32, x_ptr: ~float32,
                 y_ptr: ~float32):
        self.attrs.blocks = [cdiv(m, 128)]
        self.attrs.warps = 8
        ga = self.global_view(a_ptr, dtype=float16, shape=[m, 32])
        gb = self.global_view(b_ptr, dtype=float16, shape=[32, 64])
        sa = self.shared_tensor(dtype=float16, shape=[128, 32])
        sb = self.shared_tensor(dtype=float16, shape=[32, 64])
        self.copy_async(src=ga, dst=sa, offsets=[self.blockIdx.x * 128, 0])
        self.copy_async(src=gb, dst=sb, offsets=[0, 0])
        self.copy_async_commit_group()
        self.copy_async_wait_group(n=0)
        self.sync()
        acc = self.register_tensor(dtype=float32, shape=[128, 64], init=0.0)
        self.dot(self.load_shared(sa), self.load_shared(sb), acc, out=acc)
        x = self.load_global(self.global_view(x_ptr, dtype=float32, shape=[6, 10]), offsets=[0, 0], shape=[6, 10])
        y = self.reshape(x, self.new_shape)  # MARK-reshape
        self.store_global(self.global_view(y_ptr, dtype=float32, shape=self.new_shape), y,
                          offsets=[0] * len(self.new_shape))
        self.store_global(self.global_view(c_ptr, dtype=float32, shape=[m, 64]), acc,
                          offsets=[self.blockIdx.x * 128, 0])
        self.sync()
        self.free_shared(sa)
        self.free_shared(sb)


def _lowered(new_shape):
    args = (128, torch.zeros(128, 32, dtype=torch.float16), torch.zeros(32, 64, dtype=torch.float16),
            torch.zeros(128, 64), torch.zeros(6, 10), torch.zeros(new_shape))
    return str(_C.lower_async(DotThenReshape(new_shape).compile(*args).program, "sm_90a"))


def _line_before(ir, needle):
    lines = [ln.strip() for ln in ir.splitlines()]
    return lines[next(k for k, ln in enumerate(lines) if needle in ln) - 1]


def test_a_register_reshape_does_not_wait_for_the_running_dot():
    ir = _lowered([60])
    assert "wgmma=async" in ir
    assert "wgmma_wait" not in _line_before(ir, "= reshape(")


def test_a_reshape_through_shared_memory_waits_for_the_running_dot():
    ir = _lowered([4, 15])
    assert "wgmma=async" in ir
    assert "a register shape change synchronises the warpgroups" in _line_before(ir, "= reshape(")
