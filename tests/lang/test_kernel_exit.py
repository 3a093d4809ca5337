"""`return` under a runtime condition ends the kernel, as in Tilus 0.2: in `__call__`, in a
helper method it inlines (the caller's code after the call does not run either), inside
runtime loops (they stop) and inside Python loops unrolled at compile time (the later
iterations do not run). A helper's own top-level `return` still returns to its caller."""

import pytest
import torch

import tilus
from tilus import float32, int32
from tilus.lang.errors import ScriptError
from tilus.utils import cdiv

BLOCK = 16


class SkipsBlocksPastALimit(tilus.Script):
    """Blocks at or past `limit` end at once; the others copy their block of x to y."""

    def __call__(self, n: int32, limit: int32, x: ~float32, y: ~float32):
        self.attrs.blocks = cdiv(n, BLOCK)
        self.attrs.warps = 1
        if self.blockIdx.x >= limit:
            return
        gx = self.global_view(x, dtype=float32, shape=[n])
        gy = self.global_view(y, dtype=float32, shape=[n])
        offset = self.blockIdx.x * BLOCK
        self.store_global(gy, self.load_global(gx, offsets=[offset], shape=[BLOCK]) * 2.0,
                          offsets=[offset])


def test_a_return_under_a_runtime_if_ends_the_block():
    n, limit = 5 * BLOCK + 3, 3
    x = torch.randn(n)
    y = torch.full((n,), float("nan"))
    SkipsBlocksPastALimit()(n, limit, x, y)
    torch.testing.assert_close(y[:limit * BLOCK], x[:limit * BLOCK] * 2)
    assert y[limit * BLOCK:].isnan().all()  # the other blocks wrote nothing


class HelperEndsTheKernel(tilus.Script):
    """A helper that returns early for odd blocks: the store after the call is skipped
    for them too (the kernel ends), unlike a plain helper return."""

    def load_doubled(self, gx, acc, offset: int32):
        if self.blockIdx.x % 2 == 1:
            return
        self.assign(acc, self.load_global(gx, offsets=[offset], shape=[BLOCK]) * 2.0)
        return  # the helper's own return: back to the caller

    def __call__(self, n: int32, x: ~float32, y: ~float32):
        self.attrs.blocks = cdiv(n, BLOCK)
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float32, shape=[n])
        gy = self.global_view(y, dtype=float32, shape=[n])
        offset = self.blockIdx.x * BLOCK
        acc = self.register_tensor(dtype=float32, shape=[BLOCK], init=1.0)
        self.load_doubled(gx, acc, offset)
        self.store_global(gy, acc + 1.0, offsets=[offset])


def check_helper_exits(n, x, y):
    """What HelperEndsTheKernel leaves in y (CPU tensors): odd blocks nothing."""
    for b in range(cdiv(n, BLOCK)):
        part = slice(b * BLOCK, min(n, (b + 1) * BLOCK))
        if b % 2:
            assert y[part].isnan().all()
        else:
            torch.testing.assert_close(y[part], x[part] * 2 + 1)


def test_a_return_in_a_helper_ends_the_kernel_not_the_helper():
    n = 4 * BLOCK + 5
    x = torch.randn(n)
    y = torch.full((n,), float("nan"))
    HelperEndsTheKernel()(n, x, y)
    check_helper_exits(n, x, y)


