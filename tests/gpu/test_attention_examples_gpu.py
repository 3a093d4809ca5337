"""examples/flash_attention.py and examples/decode_attention.py on the GPU against torch's
scaled_dot_product_attention in float32: every tuning configuration of flash attention
(each its own wgmma kernel on Hopper, S = Q K^T reading K K-major), odd sequence lengths,
grouped-query heads, causal and not, head dims 64 and 128, fp16 and bf16; decode over
ragged lengths up to 64k with several split counts. Outputs start as NaN."""

import pytest
import torch

from tests.conftest import load_example

pytestmark = pytest.mark.gpu

# the autotuner's space itself (each fits the opt-in shared memory of an H100 block:
# tests/codegen/test_attention_smem.py)
CONFIGS = load_example("flash_attention").CONFIGS


def _tol(dtype):
    return dict(atol=2e-2, rtol=2e-2) if dtype == torch.float16 else dict(atol=4e-2, rtol=4e-2)


def _qkv(batch, seqlen, heads, kv_heads, d, dtype):
    q = torch.randn(batch, seqlen, heads, d, device="cuda").to(dtype)
    k = torch.randn(batch, seqlen, kv_heads, d, device="cuda").to(dtype)
    v = torch.randn(batch, seqlen, kv_heads, d, device="cuda").to(dtype)
    return q, k, v


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_every_config(example, config, causal):
    fa = example("flash_attention")
    warps, bq, bkv, stages = config
    # 1000 is not a multiple of any block; causal blocks run in reverse order
    for seqlen, d, dtype in [(1000, 128, torch.float16), (333, 64, torch.bfloat16)]:
        q, k, v = _qkv(2, seqlen, 8, 2, d, dtype)
        out = torch.full_like(q, float("nan"))
        fa.flash_attention(q, k, v, causal, out=out,
                           config={"warps": warps, "block_q": bq, "block_kv": bkv, "stages": stages})
        torch.testing.assert_close(out.float(), fa.attention_reference(q, k, v, causal), **_tol(dtype))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("batch,seqlen,heads,kv_heads,d", [
    (1, 4096, 32, 8, 128), (2, 1023, 16, 4, 128), (3, 129, 4, 1, 64), (1, 1, 2, 2, 128), (1, 2049, 64, 8, 64)])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_autotuned(example, dtype, batch, seqlen, heads, kv_heads, d, causal):
    fa = example("flash_attention")
    q, k, v = _qkv(batch, seqlen, heads, kv_heads, d, dtype)
    out = torch.full_like(q, float("nan"))
    fa.flash_attention(q, k, v, causal, out=out)
    torch.testing.assert_close(out.float(), fa.attention_reference(q, k, v, causal), **_tol(dtype))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("batch,max_kv,heads,kv_heads,splits", [
    (16, 65536, 32, 8, None), (5, 3001, 32, 8, 7), (3, 777, 8, 8, None), (4, 64, 16, 2, 3)])
def test_decode_attention(example, dtype, batch, max_kv, heads, kv_heads, splits):
    da = example("decode_attention")
    q = torch.randn(batch, heads, 128, device="cuda").to(dtype)
    k = torch.randn(batch, max_kv, kv_heads, 128, device="cuda").to(dtype)
    v = torch.randn(batch, max_kv, kv_heads, 128, device="cuda").to(dtype)
    lengths = torch.randint(1, max_kv + 1, (batch,), dtype=torch.int32, device="cuda")
    lengths[0], lengths[-1] = max_kv, 1
    out = torch.full_like(q, float("nan"))
    da.decode_attention(q, k, v, lengths, out=out, num_splits=splits)
    torch.testing.assert_close(out.float(), da.decode_reference(q, k, v, lengths), **_tol(dtype))


def test_decode_attention_clamps_lengths_outside_the_cache(example):
    """A length past max_kv attends to the whole cache (the last sequence's cache ends the
    tensor: nothing is read past it); zero or negative gives zeros."""
    da = example("decode_attention")
    batch, max_kv = 4, 3001
    q = torch.randn(batch, 32, 128, device="cuda").to(torch.float16)
    k = torch.randn(batch, max_kv, 8, 128, device="cuda").to(torch.float16)
    v = torch.randn(batch, max_kv, 8, 128, device="cuda").to(torch.float16)
    out = torch.full_like(q, float("nan"))
    da.decode_attention(q, k, v, torch.tensor([100, 0, -7, max_kv + 999], dtype=torch.int32, device="cuda"),
                        out=out, num_splits=5)
    expected = da.decode_reference(q, k, v, torch.tensor([100, 1, 1, max_kv], dtype=torch.int32))
    expected[1:3] = 0.0
    torch.testing.assert_close(out.float(), expected, **_tol(torch.float16))


def _hopper():
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


@pytest.mark.skipif(not _hopper(), reason="needs sm_90a (TMA, wgmma, setmaxnreg)")
@pytest.mark.parametrize("stages,epilogue,block_kv", [(2, "registers", 128), (3, "registers", 128), (2, "tma", 128),
                                                    (2, "registers", 176), (2, "registers", 192)])
@pytest.mark.parametrize("causal", [False, True])
def test_hopper_flash_attention_matches_torch(example, stages, epilogue, block_kv, causal):
    fah = example("flash_attention_hopper")
    # 1000 and 333 are not multiples of the 128-row blocks; causal blocks run in reverse order
    for batch, seqlen, heads, kv_heads, d, dtype in [(2, 1000, 8, 2, 128, torch.float16),
                                                      (1, 333, 4, 4, 64, torch.bfloat16),
                                                      (1, 4096, 32, 8, 128, torch.float16)]:
        q, k, v = _qkv(batch, seqlen, heads, kv_heads, d, dtype)
        out = torch.full_like(q, float("nan"))
        fah.flash_attention(q, k, v, causal, out=out, stages=stages, epilogue=epilogue, block_kv=block_kv)
        torch.cuda.synchronize()
        torch.testing.assert_close(out.float(), fah.attention_reference(q, k, v, causal), **_tol(dtype))
