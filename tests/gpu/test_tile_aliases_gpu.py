"""The scripts of tests/lang/test_tile_aliases.py on the GPU: two names of one register
tile keep Python's semantics in the generated CUDA too (the copy a loop's register
prefetch takes, the swap's copy)."""

import pytest
import torch

from tests.lang import test_tile_aliases as aliases

pytestmark = pytest.mark.gpu


def _run(script, *args):
    x = torch.randn(aliases._Rows.ROWS, 32, device="cuda")
    out = torch.full((aliases._Rows.ROWS, 32), float("nan"), device="cuda")
    script(*args, x, out)
    torch.cuda.synchronize()
    return x, out


def test_rebinding_swap_helper_and_list_loop():
    x, out = _run(aliases.RebindAfterAlias())
    torch.testing.assert_close(out[:2], torch.stack([x[0] + 1, x[0]]))
    x, out = _run(aliases.Swap())
    torch.testing.assert_close(out[:2], torch.stack([x[1], x[0]]))
    x, out = _run(aliases.HelperRebindsItsArgument())
    torch.testing.assert_close(out[:3], torch.stack([x[0], x[0] * 2, x[0] + 1]))
    x, out = _run(aliases.LoopOverTiles())
    torch.testing.assert_close(out, torch.cat([x[:2], x[:2]]))


@pytest.mark.parametrize("n", [1, 3, 4])
def test_register_prefetch_in_a_loop(n):
    x, out = _run(aliases.Prefetch(), n)
    torch.testing.assert_close(out[:n], x[:n] * 2)
    assert torch.isnan(out[n:]).all()


def test_the_split_kv_merge_of_tilus02_flash_attention_v3():
    x, out = _run(aliases.MergeInAHelper(), 1)
    m, l, lhs_m, lhs_l = x
    new_m = torch.maximum(lhs_m, m)
    torch.testing.assert_close(out[0], new_m)
    torch.testing.assert_close(out[1], lhs_l * torch.exp(lhs_m - new_m) + l * torch.exp(m - new_m))


def test_tuple_assignment_of_runtime_scalars():
    out = torch.zeros(4, dtype=torch.int32, device="cuda")
    aliases.ScalarTuples()(3, 7, 10, out)
    assert out.tolist() == [7, 3, 55, 89]


def test_class_member_tiles():
    x, out = _run(aliases.MemberTiles("top"), 0)
    torch.testing.assert_close(out[:2], torch.stack([x[0], x[0] * 2]))
    x, out = _run(aliases.MemberTiles("loop"), 2)
    torch.testing.assert_close(out[1:4], torch.stack([x[0] + x[1] + x[2], x[0], x[0] + x[1]]))


@pytest.mark.parametrize("m", [1, 3])
def test_helper_loops_rebinding_their_argument(m):
    x, out = _run(aliases.HelperLoopRebindsItsArgument("rebound"), 3, m)
    torch.testing.assert_close(out[0], x[0] + 3)
    x, out = _run(aliases.HelperLoopRebindsItsArgument("own tile"), 3, m)
    torch.testing.assert_close(out[:2], torch.stack([x[0], x[0] + 3]))
    x, out = _run(aliases.HelperLoopRebindsItsArgument("caller loop carries it"), 2, m)
    expected = x[0]
    for _ in range(m):
        expected = (expected + 2) * 2
    torch.testing.assert_close(out[0], expected)
