"""Every configuration of each example's tuning space, fixed, in the interpreter, on a shape
that takes each path the configuration has (tiles past every edge, k ranges split past the
end, persistent grids smaller than the work), outputs poisoned first.

The autotuner keeps the fastest configuration, so a configuration that skips work is the
one a user gets: softmax's persistent long-row path once computed only its first rows and
won the tuning at 4096 x 50257 (benchmarks/README.md, 2026-12-06). The GPU tests check the
tuned results and chosen configurations; these check the ones tuning could choose."""

import pytest
import torch

import tilus
from tilus import bfloat16, float16


def _configs(tuned):
    """The tuning space of an autotuned script made with its fixed arguments only."""
    configs = tuned.configs
    assert len(configs) > 1, "not an autotuned script"
    return configs


def _run_every(make, run):
    """make(**config) -> kernel for every configuration it accepts; run(kernel, config)
    checks it. Returns how many ran."""
    ran = 0
    for config in _configs(make()):
        try:
            kernel = make(**config)
        except ValueError:  # refused at construction (the example says why)
            continue
        run(kernel, config)
        ran += 1
    return ran


def _matmul_check(m, n, k):
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    expected = a.float() @ b.float()

    def run(kernel, config):
        c = torch.full((m, n), float("nan")).half()
        kernel(m, n, k, a, b, c)
        torch.testing.assert_close(c.float(), expected, rtol=2e-2, atol=5e-2, msg=lambda e: f"{config}: {e}")
    return run


# partial tiles along m and n; k = 200: split-K slices (up to 32 of 64-deep tiles) past the end
@pytest.mark.parametrize("name,cls,m", [
    ("matmul_v2_autotune", "MatmulV2", 200), ("matmul_v5_splitk", "MatmulV5", 70),
    ("matmul_tma_pipeline", "MatmulTmaPipeline", 200), ("matmul_wgmma", "MatmulWgmma", 200),
    ("matmul_decode_splitk", "MatmulDecode", 20)])
def test_matmul_examples(example, name, cls, m):
    make = getattr(example(name), cls)
    assert _run_every(make, _matmul_check(m, 136, 200)) >= 4


def _a16wx_case(base, w_dtype, a_dtype, has_zero, m, n, k, group, seed):
    """Activations, weight codes, scales, zero points and the dequantised product."""
    codes, scales, zeros = base.random_weights(k, n, w_dtype, group, a_dtype, has_zero, "cpu", seed=seed)
    x = torch.randn(m, k).to(scales.dtype)
    expected = x.float() @ base.dequantize(codes, w_dtype, scales, zeros, group, a_dtype).float()
    return x, codes, scales, zeros if has_zero else scales, expected


def _check_product(m, n, k, x, packed, scales, zeros, expected, tol):
    def run(kernel, config):
        out = torch.full((m, n), float("nan"), dtype=x.dtype)
        kernel(m, n, k, x, packed, scales, zeros, out)
        torch.testing.assert_close(out.float(), expected, rtol=tol, atol=tol, msg=lambda e: f"{config}: {e}")
    return run


def test_a16wx_every_tile(example):
    ex = example("matmul_a16wx")
    m, n, k, group = 11, 264, 544, 32  # two 8-row blocks, a partial n block, splits past k
    x, codes, scales, zeros, expected = _a16wx_case(ex, tilus.uint4b, float16, True, m, n, k, group, 3)
    packed = ex.prepack(codes, tilus.uint4b)
    assert _run_every(lambda **c: ex.MatmulA16Wx(float16, tilus.uint4b, group, True, **c),
                      _check_product(m, n, k, x, packed, scales, zeros, expected, 1e-2)) >= 30

    w_t = ex.dequantize(codes, tilus.uint4b, scales, zeros, group, float16).T.contiguous()

    def run_dequantizer(kernel, config):
        out = torch.full((n, k), float("nan"), dtype=torch.float16)
        kernel(n, k, packed, scales, zeros, out)
        torch.testing.assert_close(out, w_t, msg=lambda e: f"{config}: {e}")
    assert _run_every(lambda **c: ex.DequantizeWeights(float16, tilus.uint4b, group, True, **c),
                      run_dequantizer) >= 3


