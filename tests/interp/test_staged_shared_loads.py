"""Loads and stores of a pipeline-stage slice of a swizzled shared tensor (``s[stage]``
at a runtime stage) with register layouts that give a thread several 16-byte chunks of a
row. The swizzle mixes the stage into the address, so a thread's chunks are not at fixed
distances from its first one at every stage (the A16Wx matmul's scale rows read wrong on
the GPU before this was handled). Run in the interpreter here, on CUDA in tests/gpu."""

import pytest
import torch

import tilus
from tilus import float16, int32
from tilus.layout import auto_global_layout


class StagedRows(tilus.Script):
    """out[s] = x[s] for every stage s: x lands in shared s_tile[stages, rows, n] with
    copy_async (or store_shared with `wide`), and stage s is read back with load_shared
    (layout `wide`: `per_thread` contiguous elements a thread, else the default) at a
    runtime stage index."""

    def __init__(self, stages, rows, n, per_thread, store_wide, warps=1):
        super().__init__()
        self.stages, self.rows, self.n, self.store_wide, self.warps = stages, rows, n, store_wide, warps
        self.wide = auto_global_layout([rows, n], 32 * warps, per_thread)

    def __call__(self, x: ~float16, out: ~float16):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float16, shape=[self.stages, self.rows, self.n])
        go = self.global_view(out, dtype=float16, shape=[self.stages, self.rows, self.n])
        tile = self.shared_tensor(dtype=float16, shape=[self.stages, self.rows, self.n])
        for s in range(self.stages):
            if self.store_wide:
                t = self.load_global(gx, offsets=[s, 0, 0], shape=[self.rows, self.n], layout=self.wide)
                self.store_shared(tile[s], t)
            else:
                self.copy_async(src=gx, dst=tile[s], offsets=[s, 0, 0])
        self.copy_async_commit_group()
        self.copy_async_wait_group(n=0)
        self.sync()
        stage: int32 = 0
        for i in self.range(0, self.stages, 1):
            r = self.load_shared(tile[stage], layout=self.wide)
            self.store_global(go, r, offsets=[stage, 0, 0])
            stage = (stage + 1) % self.stages
        self.sync()
        self.free_shared(tile)


CASES = [(3, 1, 64, 32, False), (4, 2, 64, 16, False), (3, 1, 128, 64, False),
         (3, 1, 64, 32, True), (4, 4, 128, 32, True)]


def run_case(device, stages, rows, n, per_thread, store_wide):
    x = torch.randn(stages, rows, n, device=device).half()
    out = torch.full_like(x, float("nan"))
    StagedRows(stages, rows, n, per_thread, store_wide)(x, out)
    assert torch.equal(out, x)


@pytest.mark.parametrize("stages,rows,n,per_thread,store_wide", CASES)
def test_staged_rows_interpreter(stages, rows, n, per_thread, store_wide):
    run_case("cpu", stages, rows, n, per_thread, store_wide)
