"""The register layouts of shape changes (csrc/layout/register_views.h): every thread
keeps exactly its registers, so (thread, local) must address the element the operand's
layout put there, moved as torch's reshape / permute / repeat / repeat_interleave move it."""

import itertools

import pytest

from tilus._C import layout as L
from tilus.layout import auto_global_layout, column_spatial, local, replicate, spatial


def _row_major(c, shape):
    i = 0
    for x, s in zip(c, shape):
        i = i * s + x
    return i


def _unravel(i, shape):
    out = []
    for s in reversed(shape):
        out.append(i % s)
        i //= s
    return tuple(reversed(out))


LAYOUTS = [
    spatial(4, 8) * local(2, 4),                         # [8, 32]
    local(2, 1) * spatial(4, 8) * local(1, 4),           # [8, 32]
    column_spatial(4, 8) * local(3, 2),                  # [12, 16]
    spatial(2, 1) * replicate(4, 2) * local(3, 5),       # [6, 5], replicated
    auto_global_layout([6, 10], 32, 4),
    auto_global_layout([64, 32], 128, 4),
    spatial(2, 2, 8) * local(1, 3, 2),                   # [2, 6, 16]
]


def _check_same_registers(a, b, index_in_a):
    """b's (t, l) holds the element of a's (t, l') mapped by index_in_a."""
    assert a.num_threads == b.num_threads
    assert a.local_size == b.local_size
    for t in range(a.num_threads):
        for l in range(a.local_size):
            assert index_in_a(b.coords(t, l)) == a.coords(t, l), (t, l)


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_reshape_keeps_every_register(layout):
    shape = list(layout.shape)
    numel = 1
    for s in shape:
        numel *= s
    candidates = {(numel,), tuple([1] + shape), tuple(shape + [1])}
    for k in range(1, len(shape)):  # merge neighbours
        candidates.add(tuple(shape[:k - 1] + [shape[k - 1] * shape[k]] + shape[k + 1:]))
    for d, s in enumerate(shape):  # split a dimension by its divisors
        for f in range(2, s):
            if s % f == 0:
                candidates.add(tuple(shape[:d] + [f, s // f] + shape[d + 1:]))
    derived = 0
    for new in candidates:
        out = L.reshape_layout(layout, list(new))
        if out is None:
            continue
        derived += 1
        assert list(out.shape) == list(new)
        _check_same_registers(layout, out, lambda c: _unravel(_row_major(c, new), shape))
    assert derived >= 3


def test_reshape_that_cuts_a_mode_is_refused():
    # 6 rows over 6 spatial threads, then [4, 15]: a row boundary at 4 falls inside
    # the thread mode of 6 and the registers cannot stay.
    layout = spatial(6, 1) * local(1, 10)
    assert L.reshape_layout(layout, [4, 15]) is None
    assert L.reshape_layout(layout, [60]) is not None
    assert L.reshape_layout(layout, [7, 9]) is None  # another element count


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_permute_keeps_every_register(layout):
    rank = len(layout.shape)
    for dims in itertools.permutations(range(rank)):
        out = L.permute_layout(layout, list(dims))
        assert list(out.shape) == [layout.shape[d] for d in dims]

        def back(c, dims=dims):
            x = [0] * rank
            for i, d in enumerate(dims):
                x[d] = c[i]
            return tuple(x)

        _check_same_registers(layout, out, back)


@pytest.mark.parametrize("layout", LAYOUTS[:5], ids=str)
@pytest.mark.parametrize("interleave", [False, True])
def test_repeat_holds_copies_of_the_threads_own_elements(layout, interleave):
    reps = [3, 2] if len(layout.shape) == 2 else [2] * len(layout.shape)
    f = L.repeat_interleave_layout if interleave else L.repeat_layout
    out = f(layout, reps)
    shape = list(layout.shape)
    assert list(out.shape) == [s * r for s, r in zip(shape, reps)]
    assert out.num_threads == layout.num_threads
    lx = layout.local_size
    copies = out.local_size // lx
    assert copies == reps[0] * reps[1]
    for t in range(out.num_threads):
        for l in range(out.local_size):
            c = out.coords(t, l)
            src = tuple(x // r for x, r in zip(c, reps)) if interleave else tuple(x % s for x, s in zip(c, shape))
            ls = l // copies if interleave else l % lx
            assert layout.coords(t, ls) == src
