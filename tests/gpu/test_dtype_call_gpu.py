"""Calling data types in a script (Tilus 0.2's ``float16(1.0)``) on the GPU, against the
interpreter's result for the same input."""

import pytest
import torch

from tests.lang.test_dtype_call import Scaled

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_dtype_calls_on_gpu_match_interpreter():
    n = 1000
    x = torch.randn(n).half()
    cpu = torch.full((n,), float("nan"))
    Scaled()(n, x, cpu, 0.75)
    gpu = torch.full((n,), float("nan"), device="cuda")
    Scaled()(n, x.cuda(), gpu, 0.75)
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=0, atol=0)
