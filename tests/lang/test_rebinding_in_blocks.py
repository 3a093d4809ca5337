"""A name holding a compile-time value (a Python int, a trace-time loop's target, None, a
view) may be given another value inside a runtime block: inside the block it has the new
value, an else branch sees the old one, and after the block the name is ambiguous (the
block may or may not have run), so only reading it there is refused, at the read,
naming the assignment. A runtime loop body that read the name before rebinding it is
refused at the assignment: its next iteration would read the new value where the traced
body used the old one. Checked in the interpreter."""

import pytest
import torch

import tilus
from tilus import float32, int32


class TraceLoopTargetReused(tilus.Script):
    """out = x, then out = x + 1 when n > 0: the trace-time loop's target `h` of the first
    loop is rebound by the second loop inside the runtime if."""

    def __init__(self):
        super().__init__()
        self.halves = [0, 1]

    def __call__(self, n: int32, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[32])
        go = self.global_view(out_ptr, dtype=float32, shape=[32])
        for h in self.halves:
            self.store_global(go, self.load_global(gx, offsets=[h * 16], shape=[16]), offsets=[h * 16])
        if n > 0:
            for h in self.halves:
                self.store_global(go, self.load_global(gx, offsets=[h * 16], shape=[16]) + 1.0,
                                  offsets=[h * 16])


@pytest.mark.parametrize("n", [0, 3])
def test_a_trace_loop_target_reused_inside_a_runtime_if(n):
    x = torch.randn(32)
    out = torch.full((32,), float("nan"))
    TraceLoopTargetReused()(n, x, out)
    torch.testing.assert_close(out, x + 1.0 if n > 0 else x)


class ElseSeesTheOldValue(tilus.Script):
    """scale is the Python 2.0; the if branch makes it 3.0 and the else keeps 2.0: out =
    x * 3 where n > 0, else x * 2 (the else branch must see the value from before the if)."""

    def __call__(self, n: int32, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[16])
        go = self.global_view(out_ptr, dtype=float32, shape=[16])
        x = self.load_global(gx, offsets=[0], shape=[16])
        scale = 2.0
        if n > 0:
            scale = 3.0
            self.store_global(go, x * scale, offsets=[0])
        else:
            self.store_global(go, x * scale, offsets=[0])
        scale = 5.0  # bound anew after the if: not ambiguous any more
        self.store_global(go, self.load_global(go, offsets=[0], shape=[16]) * scale, offsets=[0])


@pytest.mark.parametrize("n", [0, 1])
def test_an_else_branch_sees_the_value_from_before_the_if(n):
    x = torch.randn(16)
    out = torch.full((16,), float("nan"))
    ElseSeesTheOldValue()(n, x, out)
    torch.testing.assert_close(out, x * (3.0 if n > 0 else 2.0) * 5.0)


class ReadAfterTheIf(tilus.Script):
    def __init__(self, what):
        super().__init__()
        self.what = what

    def __call__(self, n: int32, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[16])
        go = self.global_view(out_ptr, dtype=float32, shape=[16])
        if self.what == "tile":
            acc = None
            if n > 0:
                acc = self.load_global(gx, offsets=[0], shape=[16])
            self.store_global(go, acc, offsets=[0])
        else:
            offset = 0
            if n > 0:
                offset = 8
            self.store_global(go, self.load_global(gx, offsets=[offset], shape=[8]), offsets=[0])


def test_a_compile_time_value_read_after_the_if_that_rebound_it_names_both_lines():
    with pytest.raises(tilus.ScriptError) as info:
        ReadAfterTheIf("offset")(1, torch.zeros(16), torch.zeros(16))
    message = str(info.value)
    assert "offsets=[offset]" in message  # shown at the read
    assert "'offset' held the compile-time value 0 before the runtime if" in message
    assert "(`offset = 8`)" in message and "`offset: int32 = 0`" in message


