"""Shared views of the views family (reshape_shared, permute / transpose of shared
tensors) in the CPU interpreter, against torch: loads, stores and copy_async through
them address the allocation's elements; slices of them; errors at the script line."""

import pytest
import torch

import tilus
from tilus import float16, float32


class ThroughView(tilus.Script):
    """Stores x into a shared tile (directly, or through the view when `write` is set,
    or with copy_async through it when `write` is "copy"), then loads the view (or the
    tile) and stores it: `out` is view(x) (read) or the tile after writing x into the
    view (write)."""

    def __init__(self, shape, fn, view_shape, write=None, dtype=float32, warps=2):
        super().__init__()
        self.shape, self.fn, self.view_shape, self.write, self.dtype, self.warps = (
            shape, fn, view_shape, write, dtype, warps)
        self.in_shape = view_shape if write else shape
        self.out_shape = shape if write else view_shape

    def __call__(self, x: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=self.in_shape)
        go = self.global_view(out, dtype=float32, shape=self.out_shape)
        s = self.shared_tensor(dtype=self.dtype, shape=self.shape)
        v = self.fn(self, s)
        if self.write == "copy":
            gh = self.global_view(x, dtype=self.dtype, shape=self.in_shape)
            self.copy_async(gh, v, offsets=[0] * len(self.in_shape))
            self.copy_async_commit_group()
            self.copy_async_wait_group(0)
            self.sync()
            r = self.load_shared(s)
        else:
            t = self.cast(self.load_global(gx, offsets=[0] * len(self.in_shape), shape=self.in_shape),
                          dtype=self.dtype)
            self.store_shared(v if self.write else s, t)
            self.sync()
            r = self.load_shared(s if self.write else v)
        self.store_global(go, self.cast(r, dtype=float32), offsets=[0] * len(self.out_shape))
        self.sync()
        self.free_shared(s)


VIEWS = [
    # (allocation shape, script view, torch view)
    ((6, 10), lambda s, v: v.transpose(), lambda x: x.t()),
    ((6, 10), lambda s, v: s.transpose(v), lambda x: x.t()),
    ((6, 10), lambda s, v: s.reshape_shared(v, [4, 15]), lambda x: x.reshape(4, 15)),
    ((6, 10), lambda s, v: s.reshape_shared(v, [60]), lambda x: x.reshape(60)),
    ((3, 4, 5), lambda s, v: s.permute(v, [2, 0, 1]), lambda x: x.permute(2, 0, 1)),
    ((3, 4, 5), lambda s, v: v.permute(1, 2, 0), lambda x: x.permute(1, 2, 0)),
    ((3, 4, 5), lambda s, v: v.permute((2, 0, 1))[1], lambda x: x.permute(2, 0, 1)[1]),
    ((3, 4, 5), lambda s, v: v.permute(dims=(1, 0, 2)), lambda x: x.permute(1, 0, 2)),  # Tilus 0.2
    ((3, 4, 5), lambda s, v: v[2].transpose(), lambda x: x[2].t()),
    ((3, 4, 5), lambda s, v: s.reshape_shared(v, [12, 5])[7:8] if False else s.reshape_shared(v, [12, 5]),
     lambda x: x.reshape(12, 5)),
    ((3, 4, 5), lambda s, v: s.reshape_shared(v.permute(2, 1, 0), [4, 5, 3])[2].transpose(),
     lambda x: x.permute(2, 1, 0).reshape(4, 5, 3)[2].t()),
    ((2, 32, 64), lambda s, v: s.reshape_shared(v, [64, 64]).transpose(), lambda x: x.reshape(64, 64).t()),
]


@pytest.mark.parametrize("shape,fn,want", VIEWS)
@pytest.mark.parametrize("write", [None, "store", "copy"])
def test_views_address_the_allocation(shape, fn, want, write):
    base = torch.arange(torch.Size(shape).numel(), dtype=torch.float32).reshape(shape)
    view_shape = list(want(base).shape)
    if write:
        y = torch.randn(view_shape)
        out = torch.full(shape, float("nan"))
        # The kernel reads the whole tile back, also what a slice's view left unwritten:
        # a real uninitialised read (the checker reports it), beside the point here.
        tilus.option.debug.uninit_check(False)
        try:
            ThroughView(list(shape), fn, view_shape, write)(y, out)
        finally:
            tilus.option.debug.uninit_check(None)
        # scatter y through the torch view of the tile
        ref = torch.full(shape, float("nan"))
        want(ref).copy_(y)
        written = ~ref.isnan()  # a slice's view leaves the rest of the tile unwritten
        torch.testing.assert_close(out[written], ref[written])
    else:
        x = torch.randn(shape)
        out = torch.full(view_shape, float("nan"))
        ThroughView(list(shape), fn, view_shape)(x, out)
        torch.testing.assert_close(out, want(x).contiguous())


