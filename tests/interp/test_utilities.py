"""Kernel utilities in the interpreter (issue 12): printf, assume, static_assert,
fast_divmod, gridDim, the thread range, annotate_layout, register_tensor(init=f) and
tilus.Class helpers; each error path names the script line."""

import pytest
import torch

import tilus
from tilus import boolean, float32, int32


class PrintfKernel(tilus.Script):
    def __call__(self, n: int32, x: float32):
        self.attrs.blocks = [2, 1]
        self.attrs.warps = 2
        bx, by, bz = self.blockIdx
        self.printf("b=%d/%d n=%05d x=%.3f %s 100%%\n", bx, self.gridDim.x, n, x, "tag")


def test_printf_prints_once_per_block(capfd):
    PrintfKernel()(42, 1.25)
    out = capfd.readouterr().out.splitlines()
    assert out == ["b=0/2 n=00042 x=1.250 tag 100%", "b=1/2 n=00042 x=1.250 tag 100%"]


class PrintfBad(tilus.Script):
    def __init__(self, which):
        super().__init__()
        self.which = which

    def __call__(self, n: int32, x: float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        if self.which == 0:
            self.printf("%d %d\n", n)
        elif self.which == 1:
            self.printf("%d\n", x)
        else:
            self.printf("%s\n", n)


@pytest.mark.parametrize("which,kind,text", [(0, ValueError, "more conversions"),
                                             (1, TypeError, "takes an integer"),
                                             (2, TypeError, "compile-time value")])
def test_printf_errors_name_the_line(which, kind, text):
    with pytest.raises(kind) as info:
        PrintfBad(which)(1, 1.0)
    assert text in str(info.value) and "self.printf(" in str(info.value)


class Assume(tilus.Script):
    def __call__(self, n: int32, out: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        self.assume(n % 4 == 0)
        g = self.global_view(out, dtype=int32, shape=[1])
        self.store_global(g, self.register_tensor(dtype=int32, shape=[1], init=n), offsets=[0])


def test_assume_holds_and_a_false_one_fails_at_its_line():
    out = torch.zeros(1, dtype=torch.int32)
    Assume()(8, out)
    assert out.item() == 8
    with pytest.raises(ValueError) as info:
        Assume()(6, out)
    assert "self.assume(n % 4 == 0)" in str(info.value) and "is false" in str(info.value)


class StaticAssert(tilus.Script):
    def __init__(self, block):
        super().__init__()
        self.block = block

    def __call__(self, n: int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        self.static_assert(self.block % 16 == 0, "block must be a multiple of 16")
        self.static_assert(self.current_num_threads == 32, "one warp")


def test_static_assert():
    StaticAssert(32)(1)
    with pytest.raises(tilus.ScriptError) as info:
        StaticAssert(24)(1)
    assert "block must be a multiple of 16" in str(info.value)
    assert 'self.static_assert(self.block % 16 == 0' in str(info.value)


def _put(script, g, values):
    """Store scalar values into g[0..len) (one single-element tile each)."""
    for k, v in enumerate(values):
        script.store_global(g, script.register_tensor(dtype=int32, shape=[1], init=v), offsets=[k])


class DivMod(tilus.Script):
    def __call__(self, a_ptr: ~int32, b: int32, out: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        ga = self.global_view(a_ptr, dtype=int32, shape=[1])
        q, r = self.fast_divmod(ga[0], b)
        cq, cr = self.fast_divmod(17, 5)
        _put(self, self.global_view(out, dtype=int32, shape=[4]), [q, r, cq, cr])


@pytest.mark.parametrize("a,b", [(17, 5), (0, 3), (1000003, 97)])
def test_fast_divmod(a, b):
    out = torch.zeros(4, dtype=torch.int32)
    DivMod()(torch.tensor([a], dtype=torch.int32), b, out)
    assert out.tolist() == [a // b, a % b, 3, 2]


class Threads(tilus.Script):
    def __call__(self, m: int32, out: ~int32):
        self.attrs.blocks = [m, 2]
        self.attrs.warps = 4
        g = self.global_view(out, dtype=int32, shape=[m * 2 * 5])
        base = (self.blockIdx.x * 2 + self.blockIdx.y) * 5
        grid = self.gridDim
        for k, v in enumerate([grid.x, grid.y, grid.z, self.current_thread_begin,
                               self.current_thread_end]):
            self.store_global(g, self.register_tensor(dtype=int32, shape=[1], init=v),
                              offsets=[base + k])


def test_grid_dim_and_thread_range():
    out = torch.full((3 * 2 * 5,), -1, dtype=torch.int32)
    Threads()(3, out)
    assert (out.reshape(6, 5) == torch.tensor([3, 2, 1, 0, 128], dtype=torch.int32)).all()


class GridBeforeBlocks(tilus.Script):
    def __call__(self, n: int32):
        x = self.gridDim.x
        self.attrs.blocks = [1]
        self.attrs.warps = 1


def test_grid_dim_before_blocks_is_an_error():
    with pytest.raises(ValueError) as info:
        GridBeforeBlocks()(1)
    assert "x = self.gridDim.x" in str(info.value)


class InitByIndex(tilus.Script):
    def __init__(self, m, n, layout=None):
        super().__init__()
        self.m, self.n, self.layout = m, n, layout

    def __call__(self, q_offset: int32, kv_offset: int32, mask_ptr: ~boolean, val_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 2
        mask = self.register_tensor(dtype=boolean, shape=[self.m, self.n],
                                    init=lambda i, j: i + q_offset >= j + kv_offset)
        val = self.register_tensor(dtype=float32, shape=[self.m, self.n],
                                   init=lambda i, j: i * 100 + j)
        if self.layout is not None:
            self.annotate_layout(val, self.layout)
        self.store_global(self.global_view(mask_ptr, dtype=boolean, shape=[self.m, self.n]),
                          mask, offsets=[0, 0])
        self.store_global(self.global_view(val_ptr, dtype=float32, shape=[self.m, self.n]),
                          val, offsets=[0, 0])


@pytest.mark.parametrize("m,n,qo,ko", [(7, 13, 0, 0), (16, 16, 3, 5), (5, 64, 10, 2)])
def test_register_tensor_init_by_index(m, n, qo, ko):
    mask = torch.zeros(m, n, dtype=torch.bool)
    val = torch.zeros(m, n)
    InitByIndex(m, n)(qo, ko, mask, val)
    i = torch.arange(m)[:, None]
    j = torch.arange(n)[None, :]
    assert torch.equal(mask, i + qo >= j + ko)
    torch.testing.assert_close(val, (i * 100 + j).float().expand(m, n))


def test_annotate_layout_is_kept_and_checked():
    from tilus.layout import local, spatial

    layout = spatial(8, 8).local(2, 2)      # 16 x 16 over 64 threads
    val = torch.zeros(16, 16)
    kernel = InitByIndex(16, 16, layout)
    kernel(0, 0, torch.zeros(16, 16, dtype=torch.bool), val)
    torch.testing.assert_close(val, (torch.arange(16)[:, None] * 100 + torch.arange(16)).float())
    with pytest.raises(ValueError) as info:
        InitByIndex(16, 16, local(4, 4))(0, 0, torch.zeros(16, 16, dtype=torch.bool), val)
    assert "self.annotate_layout(val, self.layout)" in str(info.value)


class Pipeline(tilus.Class):
    def __init__(self, num_stages: int):
        self.num_stages = num_stages
        self.stage: int32 = 0
        self.phase: int32 = 0

    def advance(self):
        self.stage = (self.stage + 1) % self.num_stages
        if self.stage == 0:
            self.phase += 1


class UsesClass(tilus.Script):
    def __call__(self, n: int32, out: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        pipe = Pipeline(num_stages=3)
        for k in range(n):
            pipe.advance()
        v = self.register_tensor(dtype=int32, shape=[2],
                                 init=lambda i: (i == 0) * pipe.stage + (i == 1) * pipe.phase)
        self.store_global(self.global_view(out, dtype=int32, shape=[2]), v, offsets=[0])


@pytest.mark.parametrize("n", [0, 1, 5, 9])
def test_class_members_are_runtime_variables(n):
    out = torch.full((2,), -1, dtype=torch.int32)
    UsesClass()(n, out)
    assert out.tolist() == [n % 3, n // 3]
