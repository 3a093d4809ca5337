"""`while` as in Python: the test is evaluated before every iteration, also when it
computes with instructions (a reduction of a tile the body updates, an atomic whose old
value it reads) -- such a test is evaluated at the top of the loop and never once before
it; `while True:` loops until a break and `while False:` runs nothing. Interpreter here;
the GPU in tests/gpu/test_while_loops_gpu.py."""

import pytest
import torch

import tilus
from tilus import float32, int32


class While(tilus.Script):
    """mode "sum": out[0] = rows of x added into acc while sum(acc) < limit; "atomic": a
    counter incremented by every test (old value < 5), out = [iterations, counter]; "true":
    while True with a break after n iterations; "false": while False."""

    def __init__(self, mode: str):
        super().__init__()
        self.mode = mode

    def put(self, go, k, v):
        self.store_global(go, self.register_tensor(dtype=float32, shape=[1], init=v), offsets=[k])

    def __call__(self, n: int32, limit: float32, x_ptr: ~float32, counter_ptr: ~int32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[8, 32])
        gc = self.global_view(counter_ptr, dtype=int32, shape=[1])
        go = self.global_view(out_ptr, dtype=float32, shape=[2])
        k: int32 = 0
        if self.mode == "sum":
            acc = self.register_tensor(dtype=float32, shape=[32], init=0.0)
            while self.sum(acc, dim=0).item() < limit and k < 8:
                acc = acc + self.load_global(gx, offsets=[k, 0], shape=[32])
                k += 1
            self.put(go, 0, self.sum(acc, dim=0).item())
        elif self.mode == "atomic":
            one = self.register_tensor(dtype=int32, shape=[1], init=1)
            while self.atomic.global_add(gc, one).item() < 5:
                k += 1
        elif self.mode == "true":
            while True:
                if k >= n:
                    break
                k += 1
        else:
            while False:
                k += 1
        self.put(go, 1, k)


def _run(mode, n=3, limit=100.0, device="cpu"):
    x = torch.rand(8, 32, device=device) * 2
    counter = torch.zeros(1, dtype=torch.int32, device=device)
    out = torch.full((2,), -1.0, device=device)
    While(mode)(n, limit, x, counter, out)
    return x.cpu(), counter.cpu(), out.cpu()


def expected_sum(x, limit):
    acc, k = torch.zeros(32), 0
    while acc.sum() < limit and k < 8:
        acc, k = acc + x[k], k + 1
    return acc.sum().item(), k


@pytest.mark.parametrize("limit", [0.0, 50.0, 100.0, 1000.0])
def test_a_test_reducing_a_tile_the_body_updates(limit):
    x, _, out = _run("sum", limit=limit)
    total, k = expected_sum(x, limit)
    assert out[1].item() == k
    torch.testing.assert_close(out[0].item(), total, rtol=1e-5, atol=1e-4)


def test_a_test_with_an_effect_runs_once_an_iteration_and_once_more():
    _, counter, out = _run("atomic")
    assert out[1].item() == 5 and counter.item() == 6


@pytest.mark.parametrize("n", [0, 4])
def test_while_true_until_a_break_and_while_false(n):
    assert _run("true", n=n)[2][1].item() == n
    assert _run("false", n=n)[2][1].item() == 0


def test_a_compile_time_test_that_calls_a_function_is_refused():
    class PythonTest(tilus.Script):
        def __call__(self, out_ptr: ~int32):
            self.attrs.blocks = [1]
            self.attrs.warps = 1
            items = [1, 2]
            while len(items) > 0:
                items.pop()

    with pytest.raises(TypeError, match="a while condition must be a runtime value") as info:
        PythonTest()(torch.zeros(1, dtype=torch.int32))
    assert "while len(items) > 0" in str(info.value)
