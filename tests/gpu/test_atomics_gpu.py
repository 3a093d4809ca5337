"""Atomics, scatter stores and random numbers on the GPU: histograms against
torch.bincount at odd sizes (many blocks contend), the CAS max, every element-wise and
scatter operation against the interpreter's answer, and random words bit for bit equal to
the interpreter's."""

import pytest
import torch

from tests.interp.test_atomics import (CasMax, Elementwise, Histogram, Scatter, SharedHistogram,
                                       _histogram_input, _reference, _scatter_reference)
from tests.interp.test_random import Words
from tilus import float32, float64, int32, int64, uint32
from tilus.utils import cdiv

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("n,bins,block,warps", [(1, 5, 32, 1), (1000, 37, 128, 4), (100003, 129, 256, 4),
                                                (77777, 3, 64, 2), (5000, 1000, 8, 4)])
def test_histogram_matches_bincount(n, bins, block, warps):
    x = _histogram_input(n, bins).cuda()
    hist = torch.zeros(bins + 1, dtype=torch.int32, device="cuda")
    Histogram(block, warps)(n, bins + 1, x + 1, hist)
    assert torch.equal(hist[1:], torch.bincount(x, minlength=bins).int())
    assert hist[0].item() == cdiv(n, block) * block - n


@pytest.mark.parametrize("n,bins,block", [(100003, 37, 256), (333, 8, 32)])
def test_shared_histogram_matches_bincount(n, bins, block):
    x = _histogram_input(n, bins).cuda()
    hist = torch.zeros(bins + 1, dtype=torch.int32, device="cuda")
    SharedHistogram(block, bins + 1)(n, x + 1, hist)
    assert torch.equal(hist[1:], torch.bincount(x, minlength=bins).int())


@pytest.mark.parametrize("n", [8, 45, 300])
def test_cas_max_under_contention(n):
    blocks = 64
    v = torch.randn(blocks, n, device="cuda")
    out = torch.full((n,), -5.0, device="cuda")
    want = torch.maximum(out, v.max(dim=0).values)
    CasMax(n, float32, iters=blocks + 1)(blocks, v, out)
    assert torch.equal(out, want)


@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("op,dtype", [(op, t) for op in ["add", "sub", "min", "max", "exch", "cas"]
                                      for t in [int32, int64, float32, uint32]
                                      if not (t == float32 and op in ("min", "max"))])
def test_elementwise_ops_and_old_values(space, op, dtype):
    m, n = 5, 7
    rows, cols = (m + 3, n + 2) if space == "global" else (m, n)
    lo = 0 if dtype == uint32 else -20
    d = torch.randint(lo, 20, (rows, cols)).double()
    v = torch.randint(lo, 20, (m, n)).double()
    c = torch.where(torch.rand(m, n) < 0.5, d[:m, :n], v)
    want = d.clone()
    want[:m, :n] = _reference(op, d[:m, :n], v, c)
    if dtype == uint32:
        want = want % 2**32
    old = torch.full((m, n), 1e9, dtype=torch.float64, device="cuda")
    dd = d.cuda()
    Elementwise(space, op, dtype, m, n)(rows, cols, dd, v.cuda(), c.cuda(), old)
    assert torch.equal(dd.cpu(), want)
    assert torch.equal(old.cpu(), d[:m, :n])


@pytest.mark.parametrize("op", ["add", "sub"])
@pytest.mark.parametrize("dtype", [int32, int64, float32, uint32, float64])
# (tile, tensor, offset): scalar reds; float32 adds also as 4-wide (aligned, whole
# vectors in range) and as 4-wide vectors the tensor's edge cuts off
@pytest.mark.parametrize("m,n,rows,cols,offset", [(5, 7, 8, 9, (1, 2)), (5, 16, 8, 24, (1, 4)),
                                                  (6, 16, 9, 16, (2, 8))])
def test_global_adds_whose_old_values_nobody_reads(op, dtype, m, n, rows, cols, offset):
    # emitted as PTX red (tests/codegen/test_atomics_source.py): same totals
    lo = 0 if dtype == uint32 else -20
    d = torch.randint(lo, 20, (rows, cols)).double()
    v = torch.randint(lo, 20, (m, n)).double()
    want = d.clone()
    r, c = offset
    rr, cc = min(rows, r + m), min(cols, c + n)
    want[r:rr, c:cc] = _reference(op, d[r:rr, c:cc], v[:rr - r, :cc - c], None)
    if dtype == uint32:
        want = want % 2**32
    dd = d.cuda()
    Elementwise("global", op, dtype, m, n, offset=offset, keep_old=False)(rows, cols, dd, v.cuda(), v.cuda(),
                                                                          v.cuda())
    assert torch.equal(dd.cpu(), want)


@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("op", ["add", "sub", "min", "max"])
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_totals(space, op, dim):
    # Conflicting atomics commute: the totals are the interpreter's whatever the order.
    m, n = 37, 5
    rows, cols = (4, n) if dim == 0 else (m, 3)
    extent = rows if dim == 0 else cols
    dtype = int32 if op in ("min", "max") else float32
    idx = torch.randint(-1, extent + 1, (m, n), dtype=torch.int32)
    v = torch.randint(-9, 9, (m, n)).double()
    d = torch.randint(-9, 9, (rows, cols)).double()
    want, _ = _scatter_reference(op, d, dim, idx, v)
    dd = d.cuda()
    Scatter(space, op, dtype, m, n, rows, cols, dim)(dd, idx.cuda(), v.cuda(), torch.zeros(m, n, dtype=torch.float64, device="cuda"))
    assert torch.equal(dd.cpu(), want)


@pytest.mark.parametrize("space", ["global", "shared"])
def test_scatter_store_permutation(space):
    m, n = 13, 3
    perm = torch.randperm(m).to(torch.int32)
    idx = perm[:, None].expand(m, n).contiguous()
    idx[0, 0] = m  # dropped
    v = torch.randn(m, n).double()
    d = torch.full((m, n), 7.0, dtype=torch.float64)
    want, _ = _scatter_reference(None, d, 0, idx, v)
    dd = d.cuda()
    Scatter(space, None, float64, m, n, m, n, 0)(dd, idx.cuda(), v.cuda(),
                                                 torch.zeros(m, n, dtype=torch.float64, device="cuda"))
    assert torch.equal(dd.cpu(), want)


@pytest.mark.parametrize("offset_dtype", [int32, int64, uint32])
@pytest.mark.parametrize("n,warps", [(1, 1), (37, 2), (1000, 4)])
def test_random_equals_the_interpreter_bit_for_bit(offset_dtype, n, warps):
    seed = 0x243F6A8885A308D3
    offsets = torch.randint(-(2**40), 2**40, (n,), dtype=torch.int64)
    script = Words(n, offset_dtype, warps=warps)
    cpu_words = torch.full((5, n), -1, dtype=torch.int64)
    cpu_floats = torch.full((2, n), float("nan"))
    script(seed, offsets, cpu_words, cpu_floats)
    gpu_words = torch.full((5, n), -1, dtype=torch.int64, device="cuda")
    gpu_floats = torch.full((2, n), float("nan"), device="cuda")
    script(seed, offsets.cuda(), gpu_words, gpu_floats)
    assert torch.equal(gpu_words.cpu(), cpu_words)
    assert torch.equal(gpu_floats[0].cpu(), cpu_floats[0])  # rand: exact
    torch.testing.assert_close(gpu_floats[1].cpu(), cpu_floats[1], rtol=1e-5, atol=1e-5)
