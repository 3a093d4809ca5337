"""The interpreter refuses, as every GPU would, a kernel whose shared memory no GPU
offers one block (more than 227 KB as the GPU build lays it out), at the script's
``__call__``; memory freed before the next allocation is reused, so a kernel that frees
its tiles fits where one holding them all would not."""

import pytest
import torch

import tilus
from tilus import float32, int32
from tilus.script import MAX_SHARED_MEMORY_PER_BLOCK


class Staged(tilus.Script):
    """Two shared tiles of `kb` KB each; `free_first` frees the first before the second."""

    def __init__(self, kb: int, free_first: bool):
        super().__init__()
        self.rows = kb * 1024 // (4 * 32)  # rows of 32 float32
        self.free_first = free_first

    def __call__(self, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[32])
        go = self.global_view(out_ptr, dtype=float32, shape=[32])
        first = self.shared_tensor(dtype=float32, shape=[self.rows, 32])
        self.store_shared(first[0], self.load_global(gx, offsets=[0], shape=[32]))
        self.sync()
        x = self.load_shared(first[0])
        if self.free_first:
            self.free_shared(first)
        second = self.shared_tensor(dtype=float32, shape=[self.rows, 32])
        self.store_shared(second[0], x * 2.0)
        self.sync()
        self.store_global(go, self.load_shared(second[0]), offsets=[0])


def test_more_shared_memory_than_any_gpu_is_refused_at_the_call():
    assert MAX_SHARED_MEMORY_PER_BLOCK == 227 * 1024
    out = torch.full((32,), float("nan"))
    kernel = Staged(kb=120, free_first=False)
    with pytest.raises(tilus.ScriptError, match="needs 245760 bytes"):
        kernel(torch.randn(32), out)
    with pytest.raises(tilus.ScriptError) as info:  # again: the plan is kept, not the pass
        kernel(torch.randn(32), out)
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)  # as the GPU launch's refusal
    assert "needs 245760 bytes of shared memory per block" in message and "232448" in message
    assert "def __call__(self, x_ptr: ~float32, out_ptr: ~float32):" in message
    assert torch.isnan(out).all()  # nothing ran


def test_freed_tiles_make_room_for_the_next():
    x = torch.randn(32)
    out = torch.full((32,), float("nan"))
    Staged(kb=120, free_first=True)(x, out)
    torch.testing.assert_close(out, x * 2.0)


@tilus.autotune("kb", [120, 60])
class TunedStaged(Staged):
    def __init__(self, kb: int):
        super().__init__(kb, free_first=False)


def test_the_interpreter_tuning_rule_skips_configurations_no_gpu_can_run():
    """The CPU rule takes the first configuration that compiles *and fits*, as the GPU
    search leaves out candidates over the device's shared memory."""
    x = torch.randn(32)
    out = torch.full((32,), float("nan"))
    kernel = TunedStaged()
    kernel(x, out)
    torch.testing.assert_close(out, x * 2.0)
    assert kernel.chosen_config(x, out) == {"kb": 60}
