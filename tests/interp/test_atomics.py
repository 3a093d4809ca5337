"""Atomics (self.atomic.*) and scatter stores in the CPU interpreter, against torch at odd
shapes: a histogram with conflicting indices (global and shared), a compare-and-swap
lock-free max, every element-wise and scatter operation with its old values, and the
refusals with the script line."""

import numpy as np
import pytest
import torch

import tilus
from tilus import float16, float32, float64, int32, int64, uint32
from tilus.utils import cdiv

class Histogram(tilus.Script):
    """hist[y[i]] += 1 for every i: a global scatter-add per block; the block's padding
    loads 0 and lands in bin 0, which the host passes for it (y = x + 1)."""

    def __init__(self, block, warps=4):
        super().__init__()
        self.block, self.warps = block, warps

    def __call__(self, n: int32, bins: int32, y: ~int32, hist: ~int32):
        self.attrs.blocks = cdiv(n, self.block)
        self.attrs.warps = self.warps
        gy = self.global_view(y, dtype=int32, shape=[n])
        gh = self.global_view(hist, dtype=int32, shape=[bins])
        idx = self.load_global(gy, offsets=[self.blockIdx.x * self.block], shape=[self.block])
        ones = self.register_tensor(dtype=int32, shape=[self.block], init=1)
        self.atomic.global_scatter_add(gh, dim=0, indices=idx, values=ones)


class SharedHistogram(tilus.Script):
    """The same histogram through shared memory: each block counts into a shared tile
    (shared scatter-add), then adds it to the global one (element-wise global add)."""

    def __init__(self, block, bins, warps=4):
        super().__init__()
        self.block, self.bins, self.warps = block, bins, warps

    def __call__(self, n: int32, y: ~int32, hist: ~int32):
        self.attrs.blocks = cdiv(n, self.block)
        self.attrs.warps = self.warps
        gy = self.global_view(y, dtype=int32, shape=[n])
        gh = self.global_view(hist, dtype=int32, shape=[self.bins])
        s = self.shared_tensor(dtype=int32, shape=[self.bins])
        self.store_shared(s, self.register_tensor(dtype=int32, shape=[self.bins], init=0))
        self.sync()
        idx = self.load_global(gy, offsets=[self.blockIdx.x * self.block], shape=[self.block])
        ones = self.register_tensor(dtype=int32, shape=[self.block], init=1)
        self.atomic.shared_scatter_add(s, dim=0, indices=idx, values=ones)
        self.sync()
        self.atomic.global_add(gh, self.load_shared(s))
        self.free_shared(s)


