import torch

from .future_annotations_kernel import Scale


def test_string_annotations_are_resolved():
    x = torch.arange(40, dtype=torch.float32)
    Scale()(40, 2.0, x)
    torch.testing.assert_close(x, torch.arange(40, dtype=torch.float32) * 2)
