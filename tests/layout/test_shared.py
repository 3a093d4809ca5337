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


def test_tiles_of_one_row_per_stage_are_not_swizzled():
    # [stages, 1, n] (a scale row per pipeline stage): a row never conflicts with itself,
    # and unswizzled the stage moves an address by a stride, not through the XOR
    assert auto_shared_layout([4, 1, 256], "float16") == shared_row_major(4, 1, 256)
    assert auto_shared_layout([1, 256], "float16") == shared_row_major(1, 256)
    assert auto_shared_layout([4, 2, 256], "float16").is_swizzled()


# ---- wgmma operand layouts: the swizzle must be the hardware's, which XORs address bits
# [4, 4 + b) with bits [7, 7 + b) of the byte address (b = 3 for 128-byte, 2 for 64-byte).

def _hardware_swizzle(byte_address, bits):
    return byte_address ^ (((byte_address >> 7) & ((1 << bits) - 1)) << 4)


@pytest.mark.parametrize("shape", [[3, 128, 32], [4, 64, 32]])
def test_wgmma_k_major_64_byte_rows_match_the_hardware_swizzle(shape):
    from tilus.layout import shared_wgmma_operand

    layout = shared_wgmma_operand(shape, 2)
    assert layout == shared_swizzled(shape, 2) and layout.col_block == 0
    for s, r, c in itertools.product(range(shape[0]), range(shape[1]), range(0, shape[2], 8)):
        plain = ((s * shape[1] + r) * shape[2] + c) * 2
        assert layout.offset(s, r, c) * 2 == _hardware_swizzle(plain, 2)
        assert layout.unswizzled_offset(s, r, c) * 2 == plain


@pytest.mark.parametrize("shape", [[3, 32, 128], [2, 64, 256], [4, 16, 64]])
def test_wgmma_n_major_tiles_are_128_byte_column_blocks_with_the_hardware_swizzle(shape):
    from tilus.layout import shared_wgmma_operand

    stages, rows, cols = shape
    layout = shared_wgmma_operand(shape, 2)
    assert layout.col_block == (64 if cols > 64 else 0)
    seen = set()
    for s, r, c in itertools.product(range(stages), range(rows), range(cols)):
        # block of 64 columns, then rows of 128 bytes inside it
        plain = (s * rows * cols + (c // 64) * rows * 64 + r * 64 + c % 64) * 2
        assert layout.offset(s, r, c) * 2 == _hardware_swizzle(plain, 3), (s, r, c)
        assert layout.unswizzled_offset(s, r, c) * 2 == plain
        seen.add(layout.offset(s, r, c))
    assert len(seen) == stages * rows * cols == layout.size


def test_wgmma_operand_needs_64_or_128_byte_multiples():
    from tilus.layout import shared_wgmma_operand

    assert shared_wgmma_operand([64, 16], 2) is None   # 32-byte rows
    assert shared_wgmma_operand([64, 48], 2) is None   # 96-byte rows
    assert shared_wgmma_operand([64, 32], 2).swizzle_chunks == 4
