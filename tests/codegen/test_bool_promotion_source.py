"""A boolean tile combined with numbers compiles (NVRTC, sm_80 and sm_90a), computing in
the promoted type: `mask * 3` declares an int tile, `mask * 2.5` a float one."""

import pytest
import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.interp.test_bool_promotion import BoolArith

require_nvrtc()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("n", [37, 64])
def test_bool_promotion_compiles(arch, n):
    src = kernel_source(BoolArith(n), (torch.zeros(n), torch.zeros(6, n)), arch)
    assert "int a[" in src and "float c[" in src
