"""Tilus 0.2's own attention examples (attention/flash_attention_v1..v3.py of a Tilus v0.2.0
checkout, imported unchanged from --examples) run by this package, beside torch's SDPA
(flash backend) and the Triton kernel of benchmarks/triton_attention.py on the same data:
what a user who brings those scripts gets. Causal (the examples are), fp16, batch 1, 8 KV
heads, d = 128; TFLOP/s count half the FLOPs. Medians of CUDA-event timings, L2 flushed.

    python benchmarks/bench_tilus02_attention.py --examples .tilus02_examples [--out DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import sys
import types

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import median_ms, print_table, write_results  # noqa: E402

try:
    import triton_attention
except Exception as e:  # Triton missing or broken: say so, keep the rest
    triton_attention = None
    print(f"triton: skipped ({type(e).__name__}: {e})")


def load(examples: str, path: str):
    spec = importlib.util.spec_from_file_location(path.replace("/", "_")[:-3], os.path.join(examples, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sdpa_flash(q, k, v):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True, enable_gqa=True)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", required=True)
    parser.add_argument("--out", default=None)
    parser.add_argument("--seqlens", default="1024,4096")
    args = parser.parse_args(argv)
    for missing in ("pandas", "einops", "flash_attn"):  # imported by the examples' own benchmark code
        if importlib.util.find_spec(missing) is None:
            sys.modules[missing] = types.ModuleType(missing)
    examples = os.path.abspath(args.examples)
    modules = {f"v{i}": load(examples, f"attention/flash_attention_v{i}.py") for i in (1, 2, 3)}
    rows, results = [], []
    heads, kv_heads, d = 32, 8, 128
    for seqlen in (int(s) for s in args.seqlens.split(",")):
        q = torch.randn(1, seqlen, heads, d, device="cuda").half()
        k = torch.randn(1, seqlen, kv_heads, d, device="cuda").half()
        v = torch.randn(1, seqlen, kv_heads, d, device="cuda").half()
        flops = 4 * heads * seqlen * seqlen * d * 0.5
        ref = sdpa_flash(q, k, v).transpose(1, 2)
        t = {"sdpa_flash": median_ms(lambda: sdpa_flash(q, k, v))}
        if triton_attention is not None:
            ot = torch.empty_like(q)
            triton_attention.flash_attention(q, k, v, True, ot)
            torch.testing.assert_close(ot, ref, atol=2e-2, rtol=2e-2)
            t["triton"] = median_ms(lambda: triton_attention.flash_attention(q, k, v, True, ot))
        for name, module in modules.items():
            o = module.flash_attention(q, k, v)
            torch.testing.assert_close(o, ref, atol=2e-2, rtol=2e-2)
            t[f"tilus02_{name}"] = median_ms(lambda: module.flash_attention(q, k, v))
        tf = {key: flops / ms * 1e-9 for key, ms in t.items()}
        rows.append([seqlen, *(f"{tf[key]:.0f}" if key in tf else "-" for key in
                               ("tilus02_v1", "tilus02_v2", "tilus02_v3", "sdpa_flash", "triton")),
                     *(f"{tf[f'tilus02_{n}'] / tf['sdpa_flash']:.2f}" for n in ("v1", "v2", "v3"))])
        results.append({"heads": heads, "kv_heads": kv_heads, "head_dim": d, "seqlen": seqlen, "causal": True,
                        **{f"{key}_ms": ms for key, ms in t.items()}, **{f"{key}_tflops": x for key, x in tf.items()}})
    print_table("Tilus 0.2's attention examples on this package, causal fp16, batch 1, 32/8 heads, d=128 (TFLOP/s)",
                ["seqlen", "v1", "v2", "v3", "sdpa flash", "triton", "v1/flash", "v2/flash", "v3/flash"], rows)
    write_results("bench_tilus02_attention", argv, results)


if __name__ == "__main__":
    main(sys.argv[1:])
