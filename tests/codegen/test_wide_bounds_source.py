"""The bounds test of a global access compares in 64 bits when the view's sizes are int64
(a dimension of 2^32 or more was cut to 32 bits), in 32 bits otherwise; both compile."""

import pytest
import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.interp.test_offset_overflow import Rows, Rows64

require_nvrtc()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_bounds_tests_take_the_width_of_the_sizes(arch):
    x = torch.zeros(1, 32, dtype=torch.float16)
    wide = kernel_source(Rows64(), (1, 32, x, x), arch, aligned=False)
    assert "(unsigned long long)(m)" in wide and "(unsigned)(m)" not in wide
    narrow = kernel_source(Rows(), (1, 32, x, x), arch, aligned=False)
    assert "(unsigned)(m)" in narrow and "unsigned long long" not in narrow
