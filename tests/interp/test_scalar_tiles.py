"""Rank-0 and one-element tiles in the CPU interpreter against torch, at odd sizes:
storing a full reduction (a rank-0 tile) into one element of a global tensor
(store_global(..., dims=[])) or of a shared tensor (s[i, j], store_shared(offsets=, dims=[])),
`.item()` and `.item_ptr()` of shared elements, and `.tolist()` of tiles of many elements.
The programs are shared with tests/codegen/test_scalar_tiles_source.py and
tests/gpu/test_scalar_tiles_gpu.py."""

import pytest
import torch

import tilus
from tilus import float32, int32


class RankZeroStores(tilus.Script):
    """y[0, i] = sum(x), y[1, i + 1] = max(x), y[2, 0] = min(x) through s[1, j],
    y[2, 1] = 2 * s[1, j].item(), y[2, 2] = sum(x) through store_shared(offsets=, dims=[])."""

    def __init__(self, n, warps=4):
        super().__init__()
        self.n, self.warps = n, warps

    def __call__(self, x: ~float32, y: ~float32, i: int32, j: int32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=[self.n])
        gy = self.global_view(y, dtype=float32, shape=[3, self.n + 2])
        t = self.load_global(gx, offsets=[0], shape=[self.n])
        self.store_global(gy, self.sum(t, dim=0), offsets=[0, i], dims=[])
        self.store_global(gy, self.max(t, dim=0), offsets=[1, i + 1])
        s = self.shared_tensor(dtype=float32, shape=[2, 3])
        self.store_shared(s[1, j], self.min(t, dim=0))
        self.store_shared(s, self.sum(t, dim=0), offsets=[0, j], dims=[])
        self.sync()
        self.store_global(gy, self.load_shared(s[1, j]), offsets=[2, 0], dims=[])
        v = s[1, j].item()
        self.store_global(gy, self.register_tensor(dtype=float32, shape=[1], init=v * 2.0), offsets=[2, 1])
        self.store_global(gy, self.load_shared(s[0, j]), offsets=[2, 2], dims=[])
        self.free_shared(s)


def run_rank_zero(n, i, j, warps=4, device="cpu"):
    x = torch.randn(n, device=device)
    y = torch.full((3, n + 2), float("nan"), device=device)
    RankZeroStores(n, warps)(x, y, i, j)
    return x.cpu(), y.cpu()


def rank_zero_reference(x, i, j):
    y = torch.full((3, x.numel() + 2), float("nan"))
    y[0, i], y[1, i + 1] = x.sum(), x.max()
    y[2, 0], y[2, 1], y[2, 2] = x.min(), 2 * x.min(), x.sum()
    return y


@pytest.mark.parametrize("n,i,j", [(37, 5, 2), (1, 0, 0), (128, 127, 1), (300, 3, 0)])
@pytest.mark.parametrize("warps", [1, 4])
def test_rank_zero_tiles_store_into_one_element(n, i, j, warps):
    x, y = run_rank_zero(n, i, j, warps)
    torch.testing.assert_close(y, rank_zero_reference(x, i, j), rtol=1e-5, atol=1e-5, equal_nan=True)


class ToList(tilus.Script):
    """Each element of an [m, n] tile read back through tolist(): y = 3 * x + element index,
    written one element at a time from the scalars."""

    def __init__(self, m, n, warps=4, shared=False):
        super().__init__()
        self.m, self.n, self.warps, self.shared = m, n, warps, shared

    def __call__(self, x: ~float32, y: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=[self.m * self.n])
        gy = self.global_view(y, dtype=float32, shape=[self.m * self.n])
        t = self.reshape(self.load_global(gx, offsets=[0], shape=[self.m * self.n]), [self.m, self.n])
        if self.shared:
            s = self.shared_tensor(dtype=float32, shape=[self.m, self.n])
            self.store_shared(s, t)
            self.sync()
            values = s.tolist()
        else:
            values = t.tolist()
        for k, value in enumerate(values):  # a Python list: unrolled
            cell = self.register_tensor(dtype=float32, shape=[1], init=value * 3.0 + k)
            self.store_global(gy, cell, offsets=[k])


