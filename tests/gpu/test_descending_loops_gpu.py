"""Loops that count down on the GPU: the script and expectations of
tests/interp/test_descending_loops.py."""

import pytest
import torch

from tests.interp.test_descending_loops import Countdown, expected

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("mode", ["range -1", "range -3", "self.range -2 unroll 2", "break"])
@pytest.mark.parametrize("a,b", [(10, 0), (7, -3), (3, 3), (2, 5)])
def test_descending_loops_gpu(mode, a, b):
    out = torch.full((16,), -1, dtype=torch.int32, device="cuda")
    Countdown(mode)(a, b, out)
    assert out.tolist() == expected(mode, a, b)
