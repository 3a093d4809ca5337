"""divide: the inverse of compose."""

import pytest

from tilus.layout import column_local, column_spatial, divide, local, mma_atom, \
    mma_block_layouts, replicate, spatial


@pytest.mark.parametrize("outer, inner", [
    (spatial(4, 2) * local(2, 2), spatial(2, 16) * local(4, 4)),
    (spatial(2, 2), spatial(2, 2)),  # merged with the outer mode in the product
    (local(2, 1) * replicate(2, 2), spatial(8, 4) * local(1, 2)),
    (spatial(3, 1) * replicate(4, 2), replicate(2, 2) * local(1, 4)),
    (local(2, 2), column_local(2, 2) * spatial(8, 4) * local(1, 2)),
])
def test_compose_then_divide(outer, inner):
    assert divide(outer * inner, inner) == outer


def test_divide_block_by_atom():
    blk = mma_block_layouts("m16n8k16", 64, 128, 32, 4)
    assert divide(blk["c"], mma_atom("m16n8k16")["c"]) == spatial(2, 2) * local(2, 8)


def test_no_quotient():
    assert divide(spatial(4) * local(2), spatial(4)) is None
    assert divide(spatial(2, 3), spatial(2, 2)) is None
    assert divide(spatial(4, 4), column_spatial(2, 2)) is None
