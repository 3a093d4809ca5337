"""tilus.utils.check_tensor: what the examples' torch-facing wrappers check before a
kernel reads or writes a tensor through a raw pointer."""

import pytest
import torch

from tilus.utils import check_tensor


def test_an_exact_tensor_passes():
    check_tensor(torch.zeros(3, 4), "out", (3, 4), torch.float32, torch.device("cpu"), "f")


@pytest.mark.parametrize("t,got", [
    (torch.zeros(4, 4), "got torch.float32 [4, 4] on cpu"),
    (torch.zeros(3, 4, dtype=torch.float16), "got torch.float16 [3, 4] on cpu"),
    (torch.zeros(4, 3).t(), "got a non-contiguous torch.float32 [3, 4] on cpu"),
    (torch.empty(3, 4, device="meta"), "got torch.float32 [3, 4] on meta"),
])
def test_a_mismatch_is_refused_naming_owner_and_parameter(t, got):
    with pytest.raises(ValueError) as info:
        check_tensor(t, "out", (3, 4), torch.float32, torch.device("cpu"), "softmax")
    assert str(info.value) == f"softmax: out must be a contiguous torch.float32 [3, 4] tensor on cpu, {got}"
    with pytest.raises(ValueError, match=r"^weight must be"):  # no owner: no prefix
        check_tensor(t, "weight", (3, 4), torch.float32, torch.device("cpu"))