def test_a16wx_hopper_every_configuration(example):
    ex = example("matmul_a16wx_hopper")
    m, n, k, group = 300, 264, 192, 64  # partial 256-row and 128-column tiles, 3 blocks walking 6
    x, codes, scales, zeros, expected = _a16wx_case(example("matmul_a16wx"), tilus.int4b, bfloat16, False,
                                                    m, n, k, group, 4)
    packed = ex.prepack_hopper(codes, tilus.int4b)
    assert _run_every(lambda **c: ex.MatmulA16WxHopper(bfloat16, tilus.int4b, group, False, num_blocks=3, **c),
                      _check_product(m, n, k, x, packed, scales, zeros, expected, 3e-2)) >= 6


def test_warp_specialized_matmul_every_configuration(example):
    ex = example("matmul_warp_specialized")
    m, n, k = 200, 264, 200  # tiles past every edge; 3 persistent blocks walk them; splits past k
    a, b = torch.randn(m, k).half(), torch.randn(n, k).half()
    expected = (a.float() @ b.float().T) * 0.5

    def run(kernel, config):
        c = torch.full((m, n), float("nan")).half()
        kernel(m, n, k, a, b, c, 0.5)
        torch.testing.assert_close(c.float(), expected, rtol=2e-2, atol=5e-2, msg=lambda e: f"{config}: {e}")
    assert _run_every(lambda **c: ex.MatmulWarpSpecialized(num_blocks=3, **c), run) >= 20


# flash_attention.py: one block per query block; flash_attention_hopper.py: 2 x 3 heads x 3
# query blocks = 18 units walked by 4 persistent blocks; KV blocks past the end in both
@pytest.mark.parametrize("name,cls,batch,seqlen,heads,extra", [
    ("flash_attention", "FlashAttention", 1, 150, 2, {}),
    ("flash_attention_hopper", "FlashAttentionHopper", 2, 300, 3, {"num_blocks": 4})])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_every_configuration(example, name, cls, batch, seqlen, heads, extra, causal):
    fa = example(name)
    q = torch.randn(batch, seqlen, heads, 64).half()
    k, v = torch.randn(batch, seqlen, 1, 64).half(), torch.randn(batch, seqlen, 1, 64).half()
    expected = fa.attention_reference(q, k, v, causal)

    def run(kernel, config):
        out = torch.full_like(q, float("nan"))
        kernel(batch, seqlen, q, k, v, out)
        torch.testing.assert_close(out.float(), expected, atol=2e-2, rtol=2e-2, msg=lambda e: f"{config}: {e}")
    make = getattr(fa, cls)
    assert _run_every(lambda **c: make(float16, heads, 1, 64, causal, **extra, **c), run) >= 3


def test_decode_attention_every_configuration(example):
    da = example("decode_attention")
    batch, max_kv, heads, kv_heads, d, splits = 3, 301, 8, 2, 64, 3
    q = torch.randn(batch, heads, d).half()
    k, v = torch.randn(batch, max_kv, kv_heads, d).half(), torch.randn(batch, max_kv, kv_heads, d).half()
    lengths = torch.tensor([max_kv, 1, 130], dtype=torch.int32)
    expected = da.decode_reference(q, k, v, lengths)

    def run(kernel, config):
        out = torch.full_like(q, float("nan"))
        da.decode_attention(q, k, v, lengths, out=out, num_splits=splits, config=config)
        torch.testing.assert_close(out.float(), expected, atol=2e-2, rtol=2e-2, msg=lambda e: f"{config}: {e}")
    assert _run_every(lambda **c: da.DecodeAttentionSplit(float16, heads, kv_heads, d, splits, **c), run) >= 3
