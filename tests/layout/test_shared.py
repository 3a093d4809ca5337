"""Shared layouts: strided offsets; the swizzle is a bijection without bank conflicts."""

import itertools

import pytest

from tilus.layout import auto_shared_layout, shared_column_major, shared_row_major, \
    shared_swizzled


def test_strided():
    rm, cm = shared_row_major(4, 6), shared_column_major(4, 6)
    for i, j in itertools.product(range(4), range(6)):
        assert rm.offset(i, j) == i * 6 + j
        assert cm.offset([i, j]) == i + 4 * j
    assert rm.size == 24 and not rm.is_swizzled()
    assert str(rm) == "SharedLayout(row_major, shape=[4, 6])"


CASES = [([64, 32], 2), ([32, 64], 2), ([8, 256], 2), ([16, 16], 4), ([16, 96], 2),
         ([16, 128], 1), ([3, 16, 64], 2)]


@pytest.mark.parametrize("shape, nbytes", CASES)
def test_swizzle_bijective_within_rows(shape, nbytes):
    layout = shared_swizzled(shape, nbytes)
    cols = shape[-1]
    offsets = []
    for idx, c in enumerate(itertools.product(*(range(s) for s in shape))):
        off = layout.offset(*c)
        assert off // cols == idx // cols  # each row is a permutation of itself
        offsets.append(off)
    assert sorted(offsets) == list(range(len(offsets)))


@pytest.mark.parametrize("shape, nbytes", CASES)
def test_swizzle_conflict_free(shape, nbytes):
    layout = shared_swizzled(shape, nbytes)
    rows, cols, chunk = shape[-2], shape[-1], 16 // nbytes
    lead = shape[:-2]
    for outer in itertools.product(*(range(s) for s in lead)):
        for r0 in range(rows - 7):
            for col in range(0, cols, chunk):
                # 32 banks x 4 bytes = 8 groups of 16 bytes
                groups = {layout.offset(*outer, r, col) * nbytes // 16 % 8 for r in range(r0, r0 + 8)}
                assert len(groups) == 8


def test_row_major_would_conflict():
    plain = shared_row_major(32, 64)  # 128-byte fp16 rows
    assert len({plain.offset(r, 0) * 2 // 16 % 8 for r in range(8)}) == 1


def test_swizzle_requirements():
    with pytest.raises(ValueError):
        shared_swizzled([16, 16], 2)  # 32-byte rows
    with pytest.raises(ValueError):
        shared_swizzled([64], 2)
    assert auto_shared_layout([16, 16], 2) == shared_row_major(16, 16)
    assert auto_shared_layout([16, 64], "float16").is_swizzled()