def run_tolist(m, n, warps=4, shared=False, device="cpu"):
    x = torch.randn(m * n, device=device)
    y = torch.full((m * n,), float("nan"), device=device)
    ToList(m, n, warps, shared)(x, y)
    return x.cpu(), y.cpu()


@pytest.mark.parametrize("m,n", [(1, 1), (2, 3), (3, 5), (1, 7), (5, 33)])
@pytest.mark.parametrize("warps", [1, 4])
@pytest.mark.parametrize("shared", [False, True])
def test_tolist_gives_every_element_in_row_major_order(m, n, warps, shared):
    x, y = run_tolist(m, n, warps, shared)
    torch.testing.assert_close(y, x * 3 + torch.arange(m * n, dtype=torch.float32))


class SharedItemPtr(tilus.Script):
    """y[0] = whether s[a, b].item_ptr() is the address of s[1, 2]; y[1] = whether the
    one-element view t[0] and t.item_ptr() agree. On CUDA (via="write") the address is
    also written through: y[2] = the value stored at s[a, b] through a global view of
    its pointer, read back with load_shared."""

    def __init__(self, via="compare"):
        super().__init__()
        self.via = via

    def __call__(self, y: ~int32, a: int32, b: int32):
        self.attrs.blocks = 1
        self.attrs.warps = 2
        gy = self.global_view(y, dtype=int32, shape=[3])
        s = self.shared_tensor(dtype=int32, shape=[4, 6])
        t = self.shared_tensor(dtype=int32, shape=[1])
        p = s[a, b].item_ptr()
        if p == s[1, 2].item_ptr():
            self.store_global(gy, self.register_tensor(dtype=int32, shape=[1], init=1), offsets=[0])
        else:
            self.store_global(gy, self.register_tensor(dtype=int32, shape=[1], init=0), offsets=[0])
        if t.item_ptr() == t[0].item_ptr():
            self.store_global(gy, self.register_tensor(dtype=int32, shape=[1], init=1), offsets=[1])
        else:
            self.store_global(gy, self.register_tensor(dtype=int32, shape=[1], init=0), offsets=[1])
        if self.via == "write":
            self.store_shared(s, self.register_tensor(dtype=int32, shape=[4, 6], init=-1))
            self.sync()
            through = self.global_view(p, dtype=int32, shape=[1])
            self.store_global(through, self.register_tensor(dtype=int32, shape=[1], init=a * 10 + b),
                              offsets=[0])
            self.sync()
            self.store_global(gy, self.load_shared(s[a, b]), offsets=[2], dims=[])


@pytest.mark.parametrize("a,b,same", [(1, 2, 1), (2, 1, 0), (0, 0, 0), (3, 5, 0)])
def test_shared_item_ptr_addresses_its_element(a, b, same):
    y = torch.full((3,), -7, dtype=torch.int32)
    SharedItemPtr()(y, a, b)
    assert y.tolist() == [same, 1, -7]


def test_item_ptr_of_a_register_tile_is_refused():
    class Bad(tilus.Script):
        def __call__(self, y: ~int32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            r = self.register_tensor(dtype=int32, shape=[1], init=0)
            p = r.item_ptr()  # MARK-ptr
            self.print_tensor("r", r)

    with pytest.raises(TypeError, match="item_ptr\\(\\) needs a global or shared tensor") as info:
        Bad()(torch.zeros(1, dtype=torch.int32))
    assert "MARK-ptr" in str(info.value)


def test_item_of_a_shared_tensor_with_many_elements_is_refused():
    class Bad(tilus.Script):
        def __call__(self, y: ~int32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            s = self.shared_tensor(dtype=int32, shape=[2, 2])
            v = s.item()  # MARK-item
            self.print_tensor("r", self.register_tensor(dtype=int32, shape=[1], init=v))

    with pytest.raises(ValueError, match="exactly one element") as info:
        Bad()(torch.zeros(1, dtype=torch.int32))
    assert "MARK-item" in str(info.value)
