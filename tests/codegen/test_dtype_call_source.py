"""A script that calls data types (``float16(1.0)``, ``int32(x)``, ``float32(tile)``,
Tilus 0.2's spelling) compiles through NVRTC, the constant in the type it names."""

import pytest
import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.lang.test_dtype_call import Scaled

require_nvrtc()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_dtype_calls_compile(arch):
    src = kernel_source(Scaled(), (300, torch.zeros(300).half(), torch.zeros(300), 0.5), arch)
    assert "tilus::add2(" in src  # tile + float16 constant: a paired half add