def _histogram_input(n, bins):
    x = torch.randint(0, bins, (n,), dtype=torch.int32)
    x[: n // 3] = bins // 2  # many conflicting indices
    return x


@pytest.mark.parametrize("n,bins,block", [(1, 5, 32), (1000, 37, 128), (777, 3, 64), (4099, 129, 256)])
def test_histogram_global_scatter_add(n, bins, block):
    x = _histogram_input(n, bins)
    hist = torch.zeros(bins + 1, dtype=torch.int32)
    Histogram(block)(n, bins + 1, x + 1, hist)
    assert torch.equal(hist[1:], torch.bincount(x, minlength=bins).int())
    assert hist[0].item() == cdiv(n, block) * block - n  # the padding, counted once each


@pytest.mark.parametrize("n,bins,block", [(1000, 37, 128), (333, 8, 32)])
def test_histogram_through_shared_memory(n, bins, block):
    x = _histogram_input(n, bins)
    hist = torch.zeros(bins + 1, dtype=torch.int32)
    SharedHistogram(block, bins + 1)(n, x + 1, hist)
    assert torch.equal(hist[1:], torch.bincount(x, minlength=bins).int())


class CasMax(tilus.Script):
    """out[j] = max(out[j], max over blocks b of v[b, j]) with a compare-and-swap loop:
    read, propose the max, swap if unchanged, else retry from what was there."""

    def __init__(self, n, dtype, iters):
        super().__init__()
        self.n, self.dtype, self.iters = n, dtype, iters

    def __call__(self, blocks: int32, v: ~float32, out: ~float32):
        self.attrs.blocks = blocks
        self.attrs.warps = 2
        gv = self.global_view(v, dtype=float32, shape=[blocks, self.n])
        go = self.global_view(out, dtype=float32, shape=[self.n])
        mine = self.cast(self.load_global(gv, offsets=[self.blockIdx.x, 0], shape=[self.n], dims=[1]),
                         dtype=self.dtype)
        cur = self.cast(self.load_global(go, offsets=[0], shape=[self.n]), dtype=self.dtype)
        for _ in self.range(self.iters):
            want = self.maximum(cur, mine)
            old = self.atomic.global_cas(go, cur, want)
            cur = self.where(old == cur, want, old)


def test_cas_lock_free_max_float32():
    blocks, n = 9, 45
    v = torch.randn(blocks, n)
    out = torch.full((n,), -5.0)
    out[::4] = 10.0  # already larger than every proposal
    want = torch.maximum(out, v.max(dim=0).values)
    CasMax(n, float32, iters=blocks + 1)(blocks, v, out)
    assert torch.equal(out, want)


def test_cas_on_float_bits_and_old_values():
    class Cas(tilus.Script):
        def load(self, p):
            return self.load_global(self.global_view(p, dtype=float32, shape=[7]), offsets=[0], shape=[7])

        def __call__(self, g: ~float32, c: ~float32, v: ~float32, old: ~float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            gg = self.global_view(g, dtype=float32, shape=[7])
            o = self.atomic.global_cas(gg, self.load(c), self.load(v))
            self.store_global(self.global_view(old, dtype=float32, shape=[7]), o, offsets=[0])

    g = torch.tensor([1.0, -0.0, 0.0, float("nan"), 3.0, 4.0, 5.0])
    c = torch.tensor([1.0, 0.0, 0.0, float("nan"), 2.0, 4.0, 6.0])
    v = torch.arange(7, dtype=torch.float32) + 100
    old = torch.full((7,), 7.0)
    g0 = g.clone()
    Cas()(g, c, v, old)
    # bit patterns: -0.0 != 0.0, the same NaN == NaN
    swapped = torch.tensor([True, False, True, True, False, True, False])
    assert torch.equal(old.view(torch.int32), g0.view(torch.int32))
    assert torch.equal(torch.where(swapped, v, g0).view(torch.int32), g.view(torch.int32))


class Elementwise(tilus.Script):
    """One block applies op to dst[off : off + m, :] (global) or to a shared copy of it,
    storing the old values and (shared) the result back."""

    def __init__(self, space, op, dtype, m, n, offset=(0, 0), keep_old=True):
        super().__init__()
        self.space, self.op, self.dtype, self.m, self.n, self.offset = space, op, dtype, m, n, list(offset)
        self.keep_old = keep_old  # False: nothing reads the old values (a global add is a red)

    def tile(self, p):
        g = self.global_view(p, dtype=float64, shape=[self.m, self.n])
        return self.cast(self.load_global(g, offsets=[0, 0], shape=[self.m, self.n]), dtype=self.dtype)

    def __call__(self, rows: int32, cols: int32, dst: ~float64, v: ~float64, c: ~float64, old: ~float64):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        t = self.dtype
        gd = self.global_view(dst, dtype=float64, shape=[rows, cols])
        values = self.tile(v)
        compare = self.tile(c)
        fn = getattr(self.atomic, f"{self.space}_{self.op}")
        extra = [compare] if self.op == "cas" else []
        if self.space == "global":
            ws = self.global_tensor(dtype=t, shape=[rows, cols])
            self.store_global(ws, self.cast(self.load_global(gd, offsets=[0, 0], shape=[self.m + 8, self.n + 8]), dtype=t),
                              offsets=[0, 0])
            self.sync()  # other warps' atomics and loads touch what this store wrote
            o = fn(ws, *extra, values, offsets=self.offset)
            self.sync()
            back = self.load_global(ws, offsets=[0, 0], shape=[self.m + 8, self.n + 8])
            self.store_global(gd, self.cast(back, dtype=float64), offsets=[0, 0])
        else:
            s = self.shared_tensor(dtype=t, shape=[self.m, self.n])
            self.store_shared(s, self.cast(self.load_global(gd, offsets=[0, 0], shape=[self.m, self.n]), dtype=t))
            self.sync()
            o = fn(s, *extra, values)
            self.sync()
            self.store_global(gd, self.cast(self.load_shared(s), dtype=float64), offsets=[0, 0])
            self.free_shared(s)
        if self.keep_old:
            self.store_global(self.global_view(old, dtype=float64, shape=[self.m, self.n]),
                              self.cast(o, dtype=float64), offsets=[0, 0])


def _reference(op, d, v, c):
    if op == "add":
        return d + v
    if op == "sub":
        return d - v
    if op == "min":
        return torch.minimum(d, v)
    if op == "max":
        return torch.maximum(d, v)
    if op == "exch":
        return v.clone()
    return torch.where(d == c, v, d)


_OPS = ["add", "sub", "min", "max", "exch", "cas"]


@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("op,dtype", [(op, t) for op in _OPS for t in [int32, int64, float32, uint32]
                                      if not (t == float32 and op in ("min", "max"))])  # refused: below
def test_elementwise_ops_and_old_values(space, op, dtype):
    m, n = 5, 7
    rows, cols = (m + 3, n + 2) if space == "global" else (m, n)
    lo = 0 if dtype == uint32 else -20
    d = torch.randint(lo, 20, (rows, cols)).double()
    v = torch.randint(lo, 20, (m, n)).double()
    c = torch.where(torch.rand(m, n) < 0.5, d[:m, :n], v)
    old = torch.full((m, n), 1e9, dtype=torch.float64)
    d0 = d.clone()
    Elementwise(space, op, dtype, m, n)(rows, cols, d, v, c, old)
    want = d0.clone()
    want[:m, :n] = _reference(op, d0[:m, :n], v, c)
    if dtype == uint32:
        want = want % 2**32  # unsigned subtraction wraps
    assert torch.equal(d, want)
    assert torch.equal(old, d0[:m, :n])


def test_global_offsets_drop_elements_outside():
    m, n, rows, cols = 5, 7, 6, 9
    d = torch.zeros(rows, cols, dtype=torch.float64)
    v = torch.randn(m, n, dtype=torch.float64).float().double()
    old = torch.full((m, n), 5.0, dtype=torch.float64)
    Elementwise("global", "add", float32, m, n, offset=(3, 4))(rows, cols, d, v, v, old)
    want = torch.zeros(rows, cols, dtype=torch.float64)
    want[3:, 4:] = v[: rows - 3, : cols - 4]
    assert torch.equal(d, want)
    assert torch.equal(old, torch.zeros(m, n, dtype=torch.float64))  # old of dropped: 0


def test_float32_add_flushes_subnormals_like_atom_add_f32():
    m, n = 1, 3
    d = torch.tensor([[1e-39, 0.0, 1.0]], dtype=torch.float64).float().double()
    v = torch.tensor([[0.0, 1e-39, 2.0]], dtype=torch.float64).float().double()
    old = torch.zeros(m, n, dtype=torch.float64)
    Elementwise("shared", "add", float32, m, n)(m, n, d, v, v, old)
    assert d.tolist() == [[0.0, 0.0, 3.0]]


class Scatter(tilus.Script):
    """A [m, n] tile scattered along `dim` into a [rows, cols] dst (global or shared),
    atomically with `op`, or stored (op=None)."""

    def __init__(self, space, op, dtype, m, n, rows, cols, dim):
        super().__init__()
        self.space, self.op, self.dtype = space, op, dtype
        self.m, self.n, self.rows, self.cols, self.dim = m, n, rows, cols, dim

    def __call__(self, dst: ~float64, idx: ~int32, v: ~float64, old: ~float64):
        self.attrs.blocks = 1
        self.attrs.warps = 2
        t = self.dtype
        gd = self.global_view(dst, dtype=float64, shape=[self.rows, self.cols])
        i = self.load_global(self.global_view(idx, dtype=int32, shape=[self.m, self.n]), offsets=[0, 0],
                             shape=[self.m, self.n])
        values = self.cast(self.load_global(self.global_view(v, dtype=float64, shape=[self.m, self.n]),
                                            offsets=[0, 0], shape=[self.m, self.n]), dtype=t)
        if self.space == "global":
            target = self.global_tensor(dtype=t, shape=[self.rows, self.cols])
            self.store_global(target, self.cast(self.load_global(gd, offsets=[0, 0], shape=[self.rows, self.cols]),
                                                dtype=t), offsets=[0, 0])
            self.sync()
        else:
            target = self.shared_tensor(dtype=t, shape=[self.rows, self.cols])
            self.store_shared(target, self.cast(self.load_global(gd, offsets=[0, 0], shape=[self.rows, self.cols]),
                                                dtype=t))
            self.sync()
        if self.op is None:
            store = self.store_global_scatter if self.space == "global" else self.store_shared_scatter
            store(target, dim=self.dim, indices=i, values=values)
        else:
            fn = getattr(self.atomic, f"{self.space}_scatter_{self.op}")
            o = fn(target, dim=self.dim, indices=i, values=values)
            self.store_global(self.global_view(old, dtype=float64, shape=[self.m, self.n]),
                              self.cast(o, dtype=float64), offsets=[0, 0])
        if self.space == "global":
            self.sync()  # the atomics of other warps land before the read-back
            back = self.load_global(target, offsets=[0, 0], shape=[self.rows, self.cols])
        else:
            self.sync()
            back = self.load_shared(target)
        self.store_global(gd, self.cast(back, dtype=float64), offsets=[0, 0])


def _scatter_reference(op, d, dim, idx, v):
    """Sequential row-major application, dropping indices outside d."""
    d = d.clone()
    olds = torch.zeros_like(v)
    for pos in np.ndindex(*v.shape):
        tgt = list(pos)
        tgt[dim] = int(idx[pos])
        if not 0 <= tgt[dim] < d.shape[dim]:
            continue
        tgt = tuple(tgt)
        olds[pos] = d[tgt]
        d[tgt] = v[pos] if op is None else _reference(op, d[tgt], v[pos], None)
    return d, olds


@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("op", ["add", "sub", "min", "max", None])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_with_conflicts_and_dropped_indices(space, op, dim):
    m, n = 6, 5
    rows, cols = (4, n) if dim == 0 else (m, 3)
    extent = rows if dim == 0 else cols
    dtype = int32 if op in ("min", "max") else float32
    idx = torch.randint(-1, extent + 1, (m, n), dtype=torch.int32)  # -1 and extent: dropped
    v = torch.randint(-9, 9, (m, n)).double()
    if op is None:  # a store: make targets unique so the winner is defined
        idx = torch.full((m, n), 99, dtype=torch.int32)
        for pos in np.ndindex(m, n):
            along = pos[dim % 2]
            if along < extent:
                idx[pos] = extent - 1 - along
    d = torch.randint(-9, 9, (rows, cols)).double()
    old = torch.full((m, n), 1e9, dtype=torch.float64)
    want, want_old = _scatter_reference(op, d, dim % 2, idx, v)
    Scatter(space, op, dtype, m, n, rows, cols, dim)(d, idx, v, old)
    assert torch.equal(d, want)
    if op is not None:
        assert torch.equal(old, want_old)


def test_scatter_matches_torch_scatter_reduce():
    m, n, bins = 33, 9, 11
    idx = torch.randint(0, bins, (m, n), dtype=torch.int32)
    v = torch.randint(-100, 100, (m, n)).double()
    d = torch.zeros(bins, n, dtype=torch.float64)
    Scatter("global", "max", int32, m, n, bins, n, 0)(d, idx, v, torch.zeros(m, n, dtype=torch.float64))
    want = torch.zeros(bins, n, dtype=torch.float64).scatter_reduce(0, idx.long(), v, "amax")
    assert torch.equal(d, want)


# ---------------------------------------------------------------- refusals, at the script line

def _build_error(body):
    class Bad(tilus.Script):
        def __call__(self, g: ~float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            body(self, self.global_view(g, dtype=float32, shape=[8]))

    with pytest.raises(Exception) as info:
        Bad()(torch.zeros(8))
    return info


def _located(info):
    text = str(info.value)
    assert "test_atomics.py" in text, text
    return text


def test_float_min_is_refused_at_build_time_with_the_script_line():
    info = _build_error(lambda s, g: s.atomic.global_min(g, s.register_tensor(dtype=float32, shape=[8], init=1.0)))
    assert issubclass(info.type, TypeError)
    assert "float32 elements are not supported; this atomic takes int32" in _located(info)


def test_8_bit_and_16_bit_integer_atomics_are_refused():
    def body(s, g):
        sh = s.shared_tensor(dtype=tilus.int16, shape=[8])
        s.atomic.shared_add(sh, s.register_tensor(dtype=tilus.int16, shape=[8], init=1))

    info = _build_error(body)
    assert "int16 elements are not supported" in _located(info)


def test_half_exch_is_refused():
    def body(s, g):
        sh = s.shared_tensor(dtype=float16, shape=[8])
        s.atomic.shared_exch(sh, s.register_tensor(dtype=float16, shape=[8], init=1.0))

    assert "float16 elements are not supported" in _located(_build_error(body))


def test_shape_dtype_and_qualifier_errors():
    v8 = lambda s: s.register_tensor(dtype=float32, shape=[8], init=1.0)
    info = _build_error(lambda s, g: s.atomic.global_add(g, s.register_tensor(dtype=int32, shape=[8], init=1)))
    assert "must have dst's dtype float32" in _located(info)
    info = _build_error(lambda s, g: s.atomic.global_add(g, v8(s), sem="seq_cst"))
    assert "sem must be one of" in _located(info)
    info = _build_error(lambda s, g: s.atomic.global_add(g, v8(s), scope="block"))
    assert "scope must be one of" in _located(info)

    def shared_shape(s, g):
        s.atomic.shared_add(s.shared_tensor(dtype=float32, shape=[4]), v8(s))

    assert "dst shape [4] != values shape [8]" in _located(_build_error(shared_shape))

    def bad_dim(s, g):
        s.atomic.global_scatter_add(g, dim=1, indices=s.register_tensor(dtype=int32, shape=[8], init=0),
                                    values=v8(s))

    assert "dim 1 is out of range" in _located(_build_error(bad_dim))

    def float_indices(s, g):
        s.atomic.global_scatter_add(g, dim=0, indices=v8(s), values=v8(s))

    assert "indices must be an integer register tensor" in _located(_build_error(float_indices))

    def axis_mismatch(s, g):
        sh = s.shared_tensor(dtype=float32, shape=[4, 3])
        s.store_shared_scatter(sh, dim=0, indices=s.register_tensor(dtype=int32, shape=[2, 5], init=0),
                               values=s.register_tensor(dtype=float32, shape=[2, 5], init=0.0))

    assert "non-scatter axis 1 mismatch" in _located(_build_error(axis_mismatch))


def test_scatter_has_no_exch_or_cas():
    assert not hasattr(tilus.lang.inst_atomics.AtomicGroup, "global_scatter_exch")
    assert not hasattr(tilus.lang.inst_atomics.AtomicGroup, "shared_scatter_cas")


def test_the_ir_prints_the_operation_and_qualifiers():
    program = Histogram(64).compile(100, 6, torch.zeros(100, dtype=torch.int32),
                                    torch.zeros(6, dtype=torch.int32)).program
    assert "atomic_global_scatter(" in str(program)
    assert "dim=0, op=add, sem=relaxed, scope=gpu)" in str(program)
