"""break/continue of loops unrolled at compile time, on the GPU (issue 18): the same
counts as Python computes for the same loops."""

import pytest
import torch

from tests.lang import test_loop_exits as le

pytestmark = pytest.mark.gpu


def _run(kernel, *args):
    out = torch.full((1,), -1, dtype=torch.int32, device="cuda")
    kernel(*args, out)
    return int(out[0].cpu())


def test_compile_time_exits_on_gpu():
    assert _run(le.CompileTimeBreak(), 3, 0) == 3 * (2 + 100)
    assert _run(le.CompileTimeContinue(), 3, 0) == 3 * (1 + 100 + 1000)


@pytest.mark.parametrize("n,lim", [(0, 0), (1, 0), (5, 2), (6, 4), (3, 9)])
def test_runtime_break_on_gpu(n, lim):
    assert _run(le.RuntimeBreak(), n, lim) == le._runtime_break(n, lim)


@pytest.mark.parametrize("n,lim", [(4, 2), (5, 3), (3, 1)])
def test_runtime_continue_on_gpu(n, lim):
    assert _run(le.RuntimeContinue(), n, lim) == le._runtime_continue(n, lim)


@pytest.mark.parametrize("n,lim", [(9, 9), (2, 9), (2, 3), (0, 1), (7, 0)])
def test_exits_without_runtime_loop_on_gpu(n, lim):
    assert _run(le.BreakAndContinueWithoutRuntimeLoop(), n, lim) == le._without_runtime_loop(n, lim)


def test_tiles_after_a_runtime_break_on_gpu():
    x = torch.arange(32, dtype=torch.float32, device="cuda").reshape(4, 8)
    x[2, 0] = -1.0
    out = torch.zeros(1, 8, device="cuda")
    le.TileRows()(3, x, out)
    torch.testing.assert_close(out[0], 3 * (x[0] + x[1]))
