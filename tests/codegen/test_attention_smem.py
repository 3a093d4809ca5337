"""Every configuration in flash attention's autotune space fits the shared memory one
H100 block may opt into (232448 bytes), counted by the compiler exactly as the launcher
and the autotuner's build filter read it (`generate_cuda(...)["dynamic_smem"]`), at the
largest head dim the example takes. A configuration over the limit can only fail at
launch when a caller fixes it (flash_attention(config=...)); the tuner would drop it."""

import pytest
import torch

from tests.conftest import load_example
from tilus import _C, bfloat16, float16

FA = load_example("flash_attention")


def _smem(config, dtype, causal, d=128):
    warps, bq, bkv, stages = config
    kernel = FA.FlashAttention(dtype, 32, 8, d, causal, warps=warps, block_q=bq, block_kv=bkv, stages=stages)
    t = torch.zeros(8, dtype=torch.float16)
    generated = _C.generate_cuda(kernel.compile(1, 1000, t, t, t, t).program, True, "sm_90a")
    return generated["dynamic_smem"], "tilus::copy_ring_expect(" in generated["source"]


@pytest.mark.parametrize("config", FA.CONFIGS)
def test_every_flash_config_fits_an_h100_block(config):
    assert FA.SMEM_LIMIT == 232448
    warps, bq, bkv, stages = config
    smem, copy_tma = _smem(config, float16, causal=True)
    assert smem <= FA.SMEM_LIMIT, f"{config}: {smem} bytes"
    # Q, the K/V ring and P, fp16 at d=128, and the 8 barriers of the copies lowered to
    # TMA (csrc/ops/async_copy.cc): the compiler adds nothing the count misses
    assert copy_tma and smem == 2 * (bq * 128 + 2 * stages * bkv * 128 + bq * bkv) + 8 * 8
    assert _smem(config, bfloat16, causal=False) == (smem, True)


def test_the_space_covers_both_block_shapes_without_duplicates():
    assert len(set(FA.CONFIGS)) == len(FA.CONFIGS)
    assert {(w, bq) for w, bq, _, _ in FA.CONFIGS} == {(4, 64), (8, 128)}
    # the configuration the launch refused on an H100 stays out
    assert _smem((8, 128, 128, 3), float16, causal=False)[0] > FA.SMEM_LIMIT
    assert (8, 128, 128, 3) not in FA.CONFIGS
