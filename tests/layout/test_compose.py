"""compose / `*` / chaining: the Kronecker-product contract."""

import itertools

import pytest

from tilus.layout import column_local, column_spatial, compose, local, replicate, spatial


def test_hidet_seed_accumulator():
    # warps 4 x 2, warp repeat 2 x 2, lanes 2 x 16, thread tile 4 x 4
    layout = spatial(4, 2) * local(2, 2) * spatial(2, 16) * local(4, 4)
    assert layout.shape == [64, 256]
    assert (layout.num_threads, layout.local_size) == (256, 64)
    seen = set()
    for t in range(256):
        w, lane = divmod(t, 32)
        wm, wn = divmod(w, 2)
        lm, ln = divmod(lane, 16)
        for i in range(64):
            rm, rn, tm, tn = i // 32, (i // 16) % 2, (i // 4) % 4, i % 4
            expected = (wm * 16 + rm * 8 + lm * 4 + tm, wn * 128 + rn * 64 + ln * 4 + tn)
            assert layout.coords(t, i) == expected
            seen.add(expected)
    assert len(seen) == 64 * 256


def test_chained_methods_equal_operator():
    a = spatial(4, 2).local(2, 2).spatial(2, 16).local(4, 4)
    b = spatial(4, 2) * local(2, 2) * spatial(2, 16) * local(4, 4)
    assert a == b
    assert spatial(2, 1).replicate(3) == spatial(2, 1) * replicate(3, rank=2)
    assert local(2, 1).column_spatial(4, 8).column_local(2, 1) == (
        local(2, 1) * column_spatial(4, 8) * column_local(2, 1))


@pytest.mark.parametrize("outer, inner", [
    (spatial(2, 3), local(4, 2)),
    (column_local(2, 2), column_spatial(4, 8)),
    (spatial(2, 1) * replicate(2, 2), local(3, 2)),
])
def test_contract(outer, inner):
    c = compose(outer, inner)
    assert c.num_threads == outer.num_threads * inner.num_threads
    assert c.local_size == outer.local_size * inner.local_size
    for t, i in itertools.product(range(c.num_threads), range(c.local_size)):
        oc = outer.coords(t // inner.num_threads, i // inner.local_size)
        ic = inner.coords(t % inner.num_threads, i % inner.local_size)
        assert c.coords(t, i) == tuple(o * s + x for o, s, x in zip(oc, inner.shape, ic))


def test_rank_mismatch():
    with pytest.raises(ValueError):
        spatial(2) * local(2, 2)
