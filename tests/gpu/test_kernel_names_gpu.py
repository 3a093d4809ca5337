"""Scripts whose class names would make the kernel a C/CUDA builtin (Printf, Main, Float,
Exp) launch on the GPU under their suffixed symbol and compute the right values."""

import pytest
import torch

from tests.codegen.test_kernel_names_source import _script

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("class_name", ["Printf", "Main", "Float", "Exp", "AddOne"])
def test_builtin_named_scripts_run(class_name):
    x = torch.randn(32, device="cuda")
    y = torch.full((32,), float("nan"), device="cuda")
    _script(class_name)()(x, y)
    torch.testing.assert_close(y, x * 2)
