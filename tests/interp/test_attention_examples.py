"""The attention examples in the CPU interpreter against torch (float32 SDPA): odd
sequence lengths (not multiples of the blocks), grouped-query heads, causal masks,
ragged decode lengths and splits that fall past a sequence's end."""

import pytest
import torch

import tilus
from tests.conftest import load_example

FA = load_example("flash_attention")
DA = load_example("decode_attention")


@pytest.mark.parametrize("seqlen,heads,kv_heads,causal,dtype,config", [
    (37, 4, 2, False, torch.float16, (4, 64, 64, 2)),
    (37, 4, 2, True, torch.float16, (4, 64, 64, 2)),
    (130, 2, 1, True, torch.bfloat16, (4, 64, 64, 3)),  # three KV blocks, a ragged last one
    (70, 3, 3, False, torch.bfloat16, (8, 128, 64, 2)),
])
def test_flash_attention_matches_torch(seqlen, heads, kv_heads, causal, dtype, config):
    torch.manual_seed(seqlen + heads)
    warps, bq, bkv, stages = config
    q = torch.randn(2 if seqlen < 100 else 1, seqlen, heads, 64).to(dtype)
    k = torch.randn(q.shape[0], seqlen, kv_heads, 64).to(dtype)
    v = torch.randn(q.shape[0], seqlen, kv_heads, 64).to(dtype)
    out = torch.full_like(q, float("nan"))
    FA.flash_attention(q, k, v, causal, out=out,
                       config={"warps": warps, "block_q": bq, "block_kv": bkv, "stages": stages})
    torch.testing.assert_close(out.float(), FA.attention_reference(q, k, v, causal), atol=2e-2, rtol=2e-2)


def test_flash_attention_refuses_bad_shapes():
    q = torch.zeros(1, 8, 3, 64, dtype=torch.float16)
    kv = torch.zeros(1, 8, 2, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="num_heads"):
        FA.flash_attention(q, kv, kv)


@pytest.mark.parametrize("heads,kv_heads,splits,dtype", [
    (8, 2, 3, torch.float16),   # GQA, 4 heads padded to 16 rows
    (4, 4, 5, torch.bfloat16),  # one head per group; short sequences leave splits empty
])
def test_decode_attention_matches_torch(heads, kv_heads, splits, dtype):
    torch.manual_seed(heads * splits)
    batch, max_kv = 3, 201
    q = torch.randn(batch, heads, 64).to(dtype)
    k = torch.randn(batch, max_kv, kv_heads, 64).to(dtype)
    v = torch.randn(batch, max_kv, kv_heads, 64).to(dtype)
    lengths = torch.tensor([max_kv, 1, 77], dtype=torch.int32)
    out = torch.full_like(q, float("nan"))
    DA.decode_attention(q, k, v, lengths, out=out, num_splits=splits, config={"block_kv": 32, "stages": 4})
    torch.testing.assert_close(out.float(), DA.decode_reference(q, k, v, lengths), atol=2e-2, rtol=2e-2)


def test_decode_attention_clamps_lengths_outside_the_cache():
    """Lengths live on the GPU, so the kernel clamps them: past max_kv attends to the whole
    cache (nothing read beyond it), zero or negative gives zeros (no 0 / 0)."""
    torch.manual_seed(5)
    batch, max_kv, heads, kv_heads = 4, 90, 4, 2
    q = torch.randn(batch, heads, 64).to(torch.float16)
    k = torch.randn(batch, max_kv, kv_heads, 64).to(torch.float16)
    v = torch.randn(batch, max_kv, kv_heads, 64).to(torch.float16)
    out = torch.full_like(q, float("nan"))
    DA.decode_attention(q, k, v, torch.tensor([max_kv + 40, 0, -3, 33], dtype=torch.int32), out=out,
                        num_splits=3, config={"block_kv": 32, "stages": 4})
    expected = DA.decode_reference(q, k, v, torch.tensor([max_kv, 1, 1, 33], dtype=torch.int32))
    expected[1:3] = 0.0
    torch.testing.assert_close(out.float(), expected, atol=2e-2, rtol=2e-2)