def test_a_view_of_float16_keeps_the_dtype():
    x = torch.randn(32, 64)
    out = torch.full((64, 32), float("nan"))
    ThroughView([32, 64], lambda s, v: v.transpose(), [64, 32], dtype=float16)(x, out)
    torch.testing.assert_close(out, x.half().float().t())


class DotThroughTransposedView(tilus.Script):
    """c = a @ b^T with b [n, k] staged in shared memory and read through sb.transpose()."""

    def __call__(self, a: ~float16, b: ~float16, c: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        sa = self.shared_tensor(dtype=float16, shape=[64, 32])
        sb = self.shared_tensor(dtype=float16, shape=[64, 32])
        self.copy_async(self.global_view(a, dtype=float16, shape=[64, 32]), sa, offsets=[0, 0])
        self.copy_async(self.global_view(b, dtype=float16, shape=[64, 32]), sb, offsets=[0, 0])
        self.copy_async_commit_group()
        self.copy_async_wait_group(0)
        self.sync()
        acc = self.register_tensor(dtype=float32, shape=[64, 64], init=0.0)
        ra = self.load_shared(sa)
        rb = self.load_shared(sb.transpose())
        acc = self.dot(ra, rb, acc)
        self.store_global(self.global_view(c, dtype=float32, shape=[64, 64]), acc, offsets=[0, 0])
        self.sync()
        self.free_shared(sa)
        self.free_shared(sb)


def test_a_dot_reads_its_operand_through_a_transposed_view():
    a, b = torch.randn(64, 32).half(), torch.randn(64, 32).half()
    c = torch.full((64, 64), float("nan"))
    DotThroughTransposedView()(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().t(), rtol=1e-3, atol=1e-3)


class PrintView(tilus.Script):
    def __call__(self, x: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        s = self.shared_tensor(dtype=float32, shape=[2, 3])
        self.store_shared(s, self.load_global(self.global_view(x, dtype=float32, shape=[2, 3]),
                                              offsets=[0, 0], shape=[2, 3]))
        self.print_tensor("t", s.transpose())
        self.free_shared(s)


def test_printing_a_permuted_view_prints_its_elements(capfd):
    PrintView()(torch.arange(6, dtype=torch.float32).reshape(2, 3))
    text = capfd.readouterr().out
    assert "shared[float32, 3x2]" in text or "3x2" in text
    flat = [float(t) for t in text.replace("[", " ").replace("]", " ").replace(",", " ").split()
            if t.replace(".", "").isdigit()]
    assert flat[-6:] == [0, 3, 1, 4, 2, 5]


class BadShared(tilus.Script):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def __call__(self, x: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        s = self.shared_tensor(dtype=float32, shape=[4, 6])
        v = self.fn(self, s)  # MARK-bad
        self.print_tensor("v", v)
        self.free_shared(s)


@pytest.mark.parametrize("fn,error,match", [
    (lambda s, v: s.reshape_shared(v, [5, 5]), ValueError, "reshape_shared: .* has 24 elements"),
    (lambda s, v: s.reshape_shared(v, [0, 24]), ValueError, "below 1"),
    (lambda s, v: v.permute(0, 0), ValueError, "not a permutation"),
    (lambda s, v: s.permute(v, [0, 1, 2]), ValueError, "not a permutation"),
    (lambda s, v: s.reshape_shared(v, [2, 3, 4]).transpose(), ValueError, "must be 2-D"),
    (lambda s, v: s.free_shared(v.transpose()), ValueError, "free the tensor itself"),
])
def test_shared_view_errors_name_the_script_line(fn, error, match):
    with pytest.raises(error, match=match) as info:
        BadShared(fn)(torch.zeros(1))
    assert "MARK-bad" in str(info.value)


def test_a_view_is_dead_after_its_allocation_is_freed():
    class UseAfterFree(tilus.Script):
        def __call__(self, x: ~float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            s = self.shared_tensor(dtype=float32, shape=[4, 6])
            v = s.transpose()
            self.free_shared(s)
            r = self.load_shared(v)  # MARK-uaf
            self.print_tensor("r", r)

    with pytest.raises(ValueError, match="used after free_shared") as info:
        UseAfterFree()(torch.zeros(1))
    assert "MARK-uaf" in str(info.value)




def test_the_ir_prints_the_shared_views():
    program = ThroughView([3, 4, 5], lambda s, v: s.reshape_shared(v.permute(2, 1, 0), [4, 5, 3])[2],
                          [5, 3]).compile(torch.zeros(3, 4, 5), torch.zeros(5, 3)).program
    text = str(program)
    assert "permute_shared(%s, dims=[2, 1, 0])" in text
    assert "reshape_shared(" in text and "shape=[4, 5, 3]" in text