class SumUntilNegative(tilus.Script):
    """out[b] = sum of row b, written only when the row has no negative value: the
    return inside the runtime loops (two deep) ends the block."""

    def __call__(self, rows: int32, cols: int32, x: ~float32, out: ~float32):
        self.attrs.blocks = rows
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float32, shape=[rows, cols])
        total: float32 = 0.0
        for i in range(cols // 4):
            for j in range(4):
                value = gx[self.blockIdx.x, i * 4 + j].item()
                if value < 0.0:
                    return
                total = total + value
            total = total + 0.0
        go = self.global_view(out, dtype=float32, shape=[rows])
        self.store_global(go, self.register_tensor(dtype=float32, shape=[1], init=total),
                          offsets=[self.blockIdx.x])


def check_sum_until_negative(rows, cols, negative, device="cpu"):
    """Runs SumUntilNegative with a negative value in each row of `negative`: those rows
    end their block, the others sum (shared with the GPU tests)."""
    x = torch.rand(rows, cols)
    for r in negative:
        x[r, torch.randint(0, cols, (1,))] = -1.0
    out = torch.full((rows,), float("nan"), device=device)
    SumUntilNegative()(rows, cols, x.to(device), out)
    out = out.cpu()
    for r in range(rows):
        if r in negative:
            assert out[r].isnan()
        else:
            torch.testing.assert_close(out[r], x[r].sum())


def test_a_return_inside_runtime_loops_ends_the_block():
    check_sum_until_negative(7, 12, [1, 4, 5])


class UnrolledStages(tilus.Script):
    """A Python loop over stages, unrolled: the stage whose flag is set ends the block, so
    the later stages' writes do not happen."""

    def __call__(self, flags: ~int32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gf = self.global_view(flags, dtype=int32, shape=[4])
        go = self.global_view(out, dtype=float32, shape=[4])
        for stage in [0, 1, 2, 3]:
            self.store_global(go, self.register_tensor(dtype=float32, shape=[1], init=stage + 1.0),
                              offsets=[stage])
            if gf[stage].item() != 0:
                return


def check_unrolled_stages(stop, device="cpu"):
    """Runs UnrolledStages with the flag of stage `stop` set (None: none): the stages up
    to it write, the later ones do not (shared with the GPU tests)."""
    flags = torch.zeros(4, dtype=torch.int32)
    if stop is not None:
        flags[stop] = 1
    out = torch.full((4,), float("nan"), device=device)
    UnrolledStages()(flags.to(device), out)
    out = out.cpu()
    written = 4 if stop is None else stop + 1
    torch.testing.assert_close(out[:written], torch.arange(1.0, written + 1))
    assert out[written:].isnan().all()


@pytest.mark.parametrize("stop", [0, 2, None])
def test_a_return_in_an_unrolled_loop_skips_the_later_iterations(stop):
    check_unrolled_stages(stop)


class CompileTimeRebindAfterExit(tilus.Script):
    """A compile-time value rebound after an early exit is not ambiguous: the code after
    the exit's guard runs only when the guard's body did."""

    def __call__(self, limit: int32, out: ~float32):
        self.attrs.blocks = 2
        self.attrs.warps = 1
        scale = 1.0
        if self.blockIdx.x >= limit:
            return
        scale = 3.0
        go = self.global_view(out, dtype=float32, shape=[2])
        self.store_global(go, self.register_tensor(dtype=float32, shape=[1], init=scale),
                          offsets=[self.blockIdx.x])


def test_compile_time_values_rebound_after_an_exit():
    out = torch.full((2,), float("nan"))
    CompileTimeRebindAfterExit()(1, out)
    assert out[0] == 3.0 and out[1].isnan()


class ReturnsAValueUnderACondition(tilus.Script):
    def pick(self, a: int32):
        if a > 0:
            return a
        return 0

    def __call__(self, a: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        self.pick(a)


class ReturnsInAThreadGroup(tilus.Script):
    def __call__(self, a: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 2
        with self.thread_group(0, 32):
            if a > 0:
                return


class HelperExitsThenReturnsATile(tilus.Script):
    def helper(self, a: int32):
        if a > 0:
            return
        return self.register_tensor(dtype=int32, shape=[1], init=a)

    def __call__(self, a: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        self.helper(a)


@pytest.mark.parametrize("script,message,line", [
    (ReturnsAValueUnderACondition, "cannot return a value", "return a"),
    (ReturnsInAThreadGroup, "inside a thread group", "return"),
    (HelperExitsThenReturnsATile, "cannot also return a runtime value", "return self.register_tensor"),
])
def test_returns_that_cannot_end_the_kernel_are_refused_at_their_line(script, message, line):
    with pytest.raises(ScriptError, match=message) as info:
        script()(1, torch.zeros(1, dtype=torch.int32))
    assert line in str(info.value)


class WorkspaceAfterAnExit(tilus.Script):
    """Tilus 0.2's split-KV attention sizes a workspace by a variable declared after a
    helper may have ended the kernel: the host still evaluates it before the launch."""

    def __call__(self, n: int32, limit: int32, x: ~float32, y: ~float32):
        self.attrs.blocks = cdiv(n, BLOCK)
        self.attrs.warps = 1
        if self.blockIdx.x >= limit:
            return
        num_blocks = cdiv(n, BLOCK)
        scratch = self.global_tensor(dtype=float32, shape=[num_blocks, BLOCK], requires_clean=False)
        gx = self.global_view(x, dtype=float32, shape=[n])
        offset = self.blockIdx.x * BLOCK
        self.store_global(scratch, self.load_global(gx, offsets=[offset], shape=[BLOCK]) + 1.0,
                          offsets=[self.blockIdx.x, 0], dims=[1])
        again = self.load_global(scratch, offsets=[self.blockIdx.x, 0], shape=[BLOCK], dims=[1])
        self.store_global(self.global_view(y, dtype=float32, shape=[n]), again, offsets=[offset])


def test_a_workspace_sized_after_an_exit():
    n, limit = 5 * BLOCK + 3, 2
    x = torch.randn(n)
    y = torch.full((n,), float("nan"))
    WorkspaceAfterAnExit()(n, limit, x, y)
    torch.testing.assert_close(y[:limit * BLOCK], x[:limit * BLOCK] + 1)
    assert y[limit * BLOCK:].isnan().all()


class HelperReturnsFromAnUnrolledLoop(tilus.Script):
    """A helper whose unrolled loop may end the kernel in one iteration (a runtime
    condition) and returns to its caller in a later one (a compile-time condition): the
    later iterations run under the exit's guard, which the return leaves."""

    def count_until(self, limit: int32, acc):
        for i in [0, 1, 2, 3]:
            if i == 2:
                return
            if limit <= i:
                return
            self.assign(acc, acc + 1.0)

    def __call__(self, limit: int32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        acc = self.register_tensor(dtype=float32, shape=[1], init=0.0)
        self.count_until(limit, acc)
        self.store_global(self.global_view(out, dtype=float32, shape=[1]), acc + 10.0, offsets=[0])


@pytest.mark.parametrize("limit,expected", [(0, None), (1, None), (5, 12.0)])
def test_a_helper_return_from_an_iteration_after_an_exit(limit, expected):
    out = torch.full((1,), float("nan"))
    HelperReturnsFromAnUnrolledLoop()(limit, out)
    if expected is None:
        assert out.isnan().all()  # the kernel ended in iteration `limit`
    else:
        assert out.item() == expected
