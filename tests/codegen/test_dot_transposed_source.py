"""A dot fed by a transpose / permute / reshape chain of a register tile compiles (NVRTC,
sm_80 and sm_90a) and moves no data: layout inference runs the view's layout rule
backwards, so the untransposed tile is loaded straight into the layout the dot wants of
its transpose (no layout conversion through shared memory, no barrier)."""

import pytest
import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.interp.test_dot_transposed import DotTransposed
from tilus import float16, float32

require_nvrtc()

ARGS = (torch.zeros(100, 70), torch.zeros(75, 70), torch.zeros(100, 75), 100, 75, 70)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("via", ["transpose", "method", "permute", "chain"])
@pytest.mark.parametrize("operand", ["a", "b"])
@pytest.mark.parametrize("dtype", [float16, float32])
def test_a_transposed_dot_operand_stays_in_registers(arch, via, operand, dtype):
    src = kernel_source(DotTransposed(via, operand, dtype), ARGS, arch)
    assert "through shared memory" not in src
    assert "__syncthreads" not in src
    if dtype == float16:
        assert "mma" in src

