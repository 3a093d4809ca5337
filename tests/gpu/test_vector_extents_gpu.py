"""A runtime row length that is not a multiple of 16 takes the unaligned build and stays
correct; one that is takes the vectorised build (tests/codegen/test_vector_extents.py)."""

import logging

import pytest
import torch

from tests.codegen.test_vector_extents import RowScale, RowScaleByLength

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("n", [1024, 1000, 1017, 512, 16])
def test_row_scale_at_any_runtime_extent(n):
    m = 37
    x = torch.randn(m, n, device="cuda").half()
    y = torch.full_like(x, float("nan"))
    kernel = RowScale()
    for _ in range(2):  # the second call goes through the native launcher
        y.fill_(float("nan"))
        kernel(m, n, x, y)
        torch.testing.assert_close(y, (x.float() * 2).half())


@pytest.mark.parametrize("batch, n", [(3, 1024), (5, 1000), (16, 1024)])
def test_rows_scaled_by_lengths_at_any_batch(batch, n):
    """A [batch] lengths view read element by element: any batch keeps the aligned build
    (n = 1000 takes the unaligned one), the rows stay right."""
    lengths = torch.randint(1, 9, (batch,), device="cuda", dtype=torch.int32)
    x = torch.randn(batch, n, device="cuda").half()
    y = torch.full_like(x, float("nan"))
    kernel = RowScaleByLength()
    for _ in range(2):  # the second call goes through the native launcher
        y.fill_(float("nan"))
        kernel(batch, n, lengths, x, y)
        torch.testing.assert_close(y, (x.float() * lengths[:, None].float()).half())


class RowScaleOfItsOwn(RowScale):
    """RowScale with launches of its own (instances are shared per class and arguments: the
    tests above have built RowScale's unaligned variant already)."""


def test_the_first_unaligned_launch_says_why(caplog):
    x = torch.randn(4, 1000, device="cuda").half()
    y = torch.empty_like(x)
    kernel = RowScaleOfItsOwn()
    with caplog.at_level(logging.INFO, logger="tilus.launch"):
        kernel(4, 1000, x, y)
        kernel(4, 1000, x, y)
    said = [r.getMessage() for r in caplog.records if r.name == "tilus.launch"]
    assert len(said) == 1, said  # once per variant, not per call
    assert "unaligned build" in said[0] and "'n' = 1000" in said[0]
