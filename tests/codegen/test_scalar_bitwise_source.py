"""Runtime scalars' shifts compile through tilus::shl / tilus::shr (the defined results of
shift amounts C leaves undefined), and every operator's kernel compiles with NVRTC."""

import pytest
import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.interp.test_scalar_bitwise import OPS, TYPES, Bitwise

require_nvrtc()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", list(TYPES), ids=lambda t: t.name)
@pytest.mark.parametrize("op", OPS)
def test_bitwise_scripts_compile(op, dtype, arch):
    t = torch.zeros(4, dtype=TYPES[dtype][0])
    source = kernel_source(Bitwise(op, dtype), (4, t, t, t), arch)
    if op in ("<<", ">>"):
        assert ("tilus::shl<" if op == "<<" else "tilus::shr<") in source
