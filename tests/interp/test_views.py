"""Register shape changes (view, reshape, squeeze, unsqueeze, flatten, transpose,
permute, repeat, repeat_interleave) in the CPU interpreter, against torch at odd shapes;
their errors name the script line."""

import pytest
import torch

import tilus
from tilus import float16, float32, int16, int32, uint8
from tilus.layout import local, spatial


class Apply(tilus.Script):
    """out = fn(self, load(x)) for one tile; fn is Python run while transpiling."""

    def __init__(self, shape, fn, out_shape, dtype=float32, warps=2):
        super().__init__()
        self.shape, self.fn, self.out_shape, self.dtype, self.warps = shape, fn, out_shape, dtype, warps

    def __call__(self, x: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=self.shape)
        go = self.global_view(out, dtype=float32, shape=self.out_shape)
        t = self.cast(self.load_global(gx, offsets=[0] * len(self.shape), shape=self.shape), dtype=self.dtype)
        y = self.fn(self, t)
        self.store_global(go, self.cast(y, dtype=float32), offsets=[0] * len(self.out_shape))


def run(shape, fn, out_shape, dtype=float32, warps=2, x=None):
    x = torch.randn(*shape) if x is None else x
    out = torch.full(out_shape, float("nan"))
    Apply(list(shape), fn, list(out_shape), dtype, warps)(x, out)
    return x, out


CASES = [
    # (input shape, script fn, torch fn)
    ((5, 7), lambda s, t: s.transpose(t), lambda x: x.t()),
    ((5, 7), lambda s, t: t.transpose(), lambda x: x.t()),
    ((5, 7), lambda s, t: s.permute(t, [1, 0]), lambda x: x.permute(1, 0)),
    ((3, 5, 7), lambda s, t: s.permute(t, [2, 0, 1]), lambda x: x.permute(2, 0, 1)),
    ((3, 5, 7), lambda s, t: t.permute(1, -1, 0), lambda x: x.permute(1, 2, 0)),
    ((6, 10), lambda s, t: s.reshape(t, [4, 15]), lambda x: x.reshape(4, 15)),
    ((6, 10), lambda s, t: s.reshape(t, shape=[3, -1, 5]), lambda x: x.reshape(3, 4, 5)),
    ((13, 33), lambda s, t: s.flatten(t), lambda x: x.flatten()),
    ((1, 33), lambda s, t: s.squeeze(t, dim=0), lambda x: x.squeeze(0)),
    ((7, 1), lambda s, t: t.squeeze(-1), lambda x: x.squeeze(-1)),
    ((1, 9, 1), lambda s, t: s.squeeze(t, dim=[0, 2]), lambda x: x.squeeze(0).squeeze(1)),
    ((9, 5), lambda s, t: s.unsqueeze(t, dim=1), lambda x: x.unsqueeze(1)),
    ((9, 5), lambda s, t: t.unsqueeze([0, 3]), lambda x: x.unsqueeze(0).unsqueeze(3)),
    ((9, 5), lambda s, t: s.unsqueeze(t, dim=-1), lambda x: x.unsqueeze(-1)),
    ((3, 5), lambda s, t: s.repeat(t, [2, 3]), lambda x: x.repeat(2, 3)),
    ((3, 5), lambda s, t: s.repeat(t, [4]), lambda x: x.repeat(1, 4)),
    ((3, 5), lambda s, t: s.repeat(t, [2, 1, 3]), lambda x: x.repeat(2, 1, 3)),
    ((3, 5), lambda s, t: s.repeat_interleave(t, [2, 3]),
     lambda x: x.repeat_interleave(2, dim=0).repeat_interleave(3, dim=1)),
    ((3, 5), lambda s, t: s.repeat_interleave(t, [3]), lambda x: x.repeat_interleave(3, dim=1)),
    ((7,), lambda s, t: s.repeat_interleave(t, [2, 1]), lambda x: x.unsqueeze(0).repeat(2, 1)),
    # chains: a reshape feeding arithmetic and a reduction
    ((4, 12), lambda s, t: s.sum(s.reshape(t, [4, 3, 4]), dim=2), lambda x: x.reshape(4, 3, 4).sum(2)),
    ((6, 8), lambda s, t: s.transpose(s.transpose(t) * 2.0), lambda x: x * 2),
]