FAH = load_example("flash_attention_hopper")


# the interpreter runs 4 persistent blocks (matmul_warp_specialized.multiprocessor_count)
@pytest.mark.parametrize("batch,seqlen,heads,kv_heads,d,causal,dtype,stages", [
    (1, 150, 2, 1, 128, False, torch.float16, 2),   # two KV blocks, a ragged last one
    (1, 150, 2, 1, 128, True, torch.float16, 3),    # the second query block crosses the diagonal
    (1, 70, 4, 2, 64, True, torch.bfloat16, 2),     # one short block: masked by both rules
    (1, 260, 2, 2, 64, False, torch.bfloat16, 2),   # three KV blocks through a two-slot ring; 2 rounds
    # 18 units over 4 blocks: 5 rounds dealt in a snake, the last one partial; Q and the
    # ring carried from unit to unit; sequences and heads both in the unit number
    (2, 300, 3, 1, 64, True, torch.float16, 2),
])
@pytest.mark.parametrize("epilogue", ["registers", "tma"])
def test_hopper_flash_attention_matches_torch(batch, seqlen, heads, kv_heads, d, causal, dtype, stages, epilogue):
    if epilogue == "tma" and stages == 3 and d == 128:
        # Q, three 64 KB K/V stages and the output's staging tile: 256 KB, more than any
        # GPU gives a block (why CONFIGS pairs the TMA epilogue with two stages only)
        with pytest.raises(tilus.ScriptError, match="needs 262144 bytes of shared memory per block"):
            _check_hopper_flash_attention(batch, seqlen, heads, kv_heads, d, causal, dtype, stages=stages,
                                          epilogue=epilogue)
        return
    _check_hopper_flash_attention(batch, seqlen, heads, kv_heads, d, causal, dtype, stages=stages, epilogue=epilogue)


# KV blocks of 176 rows: a 128-row query block crosses the diagonal inside one block or
# across two, and the last block is ragged (400 = 2 * 176 + 48)
@pytest.mark.parametrize("seqlen,causal", [(400, True), (400, False), (150, True)])
def test_hopper_flash_attention_with_wide_kv_blocks(seqlen, causal):
    _check_hopper_flash_attention(1, seqlen, 2, 1, 64, causal, torch.float16, stages=2, block_kv=176)


def _check_hopper_flash_attention(batch, seqlen, heads, kv_heads, d, causal, dtype, **config):
    torch.manual_seed(seqlen + heads + d)
    q = torch.randn(batch, seqlen, heads, d).to(dtype)
    k = torch.randn(batch, seqlen, kv_heads, d).to(dtype)
    v = torch.randn(batch, seqlen, kv_heads, d).to(dtype)
    out = torch.full_like(q, float("nan"))
    FAH.flash_attention(q, k, v, causal, out=out, **config)
    torch.testing.assert_close(out.float(), FAH.attention_reference(q, k, v, causal), atol=2e-2, rtol=2e-2)


def test_hopper_flash_attention_refuses_what_it_cannot_run():
    q = torch.zeros(1, 8, 4, 96, dtype=torch.float16)
    kv = torch.zeros(1, 8, 2, 96, dtype=torch.float16)
    with pytest.raises(ValueError, match="head_dim must be 64 or 128"):
        FAH.flash_attention(q, kv, kv, stages=2)
    q = torch.zeros(1, 8, 3, 64, dtype=torch.float16)
    kv = torch.zeros(1, 8, 2, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="num_heads"):
        FAH.flash_attention(q, kv, kv, stages=2)
    with pytest.raises(ValueError, match="epilogue must be 'registers' or 'tma'"):
        FAH.flash_attention(q, q, q, epilogue="smem")
    with pytest.raises(ValueError, match="block_kv must be a multiple of 16"):
        FAH.flash_attention(q, q, q, block_kv=100)
