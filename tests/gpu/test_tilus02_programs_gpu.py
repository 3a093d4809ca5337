"""What this session's Tilus 0.2 surface compiles to runs on the GPU as in the interpreter:
a return under a runtime condition ends the block (kernel, helper, loops, unrolled loops),
register tensors indexed at runtime positions (phases per stage, rows, in a thread group),
a tile made before the one group that uses it, and Python's math on runtime scalars.
Outputs are poisoned; data is fresh each run."""

import math

import pytest
import torch

import tilus
from tests.interp.test_register_slices import (STAGES, InAThreadGroup, PhasePerStage,
                                              RowsAtRuntimePositions)
from tests.interp.test_thread_groups import TileMadeBeforeItsGroup
from tests.lang.test_kernel_exit import (BLOCK, HelperEndsTheKernel, SkipsBlocksPastALimit,
                                         WorkspaceAfterAnExit, check_helper_exits,
                                         check_sum_until_negative, check_unrolled_stages)
from tilus import float32

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_blocks_past_a_limit_end_at_once():
    n, limit = 9 * BLOCK + 5, 4
    x = torch.randn(n, device="cuda")
    y = torch.full((n,), float("nan"), device="cuda")
    SkipsBlocksPastALimit()(n, limit, x, y)
    torch.testing.assert_close(y[:limit * BLOCK], x[:limit * BLOCK] * 2)
    assert y[limit * BLOCK:].isnan().all()


def test_a_helper_return_ends_the_kernel():
    n = 6 * BLOCK + 3
    x = torch.randn(n, device="cuda")
    y = torch.full((n,), float("nan"), device="cuda")
    HelperEndsTheKernel()(n, x, y)
    check_helper_exits(n, x.cpu(), y.cpu())


def test_returns_inside_runtime_and_unrolled_loops():
    check_sum_until_negative(9, 16, [0, 3, 8], device="cuda")
    for stop in (0, 2, None):
        check_unrolled_stages(stop, device="cuda")


def test_register_tensors_at_runtime_positions():
    steps = 13
    out = torch.full((steps,), -1, dtype=torch.int32, device="cuda")
    PhasePerStage()(steps, out)
    assert out.cpu().tolist() == [(k // STAGES) % 2 for k in range(steps)]
    x = torch.randn(3, 5)
    for i, j, c in ((0, 2, 4), (2, 0, 1), (1, 1, 0)):
        got = torch.full((3, 5), float("nan"), device="cuda")
        row = torch.full((5,), float("nan"), device="cuda")
        RowsAtRuntimePositions()(i, j, c, x.cuda(), got, row)
        expected = x.clone()
        expected[j] = x[i] * 2
        expected[0, c] = -1.0
        torch.testing.assert_close(row.cpu(), x[i])
        torch.testing.assert_close(got.cpu(), expected)
    total = torch.full((1,), -1, dtype=torch.int32, device="cuda")
    InAThreadGroup()(7, total)
    phases, want = [1, 1], 0
    for k in range(7):
        want += phases[k % 2] * (k + 1)
        phases[k % 2] ^= 1
    assert total.item() == want


def test_a_tile_made_before_its_group():
    out = torch.full((32, 8), float("nan"), device="cuda")
    TileMadeBeforeItsGroup()(out)
    torch.testing.assert_close(out.cpu(), torch.full((32, 8), 3.5))


class ScalarMath(tilus.Script):
    def __call__(self, x: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float32, shape=[4])
        go = self.global_view(out, dtype=float32, shape=[4])
        a = gx[0].item()
        b = gx[1].item()
        values = [math.exp(a), math.log(b), math.sqrt(b), math.tanh(a)]
        for i, v in enumerate(values):
            self.store_global(go, self.register_tensor(dtype=float32, shape=[1], init=v), offsets=[i])


def test_math_on_runtime_scalars():
    x = torch.rand(4) + 0.5
    out = torch.full((4,), float("nan"), device="cuda")
    ScalarMath()(x.cuda(), out)
    a, b = x[0].item(), x[1].item()
    expected = torch.tensor([math.exp(a), math.log(b), math.sqrt(b), math.tanh(a)])
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-6)


def test_a_workspace_sized_after_an_exit():
    n, limit = 7 * BLOCK + 3, 3
    x = torch.randn(n, device="cuda")
    y = torch.full((n,), float("nan"), device="cuda")
    WorkspaceAfterAnExit()(n, limit, x, y)
    torch.testing.assert_close(y[:limit * BLOCK], x[:limit * BLOCK] + 1)
    assert y[limit * BLOCK:].isnan().all()