@pytest.mark.parametrize("shape,fn,want", CASES)
@pytest.mark.parametrize("warps", [1, 4])
def test_shape_changes_match_torch(shape, fn, want, warps):
    x = torch.randn(*shape)
    out_shape = want(x).shape
    x, out = run(shape, fn, out_shape, warps=warps, x=x)
    torch.testing.assert_close(out, want(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [float16, int32])
def test_shape_changes_keep_the_dtype(dtype):
    x = torch.randint(-50, 50, (5, 6)).float()
    _, out = run((5, 6), lambda s, t: s.reshape(s.transpose(t), [3, 10]), (3, 10), dtype=dtype, x=x)
    torch.testing.assert_close(out, x.t().reshape(3, 10))


def test_out_writes_into_an_existing_tile():
    def fn(s, t):
        dst = s.register_tensor(dtype=float32, shape=[1, 5, 7], init=0.0)
        s.unsqueeze(t, dim=0, out=dst)
        back = s.register_tensor(dtype=float32, shape=[5, 7], init=0.0)
        s.squeeze(dst, dim=0, out=back)
        rep = s.register_tensor(dtype=float32, shape=[5, 14], init=0.0)
        s.repeat(back, [1, 2], out=rep)
        return rep

    x, out = run((5, 7), fn, (5, 14))
    torch.testing.assert_close(out, x.repeat(1, 2))


# ---------------------------------------------------------------- view

class ViewBits(tilus.Script):
    """A float16 tile viewed as int16 (no layout: elementwise bit cast) and back, or as
    bytes through an explicit layout."""

    def __init__(self, n, mode):
        super().__init__()
        self.n, self.mode = n, mode

    def __call__(self, x: ~float16, out: ~int16, out8: ~uint8):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float16, shape=[self.n])
        t = self.load_global(gx, offsets=[0], shape=[self.n])
        if self.mode == "bits":
            go = self.global_view(out, dtype=int16, shape=[self.n])
            self.store_global(go, self.view(t, dtype=int16), offsets=[0])
        else:
            # 4 halves per thread, in order: the same 8 bytes read as uint8
            z = self.register_tensor(dtype=float16, shape=[self.n], init=0.0,
                                     layout=spatial(32) * local(self.n // 32))
            t = t + z
            b = self.view(t, layout=spatial(32) * local(2 * self.n // 32), dtype=uint8)
            g8 = self.global_view(out8, dtype=uint8, shape=[2 * self.n])
            self.store_global(g8, b, offsets=[0])


def test_view_without_layout_is_a_bit_cast():
    x = torch.randn(37).half()
    out = torch.zeros(37, dtype=torch.int16)
    ViewBits(37, "bits")(x, out, torch.zeros(1, dtype=torch.uint8))
    assert torch.equal(out, x.view(torch.int16))


def test_view_with_a_layout_reinterprets_each_threads_registers():
    x = torch.randn(128).half()
    out8 = torch.zeros(256, dtype=torch.uint8)
    ViewBits(128, "bytes")(x, torch.zeros(1, dtype=torch.int16), out8)
    assert torch.equal(out8, x.view(torch.uint8))


def test_view_of_a_wider_type_splits_registers_in_order():
    # each thread holds x[t] and x[32 + t] (float32): as float16 it holds the two halves
    # of each, i.e. elements 2t, 2t+1 and 64+2t, 64+2t+1 of x viewed as float16.
    class Wide(tilus.Script):
        def __call__(self, x: ~float32, out: ~int16):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            gx = self.global_view(x, dtype=float32, shape=[64])
            z = self.register_tensor(dtype=float32, shape=[64], init=0.0, layout=local(2) * spatial(32))
            t = self.load_global(gx, offsets=[0], shape=[64]) + z
            h = self.view(t, layout=local(2) * spatial(32) * local(2), dtype=int16)
            self.store_global(self.global_view(out, dtype=int16, shape=[128]), h, offsets=[0])

    x = torch.randn(64)
    out = torch.zeros(128, dtype=torch.int16)
    Wide()(x, out)
    assert torch.equal(out, x.view(torch.int16))


# ---------------------------------------------------------------- a Tilus-0.2-style program

class DecodeStep(tilus.Script):
    """One step of a linear-attention decode, written as Tilus 0.2 programs are (the
    NVIDIA/tilus flash_attention_decode example's shape changes): with the state h
    [d, d], key k, value v and query q:
        h' = h + k^T v,   o = q h'   (as sum(unsqueeze(q, 1) * h', dim=0))
    and the output also stored transposed and repeated per head group."""

    def __init__(self, d, groups):
        super().__init__()
        self.d, self.groups = d, groups

    def __call__(self, h: ~float32, k: ~float32, v: ~float32, q: ~float32,
                 o: ~float32, ht: ~float32, og: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 2
        d = self.d
        r_h = self.load_global(self.global_view(h, dtype=float32, shape=[d, d]), offsets=[0, 0], shape=[d, d])
        r_k = self.load_global(self.global_view(k, dtype=float32, shape=[d]), offsets=[0], shape=[d])
        r_v = self.load_global(self.global_view(v, dtype=float32, shape=[d]), offsets=[0], shape=[d])
        r_q = self.load_global(self.global_view(q, dtype=float32, shape=[d]), offsets=[0], shape=[d])
        # explicit broadcasts (repeat): the CUDA backend does not broadcast tiles yet
        r_h = r_h + self.repeat(self.unsqueeze(r_k, dim=1), [1, d]) * self.repeat(self.unsqueeze(r_v, dim=0), [d, 1])
        r_o = self.sum(self.repeat(r_q.unsqueeze(1), [1, d]) * r_h, dim=0)
        self.store_global(self.global_view(o, dtype=float32, shape=[d]), r_o, offsets=[0])
        self.store_global(self.global_view(ht, dtype=float32, shape=[d, d]), r_h.transpose(), offsets=[0, 0])
        r_g = self.repeat_interleave(r_o.unsqueeze(0), [self.groups, 1])
        self.store_global(self.global_view(og, dtype=float32, shape=[self.groups, d]),
                          self.squeeze(self.reshape(r_g, [1, self.groups, d]), dim=0), offsets=[0, 0])


def test_a_tilus_02_style_program_runs_in_the_interpreter():
    d, groups = 12, 3
    h, k, v, q = torch.randn(d, d), torch.randn(d), torch.randn(d), torch.randn(d)
    o, ht, og = torch.full((d,), float("nan")), torch.full((d, d), float("nan")), torch.full((groups, d), float("nan"))
    DecodeStep(d, groups)(h, k, v, q, o, ht, og)
    h2 = h + torch.outer(k, v)
    torch.testing.assert_close(o, q @ h2, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ht, h2.t())
    torch.testing.assert_close(og, (q @ h2).unsqueeze(0).repeat(groups, 1), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- errors

class Bad(tilus.Script):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def __call__(self, x: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        t = self.register_tensor(dtype=float32, shape=[4, 6], init=0.0)
        y = self.fn(self, t)  # MARK-bad
        self.print_tensor("y", y)


@pytest.mark.parametrize("fn,error,match", [
    (lambda s, t: s.reshape(t, [5, 5]), ValueError, "reshape: .* has 24 elements"),
    (lambda s, t: s.reshape(t, [-1, -1]), ValueError, "more than one -1"),
    (lambda s, t: s.reshape(t, [0, 24]), ValueError, "below 1"),
    (lambda s, t: s.squeeze(t, dim=0), ValueError, "has size 4, not 1"),
    (lambda s, t: s.squeeze(t, dim=2), ValueError, "out of range"),
    (lambda s, t: s.unsqueeze(t, dim=5), ValueError, "out of range"),
    (lambda s, t: s.permute(t, [0, 0]), ValueError, "not a permutation"),
    (lambda s, t: s.transpose(s.reshape(t, [2, 3, 4])), ValueError, "must be 2-D"),
    (lambda s, t: s.repeat(t, [0, 1]), ValueError, "count below 1"),
    (lambda s, t: s.view(t, dtype=float16), ValueError, "cannot be viewed as float16"),
    (lambda s, t: s.view(t, dtype="int"), TypeError, "view: dtype"),
    (lambda s, t: s.view(t, layout=[4, 6]), TypeError, "view: layout"),
    (lambda s, t: s.squeeze(t, dim=0.5), TypeError, "integers"),
    (lambda s, t: s.reshape_shared(t, [24]), TypeError, "reshape_shared: tensor must be a shared"),
    (lambda s, t: s.repeat(t, [1, 2], out=t), TypeError, "cannot assign"),
])
def test_errors_name_the_script_line(fn, error, match):
    with pytest.raises(error, match=match) as info:
        Bad(fn)(torch.zeros(1))
    assert "MARK-bad" in str(info.value)


def test_a_view_whose_bits_do_not_fill_the_layout_is_refused_at_its_line():
    class Misfit(tilus.Script):
        def __call__(self, x: ~float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            t = self.register_tensor(dtype=float32, shape=[32], init=0.0, layout=spatial(32))
            b = self.view(t, layout=spatial(32) * local(2), dtype=uint8)  # MARK-misfit
            self.print_tensor("b", b)

    with pytest.raises(ValueError, match="view: each thread holds 1 x 32 bits") as info:
        Misfit()(torch.zeros(1))
    assert "MARK-misfit" in str(info.value)


def test_the_ir_prints_the_shape_changes():
    program = Apply([5, 7], lambda s, t: s.repeat(s.permute(s.reshape(t, [35]).unsqueeze(0), [1, 0]), [1, 2]),
                    [35, 2]).compile(torch.zeros(5, 7), torch.zeros(35, 2)).program
    text = str(program)
    assert "reshape(%t, shape=[35])" in text
    assert "permute(" in text and "dims=[1, 0]" in text
    assert "repeat(" in text and "repeats=[1, 2]" in text


class DotT(tilus.Script):
    """acc = a @ b.transpose() (Hopper matmul v0's register transpose): the dot fixes
    the transposed operand's layout, so the derived registers are converted to it."""

    def __call__(self, a: ~float16, b: ~float16, c: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        ra = self.load_global(self.global_view(a, dtype=float16, shape=[32, 16]), offsets=[0, 0], shape=[32, 16])
        rb = self.load_global(self.global_view(b, dtype=float16, shape=[32, 16]), offsets=[0, 0], shape=[32, 16])
        acc = self.register_tensor(dtype=float32, shape=[32, 32], init=0.0)
        acc = self.dot(ra, rb.transpose(), acc)
        self.store_global(self.global_view(c, dtype=float32, shape=[32, 32]), acc, offsets=[0, 0])


def test_a_dot_with_a_transposed_operand_matches_torch():
    a, b = torch.randn(32, 16).half(), torch.randn(32, 16).half()
    c = torch.full((32, 32), float("nan"))
    DotT()(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().t(), rtol=1e-3, atol=1e-3)
