"""The attention examples compile through NVRTC for sm_90a and sm_80 without spills; on
sm_90a both products of flash attention (S = Q K^T with K read K-major through a
transposed view, O += P V) are wgmma dots."""

import pytest
import torch

from tests.codegen.nvrtc_compile import require_nvrtc
from tests.conftest import load_example
from tilus import _C, bfloat16, float16

require_nvrtc()
rt = _C.runtime

FA = load_example("flash_attention")
DA = load_example("decode_attention")


def _compile(kernel, args, arch, spills_allowed=False):
    generated = _C.generate_cuda(kernel.compile(*args).program, True, arch)
    report = rt.compile_report(generated["source"], generated["name"], arch, [], None)
    assert report["cubin"][:4] == b"\x7fELF"
    assert spills_allowed or report["spill_bytes"] == 0, report["log"]
    assert "serialized" not in report["log"], report["log"]
    return generated["source"]


def _t(dtype=torch.float16):
    return torch.zeros(8, dtype=dtype)


# (warps, block_q, block_kv, stages): part of the autotune space (FA.CONFIGS), both block shapes
FLASH_CONFIGS = [(4, 64, 64, 2), (4, 64, 128, 3), (8, 128, 64, 3), (8, 128, 128, 2)]


@pytest.mark.parametrize("config", FLASH_CONFIGS)
@pytest.mark.parametrize("d,dtype,causal", [(128, float16, False), (64, bfloat16, True)])
def test_flash_attention_uses_wgmma_for_both_dots_on_sm90a(config, d, dtype, causal):
    warps, bq, bkv, stages = config
    kernel = FA.FlashAttention(dtype, 32, 8, d, causal, warps=warps, block_q=bq, block_kv=bkv, stages=stages)
    src = _compile(kernel, (1, 1000, _t(), _t(), _t(), _t()), "sm_90a")
    body = src.split("__global__")[1]
    assert body.count("// dot: wgmma") == 2
    assert "(B K-major)" in body  # S = Q K^T reads K as stored
    assert "mma_m16n8k16" not in body and "ldmatrix" not in body
    # a one-dimensional launch order (no bands of 8), heads fastest; causal blocks heaviest first
    assert "tl_band" not in body
    assert "head = ((int)blockIdx.x % 32);" in body
    assert ("q_block = ((q_blocks - 1) - q_block);" in body) == causal


def test_flash_attention_compiles_for_sm80():
    # Hopper is the target; on sm_80 the mma.sync form only has to compile (ptxas spills a
    # few bytes at 255 registers there).
    kernel = FA.FlashAttention(float16, 4, 2, 64, True, warps=4, block_q=64, block_kv=64, stages=2)
    src = _compile(kernel, (1, 1000, _t(), _t(), _t(), _t()), "sm_80", spills_allowed=True)
    assert "mma_m16n8k16" in src


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("block_kv,stages", [(32, 4), (32, 6), (64, 3)])
def test_decode_attention_compiles(arch, block_kv, stages):
    split = DA.DecodeAttentionSplit(float16, 32, 8, 128, 16, block_kv=block_kv, stages=stages)
    i32 = torch.zeros(4, dtype=torch.int32)
    f32 = torch.zeros(4)
    _compile(split, (16, 65536, _t(), _t(), _t(), i32, f32, f32, f32), arch)
    combine = DA.DecodeAttentionCombine(bfloat16, 32, 8, 128, 16, 16)
    _compile(combine, (16, f32, f32, f32, _t(torch.bfloat16)), arch)
