"""Dot operands streamed into the dot's k loop (tests/codegen/test_streamed_operands_source.py)
on the GPU against torch: fresh random data, shapes that are not multiples of the tiles,
the output poisoned with NaN."""

import pytest
import torch

from tests.interp.test_streamed_operands import run_two_dots

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("between", ["registers", "store", "sync"])
@pytest.mark.parametrize("config", [dict(), dict(d=128, bq=128, bkv=64, warps=8), dict(d=64, bq=32, bkv=64, warps=2),
                                    dict(d=128, bq=64, bkv=32, warps=4)])
def test_two_dots_over_shared_tiles(between, config):
    o, ref = run_two_dots(m=301, n=517, device="cuda", between=between, **config)
    torch.testing.assert_close(o, ref, rtol=2e-2, atol=2e-2)
