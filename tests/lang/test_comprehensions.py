"""Comprehensions in scripts (Tilus 0.2 programs write `counts=[1 for _ in range(stages)]`):
evaluated while the script is built over compile-time iterables, with their own names;
the items may be runtime values or tiles. A runtime iterable or condition is refused."""

import pytest
import torch

import tilus
from tilus import float32, int32
from tilus.lang.errors import ScriptError

N = 8


class TilesFromComprehensions(tilus.Script):
    def __call__(self, x: ~float32, out: ~float32, scale: int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float32, shape=[4, N])
        go = self.global_view(out, dtype=float32, shape=[4, N])
        i = 100  # the comprehensions' own `i` does not change this one
        rows = [self.load_global(gx, offsets=[i, 0], shape=[1, N]) for i in range(4)]
        weights = {i: float(i + 1) for i in range(4) if i != 2}
        factors = [scale * k for k in (1, 2)]
        for i, row in enumerate(rows):
            w = weights.get(i, 0.5)
            self.store_global(go, row * w * sum(f for f in factors), offsets=[i, 0])
        assert i == 3 and len({k % 2 for k in range(5)}) == 2
        assert [(a, b) for a, b in [(1, 2), (3, 4)] if a > 1] == [(3, 4)]


def test_comprehensions_build_lists_of_tiles_and_values():
    x = torch.randn(4, N)
    out = torch.full((4, N), float("nan"))
    scale = 3
    TilesFromComprehensions()(x, out, scale)
    weights = torch.tensor([1.0, 2.0, 0.5, 4.0])[:, None]
    torch.testing.assert_close(out, x * weights * (scale * 3))


class RuntimeIterable(tilus.Script):
    def __call__(self, n: int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        values = [i for i in range(n)]


class RuntimeCondition(tilus.Script):
    def __call__(self, n: int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        values = [i for i in range(4) if i < n]


@pytest.mark.parametrize("script,message", [
    (RuntimeIterable, "range\\(...\\) in a comprehension takes compile-time integers"),
    (RuntimeCondition, "comprehension's condition must be a compile-time value"),
])
def test_runtime_iterables_and_conditions_are_refused(script, message):
    with pytest.raises(ScriptError, match=message) as info:
        script()(3)
    assert "values = [i for i in range(" in str(info.value)


class StarredDisplays(tilus.Script):
    """``(*origin, c)`` and ``[*base, 0]``: a helper's tuple of runtime values unpacked into
    a tuple and an offsets list."""

    def origin(self, r: int32):
        return r, r + 1

    def __call__(self, x: ~float32, out: ~float32, r: int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float32, shape=[4, N])
        go = self.global_view(out, dtype=float32, shape=[4, N])
        first, second, col = (*self.origin(r), 0)
        base = [first]
        row = self.load_global(gx, offsets=[*base, col], shape=[1, N])
        self.store_global(go, row, offsets=[second, *[col]])


def test_starred_items_in_tuple_and_list_displays():
    x = torch.randn(4, N)
    out = torch.full((4, N), float("nan"))
    StarredDisplays()(x, out, 1)
    torch.testing.assert_close(out[2], x[1])
    assert torch.isnan(out[[0, 1, 3]]).all()
