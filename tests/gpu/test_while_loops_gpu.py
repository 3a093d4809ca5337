"""`while` loops on the GPU (tests/lang/test_while_loops.py): a test reducing a tile the
body updates, a test with an atomic, while True / while False."""

import pytest
import torch

from tests.lang.test_while_loops import _run, expected_sum

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("limit", [0.0, 50.0, 1000.0])
def test_a_test_reducing_a_tile_the_body_updates_gpu(limit):
    x, _, out = _run("sum", limit=limit, device="cuda")
    total, k = expected_sum(x, limit)
    assert out[1].item() == k
    torch.testing.assert_close(out[0].item(), total, rtol=1e-5, atol=1e-4)


def test_effects_and_constant_tests_gpu():
    _, counter, out = _run("atomic", device="cuda")
    assert out[1].item() == 5 and counter.item() == 6
    assert _run("true", n=4, device="cuda")[2][1].item() == 4
    assert _run("false", n=4, device="cuda")[2][1].item() == 0