def test_a_tile_given_to_a_none_name_inside_an_if_and_read_after_it_is_refused_at_the_read():
    """Was an internal IR-verifier error; now the user's line and what to write instead."""
    with pytest.raises(tilus.ScriptError) as info:
        ReadAfterTheIf("tile")(1, torch.zeros(16), torch.zeros(16))
    message = str(info.value)
    assert type(info.value).__name__ == "ScriptNameError"
    assert "self.store_global(go, acc, offsets=[0])" in message
    assert "'acc' held the compile-time value None before the runtime if" in message
    assert "a register tile of the same shape and dtype" in message


class ReadThenRebindInALoop(tilus.Script):
    def __call__(self, n: int32, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[32])
        go = self.global_view(out_ptr, dtype=float32, shape=[32])
        offset = 0
        for k in range(n):
            self.store_global(go, self.load_global(gx, offsets=[offset], shape=[16]), offsets=[offset])
            offset = 16


def test_a_loop_that_reads_a_compile_time_value_before_rebinding_it_is_refused_at_the_assignment():
    with pytest.raises(tilus.ScriptError) as info:
        ReadThenRebindInALoop()(2, torch.zeros(32), torch.zeros(32))
    message = str(info.value)
    assert "offset = 16" in message
    assert "'offset' holds the compile-time value 0, which line" in message
    assert "the next iteration would read the new value" in message and "`offset: int32 = 0`" in message


class ViewRebound(tilus.Script):
    """s is the view sa[0]; a runtime if makes it sa[1]: reading s after the if would have
    read sa[1] whether or not the if ran."""

    def __call__(self, n: int32, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[2, 16])
        go = self.global_view(out_ptr, dtype=float32, shape=[16])
        sa = self.shared_tensor(dtype=float32, shape=[2, 16])
        self.store_shared(sa, self.load_global(gx, offsets=[0, 0], shape=[2, 16]))
        self.sync()
        s = sa[0]
        if n > 0:
            s = sa[1]
        self.store_global(go, self.load_shared(s), offsets=[0])
        self.free_shared(sa)


def test_a_view_rebound_inside_an_if_is_refused_where_it_is_read_after_it():
    with pytest.raises(tilus.ScriptError) as info:
        ViewRebound()(1, torch.zeros(2, 16), torch.zeros(16))
    message = str(info.value)
    assert "self.load_shared(s)" in message and "(`s = sa[1]`)" in message


class DeclaredInsideTheIf(tilus.Script):
    def __call__(self, n: int32, out_ptr: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        go = self.global_view(out_ptr, dtype=int32, shape=[1])
        x = 0
        if n > 0:
            x: int32 = n * 2
            self.store_global(go, self.register_tensor(dtype=int32, shape=[1], init=x), offsets=[0])
        self.store_global(go, self.register_tensor(dtype=int32, shape=[1], init=x), offsets=[0])


def test_a_variable_declared_inside_an_if_over_a_compile_time_name_is_ambiguous_after_it():
    with pytest.raises(tilus.ScriptError) as info:
        DeclaredInsideTheIf()(3, torch.zeros(1, dtype=torch.int32))
    assert "(`x: int32 = n * 2`)" in str(info.value)


class BothBranchesAgree(tilus.Script):
    """Both branches of the runtime if give `offset` the same Python value, so after the
    if it is that value (as in Python); `disagree` makes the else branch give another."""

    def __init__(self, disagree: bool):
        super().__init__()
        self.disagree = disagree

    def __call__(self, n: int32, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[16])
        go = self.global_view(out_ptr, dtype=float32, shape=[16])
        offset = 0
        if n > 0:
            offset = 8
        else:
            offset = 4 if self.disagree else 8
        self.store_global(go, self.load_global(gx, offsets=[offset], shape=[8]), offsets=[0])


@pytest.mark.parametrize("n", [0, 1])
def test_an_if_whose_branches_agree_leaves_the_value(n):
    x = torch.randn(16)
    out = torch.full((16,), float("nan"))
    BothBranchesAgree(disagree=False)(n, x, out)
    torch.testing.assert_close(out[:8], x[8:])


def test_an_if_whose_branches_disagree_leaves_the_name_ambiguous():
    with pytest.raises(tilus.ScriptError, match="'offset' held the compile-time value 0"):
        BothBranchesAgree(disagree=True)(1, torch.randn(16), torch.zeros(16))
