"""NaN and the infinities as float16 / bfloat16 tile constants on the GPU, against torch
(tests/codegen/test_special_float_constants.py checks the source and the interpreter)."""

import pytest
import torch

from tests.codegen.test_special_float_constants import SPECIALS, TORCH, SpecialFill, expected
from tilus import bfloat16, float16

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", [float16, bfloat16])
@pytest.mark.parametrize("value", SPECIALS)
def test_special_constants_on_the_gpu(dtype, value):
    x = torch.randn(64, device="cuda").to(TORCH[dtype])
    y = torch.zeros_like(x)
    SpecialFill(dtype, value)(64, x, y)
    torch.testing.assert_close(y, expected(x, value), equal_nan=True)
