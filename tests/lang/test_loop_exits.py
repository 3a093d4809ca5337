"""`break` and `continue` act on the loop they are written in, also when that loop is a
Python loop unrolled at compile time (`for j in [0, 1, 2]`) nested in a runtime loop,
and also when the condition that leaves it is only known at run time."""

import pytest
import torch

import tilus
from tilus import float32, int32


def _run(kernel, *args):
    out = torch.full((1,), -1, dtype=torch.int32)
    kernel(*args, out)
    return int(out[0])


class _Counting(tilus.Script):
    """Each subclass counts, in `count`, how often the innermost statement ran."""

    def finish(self, count, out):
        g = self.global_view(out, dtype=int32, shape=[1])
        self.store_global(g, self.register_tensor(dtype=int32, shape=[1], init=count), offsets=[0])


class CompileTimeBreak(_Counting):
    def __call__(self, n: int32, lim: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        count: int32 = 0
        for i in range(n):
            for j in [0, 1, 2, 3]:
                if j == 2:  # known while unrolling: the unrolling stops here
                    break
                count = count + 1
            count = count + 100
        self.finish(count, out)


class CompileTimeContinue(_Counting):
    def __call__(self, n: int32, lim: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        count: int32 = 0
        for i in range(n):
            for j in [0, 1, 2]:
                if j == 1:
                    continue
                count = count + 10 ** j
            count = count + 1000
        self.finish(count, out)


class RuntimeBreak(_Counting):
    def __call__(self, n: int32, lim: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        count: int32 = 0
        for i in range(n):
            for j in [0, 1, 2, 3]:
                count = count + 1
                if i + j >= lim:
                    break
                count = count + 10
            count = count + 1000
        self.finish(count, out)


def _runtime_break(n, lim):
    count = 0
    for i in range(n):
        for j in [0, 1, 2, 3]:
            count += 1
            if i + j >= lim:
                break
            count += 10
        count += 1000
    return count


class RuntimeContinue(_Counting):
    def __call__(self, n: int32, lim: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        count: int32 = 0
        for i in range(n):
            for j in [0, 1, 2, 3]:
                if (i + j) % lim == 0:
                    if j > 0:  # compile-time test nested in the runtime one
                        continue
                count = count + 10 ** j
            count = count + 10000
        self.finish(count, out)


def _runtime_continue(n, lim):
    count = 0
    for i in range(n):
        for j in [0, 1, 2, 3]:
            if (i + j) % lim == 0:
                if j > 0:
                    continue
            count += 10 ** j
        count += 10000
    return count


class BreakAndContinueWithoutRuntimeLoop(_Counting):
    def __call__(self, n: int32, lim: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        count: int32 = 0
        for j in [0, 1, 2, 3, 4, 5]:
            if j == n:
                continue
            if j >= lim:
                break
            count = count + 10 ** j
            if j == 4:
                break
        self.finish(count, out)


def _without_runtime_loop(n, lim):
    count = 0
    for j in [0, 1, 2, 3, 4, 5]:
        if j == n:
            continue
        if j >= lim:
            break
        count += 10 ** j
        if j == 4:
            break
    return count


class InnerRuntimeLoop(_Counting):
    """A break in a runtime loop nested in a compile-time loop leaves the runtime loop only."""

    def __call__(self, n: int32, lim: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        count: int32 = 0
        for j in [0, 1, 2]:
            for i in range(n):
                if i >= lim:
                    break
                count = count + 1
            count = count + 100
        self.finish(count, out)


def test_compile_time_break_stops_the_unrolling_not_the_runtime_loop():
    assert _run(CompileTimeBreak(), 3, 0) == 3 * (2 + 100)


def test_compile_time_continue_skips_one_unrolled_iteration():
    assert _run(CompileTimeContinue(), 3, 0) == 3 * (1 + 100 + 1000)


@pytest.mark.parametrize("n,lim", [(0, 0), (1, 0), (5, 2), (6, 4), (3, 9)])
def test_runtime_break_in_an_unrolled_loop_leaves_only_that_loop(n, lim):
    assert _run(RuntimeBreak(), n, lim) == _runtime_break(n, lim)


@pytest.mark.parametrize("n,lim", [(4, 2), (5, 3), (3, 1)])
def test_runtime_continue_in_an_unrolled_loop_skips_one_iteration(n, lim):
    assert _run(RuntimeContinue(), n, lim) == _runtime_continue(n, lim)


@pytest.mark.parametrize("n,lim", [(9, 9), (2, 9), (2, 3), (0, 1), (7, 0)])
def test_exits_of_an_unrolled_loop_outside_any_runtime_loop(n, lim):
    assert _run(BreakAndContinueWithoutRuntimeLoop(), n, lim) == _without_runtime_loop(n, lim)


def test_break_in_a_runtime_loop_inside_an_unrolled_loop():
    assert _run(InnerRuntimeLoop(), 5, 2) == 3 * (2 + 100)


def test_compile_time_exits_leave_no_trace_in_the_ir():
    ir = CompileTimeBreak().ir(3, 0, torch.zeros(1, dtype=torch.int32))
    body = ir.split("{", 1)[1]
    assert "break\n" not in body and "continue\n" not in body and "unrolled_break = true" not in body
    assert ir.count("count = (count + 1)") == 2


def test_a_runtime_exit_of_an_unrolled_loop_is_a_flag_not_a_break():
    ir = RuntimeBreak().ir(3, 0, torch.zeros(1, dtype=torch.int32))
    assert "    break\n" not in ir and "unrolled_break = true" in ir


class TileRows(tilus.Script):
    """Sums rows of x into a tile until a row's first element is negative (a runtime
    break in an unrolled loop), in each of `n` runtime iterations."""

    def __call__(self, n: int32, x: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float32, shape=[4, 8])
        acc = self.register_tensor(dtype=float32, shape=[1, 8], init=0.0)
        for i in range(n):
            for r in [0, 1, 2, 3]:
                if gx[r, 0] < 0.0:
                    break
                row = self.load_global(gx, offsets=[r, 0], shape=[1, 8])
                acc = acc + row
        self.store_global(self.global_view(out, dtype=float32, shape=[1, 8]), acc, offsets=[0, 0])


def test_tiles_after_a_runtime_break_of_an_unrolled_loop():
    x = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    x[2, 0] = -1.0
    out = torch.zeros(1, 8)
    TileRows()(3, x, out)
    torch.testing.assert_close(out[0], 3 * (x[0] + x[1]))


class LoopVariableNameReused(tilus.Script):
    """Tilus 0.2's Hopper matmul reuses the name of an ended runtime loop's variable as a
    plain variable in the next loop (`for stage in range(n)` then `stage = i % s`)."""

    def __call__(self, n: int32, lim: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        count: int32 = 0
        for stage in range(n):
            count = count + stage
        for i in range(n):
            stage = i % 2
            count = count + 10 * stage
        g = self.global_view(out, dtype=int32, shape=[1])
        self.store_global(g, self.register_tensor(dtype=int32, shape=[1], init=count), offsets=[0])


class LoopVariableReadAfterTheLoop(_Counting):
    def __call__(self, n: int32, lim: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        for i in range(n):
            pass
        self.finish(i, out)


def test_an_ended_loop_variable_name_can_be_reassigned():
    n = 5
    assert _run(LoopVariableNameReused(), n, 0) == sum(range(n)) + 10 * sum(i % 2 for i in range(n))


def test_reading_an_ended_loop_variable_names_the_loop():
    from tilus.lang.errors import ScriptError
    with pytest.raises(ScriptError, match="'i' is the variable of the runtime loop at line \\d+, "
                                          "which has ended") as info:
        _run(LoopVariableReadAfterTheLoop(), 3, 0)
    assert "self.finish(i, out)" in str(info.value)
