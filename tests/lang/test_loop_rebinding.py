"""Register tiles rebound inside runtime loops and branches carry their value (Tilus 0.2
programs write ``acc = self.maximum(acc, x)`` in a loop and ``if c: acc = ...``): the
rebinding is an assignment into the loop-carried tile. Checked in the interpreter against
torch at odd shapes; a rebinding that would change the tile's type names the line."""

import pytest
import torch

import tilus
from tilus import float32, int32


class RunningMax(tilus.Script):
    """out[r, :] = max over k < n of x[k*rows + r, :] (a plain range over a runtime n)."""

    def __init__(self, rows, cols):
        super().__init__()
        self.rows, self.cols = rows, cols

    def __call__(self, n: int32, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 2
        gx = self.global_view(x_ptr, dtype=float32, shape=[n * self.rows, self.cols])
        acc = self.register_tensor(dtype=float32, shape=[self.rows, self.cols], init=-1e30)
        for k in range(n):
            x = self.load_global(gx, offsets=[k * self.rows, 0], shape=[self.rows, self.cols])
            acc = self.maximum(acc, x)
        self.store_global(self.global_view(out_ptr, dtype=float32, shape=[self.rows, self.cols]),
                          acc, offsets=[0, 0])


class StridedSum(tilus.Script):
    """range(start, stop, step) over runtime bounds; acc = acc + x."""

    def __init__(self, cols):
        super().__init__()
        self.cols = cols

    def __call__(self, start: int32, stop: int32, step: int32, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[stop, self.cols])
        acc = self.register_tensor(dtype=float32, shape=[1, self.cols], init=0.0)
        for k in range(start, stop, step):
            acc = acc + self.load_global(gx, offsets=[k, 0], shape=[1, self.cols])
        self.store_global(self.global_view(out_ptr, dtype=float32, shape=[1, self.cols]), acc,
                          offsets=[0, 0])


class Branches(tilus.Script):
    """Per row k: even rows add, odd rows take the maximum; rows with a negative first
    element are skipped by a nested loop's condition."""

    def __init__(self, cols):
        super().__init__()
        self.cols = cols

    def __call__(self, n: int32, reps: int32, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[n, self.cols])
        acc = self.register_tensor(dtype=float32, shape=[1, self.cols], init=0.0)
        for k in range(n):
            x = self.load_global(gx, offsets=[k, 0], shape=[1, self.cols])
            if k % 2 == 0:
                acc = acc + x
            else:
                acc = self.maximum(acc, x)
            for r in range(reps):      # nested runtime loop: acc scaled reps times
                acc = acc * 0.5
        self.store_global(self.global_view(out_ptr, dtype=float32, shape=[1, self.cols]), acc,
                          offsets=[0, 0])


class ChangesType(tilus.Script):
    def __call__(self, n: int32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        acc = self.register_tensor(dtype=float32, shape=[4, 8], init=0.0)
        for k in range(n):
            acc = self.register_tensor(dtype=float32, shape=[4, 4], init=1.0)
        self.store_global(self.global_view(out_ptr, dtype=float32, shape=[4, 8]), acc,
                          offsets=[0, 0])


@pytest.mark.parametrize("rows,cols,n", [(3, 7, 5), (16, 33, 1), (5, 9, 0)])
def test_running_max_over_a_runtime_range(rows, cols, n):
    x = torch.randn(max(n, 1) * rows, cols)
    out = torch.full((rows, cols), float("nan"))
    RunningMax(rows, cols)(n, x, out)
    expect = x[:n * rows].reshape(n, rows, cols).amax(0) if n else torch.full((rows, cols), -1e30)
    torch.testing.assert_close(out, expect)


@pytest.mark.parametrize("start,stop,step", [(0, 9, 1), (1, 10, 3), (2, 2, 1), (3, 17, 5)])
def test_strided_sum_over_runtime_bounds(start, stop, step):
    cols = 13
    x = torch.randn(max(stop, 1), cols)
    out = torch.full((1, cols), float("nan"))
    StridedSum(cols)(start, stop, step, x, out)
    expect = x[start:stop:step].sum(0, keepdim=True)
    torch.testing.assert_close(out, expect, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n,reps", [(6, 1), (7, 2), (1, 0)])
def test_branches_and_nested_loops_carry_the_tile(n, reps):
    cols = 11
    x = torch.randn(n, cols)
    out = torch.full((1, cols), float("nan"))
    Branches(cols)(n, reps, x, out)
    acc = torch.zeros(1, cols)
    for k in range(n):
        acc = acc + x[k:k + 1] if k % 2 == 0 else torch.maximum(acc, x[k:k + 1])
        acc = acc * 0.5 ** reps
    torch.testing.assert_close(out, acc)


def test_rebinding_to_another_shape_names_the_line():
    with pytest.raises(tilus.ScriptError) as info:
        ChangesType()(3, torch.zeros(4, 8))
    message = str(info.value)
    assert "acc = self.register_tensor(dtype=float32, shape=[4, 4], init=1.0)" in message
    assert "would change its type" in message


class LastPositive(tilus.Script):
    """out[0] = the last k < n with x[k] > 0, or -1: a scalar that a runtime branch may
    rebind. `declared`: the scalar starts as a runtime variable (`last: int32 = -1`);
    otherwise it starts as the Python value -1, which the branch cannot rebind."""

    def __init__(self, declared):
        super().__init__()
        self.declared = declared

    def __call__(self, n: int32, x_ptr: ~float32, out_ptr: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[n])
        if self.declared:
            last: int32 = -1
        else:
            last = -1
        for k in range(n):
            if gx[k].item() > 0.0:
                last = k
        out = self.register_tensor(dtype=int32, shape=[1], init=last)
        self.store_global(self.global_view(out_ptr, dtype=int32, shape=[1]), out, offsets=[0])


@pytest.mark.parametrize("values", [[-1.0, 2.0, -3.0], [-1.0, -2.0], [4.0, 5.0, 6.0, -1.0, 2.0]])
def test_a_scalar_declared_before_a_branch_keeps_its_value_when_the_branch_does_not_run(values):
    x = torch.tensor(values)
    out = torch.full((1,), 99, dtype=torch.int32)
    LastPositive(declared=True)(len(values), x, out)
    expect = max((k for k, v in enumerate(values) if v > 0), default=-1)
    assert out.item() == expect


def test_a_compile_time_value_given_a_runtime_value_in_a_branch_is_refused_where_it_is_read():
    """After the loop the name would be the constant or the runtime value, depending on
    whether the branch ran: refused at the read, naming the assignment and the
    declaration to write."""
    with pytest.raises(tilus.ScriptError) as info:
        LastPositive(declared=False)(2, torch.tensor([1.0, -1.0]), torch.zeros(1, dtype=torch.int32))
    message = str(info.value)
    assert "init=last" in message  # the line shown is the read
    assert "'last' held the compile-time value -1 before the runtime for loop" in message
    assert "(`last = k`)" in message and "`last: int32 = -1`" in message
