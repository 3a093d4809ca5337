"""Tilus 0.2's RegisterLayout vocabulary on tilus layouts (python/tilus/layout.py): size,
spatial_shape / local_shape / spatial_size, ``/``, get_local / get_global, and the layout
algebra the A16Wx quantization example builds its weight layouts with (reduce,
spatial(..., ranks=...), concat), each checked against coordinates worked out by hand."""

import pytest

from tilus.ir.layout.ops import concat, local, reduce, spatial
from tilus.layout import column_spatial


def test_sizes():
    layout = local(2, 1) * column_spatial(4, 8) * local(2, 1)  # an m16n8k16 B fragment
    assert layout.size == 16 * 8 == layout.numel
    assert layout.local_size == 4 and layout.spatial_size == 32
    assert sorted(layout.spatial_shape) == [4, 8] and sorted(layout.local_shape) == [2, 2]
    replicated = reduce(spatial(2, 4), dims=[0])  # 4 columns, each held by 2 threads
    assert replicated.shape == [4] and replicated.spatial_size == 8 and replicated.size == 4
    assert 2 in replicated.spatial_shape


def test_divide_operator_and_index_helpers():
    inner = spatial(8, 4) * local(1, 2)
    outer = spatial(2, 1) * local(1, 3)
    layout = outer * inner
    assert layout / inner == outer
    with pytest.raises(ValueError, match="is not a tile of"):
        spatial(3) / spatial(2)
    for t, l in [(0, 0), (37, 5), (63, 1)]:
        coords = layout.get_global(spatial_index=t, local_index=l)
        assert coords == list(layout.coords(t, l))
        assert layout.get_local(coords) == l


def test_ranked_spatial_reduce_and_concat_as_the_a16wx_example_uses_them():
    wsm, wsn = 2, 4
    # warps (1, wsn, wsm) with dimension 2 (wsm) ranked before dimension 1 (wsn): warp
    # w = i * wsn + j sits at (0, j, i); reducing dimension 2 leaves every grid row's
    # warps holding column j
    warps = reduce(spatial(1, wsn, wsm, ranks=[0, 2, 1]), dims=[2])
    assert warps.shape == [1, wsn] and warps.num_threads == wsm * wsn
    for w in range(wsm * wsn):
        assert tuple(warps.coords(w, 0)) == (0, w % wsn)
    flat = local(2).spatial(32).local(4)  # 2 x 32 x 4 bytes: each lane 2 runs of 4 bytes
    assert [flat.coords(5, e) for e in range(8)] == [(20 + e % 4 + 128 * (e // 4),) for e in range(8)]
    tiles = concat(warps.local(1, 2), flat)
    assert tiles.shape == [1, 2 * wsn, 256] and tiles.local_size == 2 * 8
    for w, lane, e in [(0, 0, 0), (5, 3, 9), (7, 31, 15)]:
        tile, byte = divmod(e, 8)  # the concatenated layout's local index: lhs outer
        assert tuple(tiles.coords(32 * w + lane, e)) == (0, (w % wsn) * 2 + tile, flat.coords(lane, byte)[0])
    # keepdims: a reduction's layout keeps the reduced dimension with extent 1
    c = spatial(4, 8) * local(2, 2)
    kept = reduce(c, dims=[0], keepdims=True)
    assert kept.shape == [1, 16]
    assert tuple(kept.coords(9, 1)) == (0, (9 % 8) * 2 + 1)


def test_shared_row_major_swizzle_takes_tilus_02s_shapes():
    from tilus.ir.layout.ops import shared_row_major_swizzle
    from tilus.layout import shared_row_major, shared_swizzled

    # rows of 64 / 128 bytes: tilus's swizzle
    assert shared_row_major_swizzle([3, 32, 32], 2) == shared_swizzled([3, 32, 32], 2)
    assert shared_row_major_swizzle([16, 64], 2).is_swizzled()
    # rows of 16 or 32 bytes, which Tilus 0.2 swizzles across rows: row-major here (the code
    # generator picks a shared tile's layout anyway)
    assert shared_row_major_swizzle([3, 32, 16], 2) == shared_row_major(3, 32, 16)
    assert shared_row_major_swizzle([8, 4], 4) == shared_row_major(8, 4)
    for shape, nbytes, what in [([64], 2, "two dimensions"), ([12, 32], 2, "multiple of 8 rows"),
                                ([8, 12], 2, "multiple of 16 bytes"), ([8, 8], 3, "divide 16")]:
        with pytest.raises(ValueError, match=what):
            shared_row_major_swizzle(shape, nbytes)
