"""tilus.utils.check_tensor and check_same_device: what the examples' torch-facing
wrappers check before a kernel reads or writes a tensor through a raw pointer."""

import pytest
import torch

from tilus.utils import check_same_device, check_tensor


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


def test_tensors_on_different_devices_are_refused_naming_each():
    cpu, meta = torch.zeros(2), torch.empty(2, device="meta")
    check_same_device("f", a=cpu, b=torch.ones(3))
    with pytest.raises(ValueError) as info:
        check_same_device("matmul", a=cpu, b=meta)
    assert str(info.value) == "matmul: a and b must be on one device, got a on cpu, b on meta"
    with pytest.raises(ValueError) as info:
        check_same_device("attention", q=cpu, k=cpu, v=meta)
    assert str(info.value) == "attention: q, k, v must be on one device, got q on cpu, k on cpu, v on meta"
