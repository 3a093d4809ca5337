"""copy_async_wait_all (Tilus 0.2's name): every copy lands, committed or not; and the
wait tilus places after free_shared of a tile copies may still be landing in
(transforms/copy_waits.cc) is an IR instruction the emitter prints."""

import pytest
import torch

import tilus
from tilus import _C, float32


class WaitAll(tilus.Script):
    """Two copies, one committed and one not; wait_all lands both."""

    def __call__(self, src: ~float32, dst: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gs = self.global_view(src, dtype=float32, shape=[16])
        gd = self.global_view(dst, dtype=float32, shape=[16])
        s = self.shared_tensor(dtype=float32, shape=[2, 8])
        self.copy_async(src=gs, dst=s[0], offsets=[0])
        self.copy_async_commit_group()
        self.copy_async(src=gs, dst=s[1], offsets=[8])  # never committed
        self.copy_async_wait_all()
        self.sync()
        self.store_global(gd, self.load_shared(s[0]), offsets=[0])
        self.store_global(gd, self.load_shared(s[1]), offsets=[8])
        self.free_shared(s)


class PrologueNeverWaited(tilus.Script):
    """Copies a tile, frees it without waiting: tilus must wait before the memory is reused."""

    def __call__(self, src: ~float32, dst: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gs = self.global_view(src, dtype=float32, shape=[8])
        gd = self.global_view(dst, dtype=float32, shape=[8])
        s = self.shared_tensor(dtype=float32, shape=[8])
        self.copy_async(src=gs, dst=s, offsets=[0])
        self.copy_async_commit_group()
        self.free_shared(s)
        t = self.shared_tensor(dtype=float32, shape=[8])
        self.store_shared(t, self.register_tensor(dtype=float32, shape=[8], init=2.0))
        self.sync()
        self.store_global(gd, self.load_shared(t), offsets=[0])
        self.free_shared(t)


def test_wait_all_lands_committed_and_uncommitted_copies():
    src = torch.randn(16)
    dst = torch.full((16,), float("nan"))
    WaitAll()(src, dst)
    assert torch.equal(dst, src)
    assert "copy_async_wait_all()" in WaitAll().ir(src, dst)


@pytest.mark.skipif(not _C.runtime.nvrtc_available(), reason="NVRTC is not installed")
def test_a_freed_copy_target_is_waited_for_before_reuse():
    src, dst = torch.randn(8), torch.full((8,), float("nan"))
    kernel = PrologueNeverWaited()
    source = kernel.source(src, dst, arch="sm_80")
    free_at = source.index("// free_shared(s)")
    wait_at = source.index("tilus::cp_async_wait_all();  // let copies into freed memory land")
    assert free_at < wait_at < source.index("__syncthreads();", wait_at) < source.index("2.0")
    # the same program in the interpreter: the value stored after the free is what is read
    kernel(src, dst)
    assert torch.equal(dst, torch.full((8,), 2.0))
    # a script's own wait_all is printed without the pass's reason
    assert "cp_async_wait_all();\n" in WaitAll().source(torch.zeros(16), torch.zeros(16), arch="sm_80")
