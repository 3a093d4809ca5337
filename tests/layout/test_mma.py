"""mma atoms against the PTX ISA fragment tables, and the block-level mma/simt layouts."""

import pytest

from tilus.layout import column_local, local, mma_atom, mma_block_layouts, mma_kind_for, \
    simt_block_layouts, spatial


# PTX ISA "Matrix Fragments for mma.m16n8k16 / m16n8k32": g = lane >> 2, q = lane % 4
def a_f16(lane, i):
    g, q = lane // 4, lane % 4
    return (g + (8 if i in (2, 3, 6, 7) else 0), q * 2 + (i & 1) + (8 if i >= 4 else 0))


def b_f16(lane, i):
    return ((lane % 4) * 2 + (i & 1) + (8 if i >= 2 else 0), lane // 4)


def c_any(lane, i):
    return (lane // 4 + (8 if i >= 2 else 0), (lane % 4) * 2 + (i & 1))


def a_s8(lane, i):
    g, q = lane // 4, lane % 4
    return (g + (8 if (4 <= i < 8 or i >= 12) else 0), q * 4 + (i & 3) + (16 if i >= 8 else 0))


def b_s8(lane, i):
    return ((lane % 4) * 4 + (i & 3) + (16 if i >= 4 else 0), lane // 4)


ATOMS = {"m16n8k16": (a_f16, b_f16, 8, 4), "m16n8k32": (a_s8, b_s8, 16, 8)}


@pytest.mark.parametrize("kind", list(ATOMS))
def test_atom_matches_ptx(kind):
    fa, fb, na, nb = ATOMS[kind]
    atom = mma_atom(kind)
    assert (atom["m"], atom["n"]) == (16, 8)
    assert atom["a"].local_size == na and atom["b"].local_size == nb
    for lane in range(32):
        assert [atom["a"].coords(lane, i) for i in range(na)] == [fa(lane, i) for i in range(na)]
        assert [atom["b"].coords(lane, i) for i in range(nb)] == [fb(lane, i) for i in range(nb)]
        assert [atom["c"].coords(lane, i) for i in range(4)] == [c_any(lane, i) for i in range(4)]


def test_atom_spelling():
    assert mma_atom("m16n8k16")["a"] == column_local(2, 2) * spatial(8, 4) * local(1, 2)
    assert mma_kind_for("bfloat16") == "m16n8k16"
    assert mma_kind_for("int8") == "m16n8k32"
    assert mma_kind_for("float32") is None


@pytest.mark.parametrize("kind, m, n, k, warps, grid", [
    ("m16n8k16", 64, 128, 32, 4, (2, 2)),
    ("m16n8k16", 128, 128, 16, 8, (4, 2)),
    ("m16n8k16", 32, 256, 32, 4, (1, 4)),
    ("m16n8k16", 16, 8, 16, 1, (1, 1)),
    ("m16n8k32", 64, 64, 64, 4, (2, 2)),
])
def test_block_layouts(kind, m, n, k, warps, grid):
    r = mma_block_layouts(kind, m, n, k, warps)
    wm, wn = grid
    assert (r["warps_m"], r["warps_n"]) == grid
    fa, fb, na, nb = ATOMS[kind]
    ak = 16 if kind == "m16n8k16" else 32
    rep_m, rep_n, rep_k = m // (wm * 16), n // (wn * 8), k // ak
    assert (r["rep_m"], r["rep_n"], r["rep_k"]) == (rep_m, rep_n, rep_k)
    for name in "abc":
        assert r[name].num_threads == warps * 32
    owners = {}
    for t in range(warps * 32):
        w, lane = divmod(t, 32)
        wi, wj = divmod(w, wn)
        for im in range(rep_m):
            for jn in range(rep_n):
                for i in range(4):
                    e = c_any(lane, i)
                    want = ((wi * rep_m + im) * 16 + e[0], (wj * rep_n + jn) * 8 + e[1])
                    assert r["c"].coords(t, (im * rep_n + jn) * 4 + i) == want
                    owners[want] = owners.get(want, 0) + 1
            for ik in range(rep_k):
                for i in range(na):
                    e = fa(lane, i)
                    want = ((wi * rep_m + im) * 16 + e[0], ik * ak + e[1])
                    assert r["a"].coords(t, (im * rep_k + ik) * na + i) == want
        for ik in range(rep_k):
            for jn in range(rep_n):
                for i in range(nb):
                    e = fb(lane, i)
                    want = (ik * ak + e[0], (wj * rep_n + jn) * 8 + e[1])
                    assert r["b"].coords(t, (ik * rep_n + jn) * nb + i) == want
    assert len(owners) == m * n and set(owners.values()) == {1}


def test_block_layouts_errors():
    with pytest.raises(ValueError, match="k % 16"):
        mma_block_layouts("m16n8k16", 16, 8, 8, 1)
    with pytest.raises(ValueError, match="no grid"):
        mma_block_layouts("m16n8k16", 16, 8, 16, 2)
    with pytest.raises(ValueError):
        mma_block_layouts("m8n8k4", 16, 8, 16, 1)


@pytest.mark.parametrize("m, n, k, warps", [(64, 256, 8, 8), (16, 16, 4, 4), (4, 4, 2, 1)])
def test_simt_block_layouts(m, n, k, warps):
    r = simt_block_layouts(m, n, k, warps)
    a, b, c = r["a"], r["b"], r["c"]
    assert a.num_threads == b.num_threads == c.num_threads == warps * 32
    assert (a.shape, b.shape, c.shape) == ([m, k], [k, n], [m, n])
    # every thread holds the A row / B column of each of its C elements, at a local index
    # that does not depend on the thread
    a_at = {}
    b_at = {}
    for t in range(warps * 32):
        rows = {a.coords(t, i): i for i in range(a.local_size)}
        cols = {b.coords(t, i): i for i in range(b.local_size)}
        for i in range(c.local_size):
            row, col = c.coords(t, i)
            for kk in range(k):
                la, lb = rows[(row, kk)], cols[(kk, col)]
                assert a_at.setdefault((i, kk), la) == la
                assert b_at.setdefault((i, kk), lb) == lb


def test_simt_hidet_seed_choice():
    r = simt_block_layouts(64, 256, 8, 8)
    assert r["c"] == spatial(2, 4) * local(2, 2) * spatial(4, 8) * local(4, 4)
