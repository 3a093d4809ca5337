"""Scripts for copy_async's lowering to TMA on sm_90a (csrc/ops/async_copy.cc), shared by
the source tests (tests/codegen/test_copy_tma_source.py) and the GPU tests."""

import tilus
from tilus import float32, int32


class ManyGroups(tilus.Script):
    """`groups` commit groups in flight at once, more than the lowering's ring of 8
    barriers holds: each copies rows [g * 16, g * 16 + 16) of x into slot g of a shared
    buffer; one wait for all, then every slot is written back to y. `in_group`: the
    copies run inside a thread group of the whole block (not lowered); `pad`: floats of
    one more shared tensor."""

    def __init__(self, groups=10, in_group=False, pad=0):
        super().__init__()
        self.groups = groups
        self.in_group = in_group
        self.pad = pad  # floats of another shared tensor (to fill shared memory)

    def __call__(self, rows: int32, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float32, shape=[rows, 32])
        gy = self.global_view(y_ptr, dtype=float32, shape=[rows, 32])
        slots = self.shared_tensor(dtype=float32, shape=[self.groups, 16, 32])
        if self.pad:
            pad = self.shared_tensor(dtype=float32, shape=[self.pad])
            self.store_shared(pad, self.register_tensor(dtype=float32, shape=[self.pad], init=0.0))
        if self.in_group:
            with self.thread_group(0, num_threads=128):
                for g in range(self.groups):
                    self.copy_async(src=gx, dst=slots[g], offsets=[g * 16, 0])
                    self.copy_async_commit_group()
                self.copy_async_wait_group(0)
        else:
            for g in range(self.groups):
                self.copy_async(src=gx, dst=slots[g], offsets=[g * 16, 0])
                self.copy_async_commit_group()
            self.copy_async_wait_group(0)
        self.sync()
        for g in range(self.groups):
            self.store_global(gy, self.load_shared(slots[g]), offsets=[g * 16, 0])
