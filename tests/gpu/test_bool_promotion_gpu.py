"""A boolean tile combined with numbers on the GPU (mask * 3, mask - 1, mask * 2.5, 7 + mask,
mask * int tile, mask == 1) against torch: random data, odd sizes, output poisoned."""

import pytest
import torch

from tests.interp.test_bool_promotion import bool_reference, run_bool_arith

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("n", [1, 37, 64, 100, 333])
def test_bool_tiles_promote_with_numbers(n):
    x, y = run_bool_arith(n, device="cuda")
    torch.testing.assert_close(y, bool_reference(x))
