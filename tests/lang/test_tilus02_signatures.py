"""The existing instructions accept Tilus 0.2's spellings (issue 12): positional dtype in
cast, out= on loads and where, scalar where branches, lhs/rhs keywords, store_global's
dst=/src= keywords, positional semaphore values, acc_dtype, self.assign, unroll='all' —
and refuse the options tilus does not implement with a message naming them."""

import pytest
import torch

import tilus
from tilus import float16, float32, int32
from tilus.lang.errors import ScriptError


class Tilus02Spellings(tilus.Script):
    def __call__(self, n: int32, a: ~float32, b: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        ga = self.global_view(a, dtype=float32, shape=[n])
        gb = self.global_view(b, dtype=float32, shape=[n])
        r = self.register_tensor(dtype=float32, shape=[37], init=0.0)
        self.load_global(ga, offsets=[0], shape=[37], out=r)
        c = self.cast(r, float32)
        kept = self.where(c > 1.0, c, 0.0)
        flipped = self.where(condition=c > 1.0, x=-1.0, y=c)
        total = self.add(lhs=kept, rhs=flipped)
        self.maximum(total, total, total)  # Tilus 0.2's positional out
        self.assign(r, total)
        for i in self.range(0, 4, 1, unroll="all"):
            r = r + 1.0
        self.store_global(dst=gb, src=r, offsets=[0])


def test_tilus02_spellings_compute_what_torch_does():
    a = torch.rand(37) * 2
    b = torch.full((37,), float("nan"))
    Tilus02Spellings()(37, a, b)
    expected = torch.where(a > 1, a, 0.0) + torch.where(a > 1, -1.0, a) + 4
    torch.testing.assert_close(b, expected)


class DotAccDtype(tilus.Script):
    def __call__(self, a: ~float16, b: ~float16, c: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        ga = self.global_view(a, dtype=float16, shape=[16, 16])
        gb = self.global_view(b, dtype=float16, shape=[16, 8])
        gc = self.global_view(c, dtype=float32, shape=[16, 8])
        x = self.load_global(ga, offsets=[0, 0], shape=[16, 16])
        y = self.load_global(gb, offsets=[0, 0], shape=[16, 8])
        self.store_global(gc, self.dot(x, y, acc_dtype=float32), offsets=[0, 0])


def test_dot_acc_dtype():
    a, b = torch.rand(16, 16).half(), torch.rand(16, 8).half()
    c = torch.full((16, 8), float("nan"))
    DotAccDtype()(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


class UnsupportedOption(tilus.Script):
    def __init__(self, which):
        super().__init__()
        self.which = which

    def __call__(self, a: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        ga = self.global_view(a, dtype=float32, shape=[32])
        s = self.shared_tensor(dtype=float32, shape=[32])
        r = self.load_global(ga, offsets=[0], shape=[32])
        if self.which == "store_shared":
            self.store_shared(s, r, offsets=[0])
        elif self.which == "print":
            self.print_tensor("r", r, fmt="%.2f")
        elif self.which == "evict":
            self.copy_async(ga, s, offsets=[0], evict="evict_sometimes")
        elif self.which == "unroll":
            for i in self.range(0, a.shape[0] if False else 4, 1, unroll="every"):
                pass


@pytest.mark.parametrize("which,message", [
    ("store_shared", "store_shared: offsets= and dims="),
    ("print", "print_tensor: fmt= is not supported"),
    ("evict", "copy_async: evict must be one of"),
    ("unroll", "unroll must be a non-negative int or 'all'"),
])
def test_unsupported_options_are_refused_by_name(which, message):
    with pytest.raises((ScriptError, NotImplementedError, ValueError)) as info:
        UnsupportedOption(which)(torch.zeros(32))
    assert message in str(info.value)


class UnrollAllRuntime(tilus.Script):
    def __call__(self, n: int32, a: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        for i in self.range(0, n, 1, unroll="all"):
            pass


def test_unroll_all_needs_compile_time_bounds():
    with pytest.raises((ScriptError, ValueError)) as info:
        UnrollAllRuntime()(4, torch.zeros(4))
    assert "unroll='all' needs compile-time integer bounds" in str(info.value)


class AttrsZeroAndBarrierList(tilus.Script):
    """Tilus 0.2 spellings: reading self.attrs.warps back, float32.zero as an init value, and
    unpacking the barriers of one alloc with .tolist()."""

    def __call__(self, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 2
        first, second = self.mbarrier.alloc(counts=[self.attrs.warps * 32, 1]).tolist()
        self.mbarrier.arrive(first)
        self.mbarrier.wait(first, phase=0)
        with self.single_thread():
            self.mbarrier.arrive(second)
        self.mbarrier.wait(second, phase=0)
        acc = self.register_tensor(dtype=float32, shape=[8], init=lambda i: float32.zero)
        acc = acc + float32.one * self.attrs.warps
        self.store_global(self.global_view(out, dtype=float32, shape=[8]), acc, offsets=[0])


def test_attrs_reads_dtype_constants_and_barrier_lists():
    out = torch.full((8,), float("nan"))
    AttrsZeroAndBarrierList()(out)
    torch.testing.assert_close(out, torch.full((8,), 2.0))
    assert float32.zero.dtype == float32 and float32.zero.value == 0.0
    assert tilus.int8.one.dtype == tilus.int8 and tilus.int8.one.value == 1


class ReadsWarpsTooEarly(tilus.Script):
    def __call__(self, out: ~float32):
        self.attrs.blocks = 1
        threads = self.attrs.warps * 32
        self.attrs.warps = 1


def test_reading_an_attribute_before_it_is_set_names_the_line():
    with pytest.raises(ScriptError, match="self.attrs.warps is read before the script sets it") as info:
        ReadsWarpsTooEarly()(torch.zeros(8))
    assert "threads = self.attrs.warps * 32" in str(info.value)
