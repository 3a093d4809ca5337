#!/usr/bin/env python3
"""Runs NVIDIA Tilus 0.2's own example programs, unmodified, against this package: the
compatibility check behind "a program written for Tilus 0.2 runs unchanged".

    git clone https://github.com/NVIDIA/tilus && git -C tilus checkout v0.2.0
    PYTHONPATH=python python scripts/tilus02_examples.py --examples tilus/examples
    PYTHONPATH=python python scripts/tilus02_examples.py --examples tilus/examples --device cuda
    PYTHONPATH=python python scripts/tilus02_examples.py --examples tilus/examples --compile sm_90a

Each example's kernels run at small odd sizes on fresh random data against torch (or
the example's own torch reference), outputs poisoned. On the CPU the examples' own
``device="cuda"`` tensors are made on the CPU instead, so they run in the interpreter.
``--compile ARCH`` also compiles a few configurations of each autotuned kernel through
NVRTC (no GPU needed) and prints registers and spilled bytes. Their code is not copied
here; the script imports it from the given folder. Exits 1 when anything fails.

A later checkout (the repository's main branch after v0.2.0) adds the Hopper matmuls v4
and v5 and two FP8 quantization kernels from DeepSeek's TileKernels (per-token cast,
SwiGLU + per-token cast); they run too when the folder has them, against references
written here (the examples' own import TileKernels, which is stubbed when absent).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import math
import os
import sys
import time
import traceback
import types

import torch

EXAMPLES = ""  # set by main()


def redirect_cuda_to_cpu():
    """The examples make their tensors with device="cuda" or .cuda(): make them on the CPU."""
    def cpu(kwargs):
        if "cuda" in str(kwargs.get("device", "")):
            kwargs["device"] = "cpu"
        return kwargs

    for name in ["rand", "randn", "empty", "zeros", "ones", "full", "tensor", "arange", "randint", "randperm",
                 "empty_like", "zeros_like", "ones_like", "rand_like", "randn_like", "full_like", "as_tensor"]:
        make = getattr(torch, name)
        setattr(torch, name, functools.wraps(make)(lambda *a, _make=make, **k: _make(*a, **cpu(k))))
    to = torch.Tensor.to
    torch.Tensor.to = lambda self, *a, **k: to(self, *["cpu" if "cuda" in str(x) else x for x in a], **cpu(k))
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.cuda.synchronize = lambda *a, **k: None


def load(path: str):
    folder, file = os.path.split(os.path.join(EXAMPLES, path))
    if folder not in sys.path:
        sys.path.insert(0, folder)  # examples import their siblings (tilus_kernel, ...)
    spec = importlib.util.spec_from_file_location(path.replace("/", "_")[:-3], os.path.join(folder, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def close(actual, expected, tol):
    torch.testing.assert_close(actual.float().cpu(), expected.float().cpu(), atol=tol, rtol=tol)


# ---- one function per example: runs it, asserts against a reference ----------------------

def vector_add(dev):
    n = 3000
    a, b = torch.randn(n, device=dev), torch.randn(n, device=dev)
    c = torch.full((n,), float("nan"), device=dev)
    load("vector_add/vector_add.py").VectorAdd()(n, a, b, c)
    close(c, a + b, 0)


def softmax(dev):
    # The example loads whole block_n tiles, so each padded column (loaded as 0) adds exp(-max)
    # to its row sums, as in Tilus 0.2: the result is the softmax whose sum has that term, for
    # the block_n the tuner picked (one of the four). Rows of 512 padded to 1024 are halved.
    for m, n in [(5, 781), (3, 512)]:
        x = (torch.rand(m, n, dtype=torch.float16, device=dev) - 0.5) * 2
        y = torch.full_like(x, float("nan"))
        load("softmax/softmax.py").FusedSoftmax()(m, n, x, y)
        xf = x.float()
        row_max = xf.max(1, keepdim=True).values
        e = torch.exp(xf - row_max)
        errors = []
        for block_n in (128, 256, 512, 1024):
            padded = -n % block_n
            expected = e / (e.sum(1, keepdim=True) + padded * torch.exp(-row_max))
            try:
                close(y, expected, 1e-3)
                break
            except AssertionError as error:
                errors.append(f"block_n={block_n}: {error}")
        else:
            raise AssertionError("matches no block_n's padded softmax:\n" + "\n".join(errors))


def layer_norm(dev):
    m, n = 9, 300
    x = (torch.rand(m, n, dtype=torch.float16, device=dev) - 0.5) * 2
    g, b = torch.rand(n, dtype=torch.float16, device=dev), torch.rand(n, dtype=torch.float16, device=dev)
    y = torch.full_like(x, float("nan"))
    load("norm/layer_norm.py").LayerNorm()(m, n, x, g, b, y, 1e-5)
    close(y, torch.nn.functional.layer_norm(x.float(), [n], g.float(), b.float(), 1e-5), 1e-2)


def matmul(path, cls, b_transposed=False):
    def run(dev):
        m, n, k = 100, 136, 96
        a = torch.rand(m, k, device=dev).half() - 0.5
        b = (torch.rand(n, k, device=dev) if b_transposed else torch.rand(k, n, device=dev)).half() - 0.5
        c = torch.full((m, n), float("nan"), dtype=torch.float16, device=dev)
        getattr(load(path), cls)()(m, n, k, a, b, c)
        close(c, a.float() @ (b.float().T if b_transposed else b.float()), 2e-2)
    return run


def attention(path):
    def run(dev):
        module = load(path)
        for batch, seq, heads, d, kv_heads in [(1, 77, 4, 64, 2), (2, 40, 2, 128, 1)]:
            q = torch.rand(batch, seq, heads, d, dtype=torch.float16, device=dev)
            k = torch.rand(batch, seq, kv_heads, d, dtype=torch.float16, device=dev)
            v = torch.rand(batch, seq, kv_heads, d, dtype=torch.float16, device=dev)
            close(module.flash_attention(q, k, v), module.flash_attention_reference(q, k, v), 1e-2)
    return run


def attention_with_kvcache(dev):
    module = load("attention_with_kvcache/attention_v1.py")
    page, batch, seq_q, seq_kv, heads, d, kv_heads = 128, 2, 5, 300, 4, 64, 2
    pages = math.ceil(seq_kv / page) * batch
    q = torch.rand(batch, seq_q, heads, d, dtype=torch.float16, device=dev)
    kc = torch.rand(pages, page, kv_heads, d, dtype=torch.float16, device=dev)
    vc = torch.rand(pages, page, kv_heads, d, dtype=torch.float16, device=dev)
    lengths = torch.tensor([seq_kv, seq_kv - 9], dtype=torch.int32, device=dev)
    # one spare column: the example prefetches the page after the last (out of bounds)
    table = torch.cat([torch.randperm(pages, dtype=torch.int32, device=dev).reshape(batch, -1),
                       torch.zeros(batch, 1, dtype=torch.int32, device=dev)], 1)
    close(module.attention_with_kvcache_tilus(q, kc, vc, lengths, table),
          module.attention_with_kvcache_reference(q, kc, vc, lengths, table), 1e-2)


def flash_attention_decode(dev):
    tk, ref = load("flash_attention_decode/tilus_kernel.py"), load("flash_attention_decode/torch_kernel.py")
    a_log, a, dt = torch.randn(16, device=dev) * 0.1, torch.randn(2, 16, dtype=torch.bfloat16, device=dev), \
        torch.randn(16, device=dev) * 0.1
    close(tk.fused_gdn_gating_tilus(a_log, a.clone(), dt, 1.0, 20.0), ref.fused_gdn_gating_torch(a_log, a.clone(), dt, 1.0, 20.0), 1e-3)
    b_, t, h, k, hv, v = 1, 3, 2, 64, 4, 32
    common = dict(q=torch.randn(b_, t, h, k, dtype=torch.bfloat16, device=dev),
                  k=torch.randn(b_, t, h, k, dtype=torch.bfloat16, device=dev),
                  v=torch.randn(b_, t, hv, v, dtype=torch.bfloat16, device=dev), scale=k ** -0.5,
                  initial_state_source=torch.randn(129, hv, k, v, device=dev) * 0.1,
                  initial_state_indices=126 - torch.arange(t, dtype=torch.int32, device=dev),
                  use_qk_l2norm_in_kernel=True)
    copy = lambda d: {n: (x.clone() if isinstance(x, torch.Tensor) else x) for n, x in d.items()}  # noqa: E731
    rec = dict(common, g=torch.randn(b_, t, hv, device=dev) * 0.1,
               beta=torch.rand(b_, t, hv, dtype=torch.bfloat16, device=dev) * 0.5 + 0.5)
    close(tk.fused_recurrent_gated_delta_rule_update_fwd_tilus(**copy(rec)),
          ref.fused_recurrent_gated_delta_rule_update_fwd_torch(**copy(rec)), 1e-3)
    sig = dict(common, A_log=torch.randn(hv, device=dev) * 0.1, a=torch.randn(t, hv, dtype=torch.bfloat16, device=dev),
               dt_bias=torch.randn(hv, device=dev) * 0.1, softplus_beta=1.0, softplus_threshold=20.0,
               b=torch.randn(t, hv, dtype=torch.bfloat16, device=dev))
    close(tk.sigmoid_gating_delta_rule_update_tilus(**copy(sig)), ref.sigmoid_gating_delta_rule_update_torch(**copy(sig)), 1e-3)


def quantized_matmul(dev):
    import tilus

    module = load("quantization/matmul_a16wx.py")
    for weight in [tilus.int4b, tilus.int8, tilus.float6_e3m2, tilus.float3_e1m1]:
        m, n, k = 3, 256, 256
        linear = module.QuantizedLinear(x_dtype=tilus.float16, w_dtype=weight, group_size=128, in_features=k,
                                        out_features=n)
        if dev != "cpu":
            linear = linear.cuda()
        a = (torch.rand(m, k, dtype=torch.float16, device=dev) - 0.5) / 16
        b = (torch.rand(k, n, dtype=torch.float16, device=dev) - 0.5) / 16
        linear.load_and_quantize(b.T.contiguous())
        close(linear(a), a @ b, 1e-2)


def fp8_group_cast_reference(values: torch.Tensor, group: int = 128):
    """Per row and group of `group` columns: scale = amax / 448 (1 where amax is 0) and
    the values times 448 / amax as float8 e4m3 -- the per-token cast the quantization
    examples make (DeepSeek TileKernels' semantics, which those examples check against)."""
    rows, cols = values.shape
    grouped = values.float().reshape(rows, cols // group, group)
    amax = grouped.abs().amax(-1)
    ones = torch.ones_like(amax)
    # a true division, as the kernels do: torch's `448.0 / amax` is amax.reciprocal() * 448,
    # rounded twice, which put one code of 3456 a step off on an H100
    inverse = torch.div(torch.full_like(amax, 448.0), amax)
    codes = grouped * torch.where(amax > 0, inverse, ones)[..., None]
    return codes.to(torch.float8_e4m3fn).reshape(rows, cols), torch.where(amax > 0, amax / 448.0, ones)


def assert_fp8_cast(out, scales, values, rows=None):
    codes, expected_scales = fp8_group_cast_reference(values)
    rows = slice(None) if rows is None else rows
    close(scales[rows], expected_scales[rows], 1e-5)
    close(out[rows].float(), codes[rows].float(), 0)  # the same float32 operations, rounded once each


def per_token_cast(dev):
    module = load("quantization/per_token_cast.py")
    for tokens, hidden in [(5, 256), (3, 1152)]:
        x = (torch.randn(tokens, hidden, device=dev) * 2).half()
        out = torch.empty(tokens, hidden, dtype=torch.float8_e4m3fn, device=dev)
        scales = torch.full((tokens, hidden // 128), float("nan"), device=dev)
        module.PerTokenCast(num_per_channels=128)(tokens, hidden, x, out, scales)
        assert_fp8_cast(out, scales, x)


def swiglu_per_token_cast(dev):
    module = load("quantization/swiglu_forward_and_per_token_cast.py")
    tokens, hidden, topk, clamp = 6, 256, 12, 3.0
    x = (torch.randn(tokens, 2 * hidden, device=dev) * 2).half()
    out = torch.empty(tokens, hidden, dtype=torch.float8_e4m3fn, device=dev)
    scales = torch.full((tokens, hidden // 128), float("nan"), device=dev)
    slot = torch.tensor([0, 3, -1, 5, 7, 2], dtype=torch.int32, device=dev)  # -1: no routing weight
    weights = torch.rand(topk, device=dev)
    expert = torch.tensor([0, 1, 2, -1, 1, 0], dtype=torch.int32, device=dev)  # -1: row skipped
    module.SwiGLUForwardAndPerTokenCast()(tokens, hidden, topk, x, out, scales, slot, weights, expert, clamp)
    left, right = x[:, :hidden].float().clamp(max=clamp), x[:, hidden:].float().clamp(-clamp, clamp)
    weight = torch.where(slot >= 0, weights[slot.clamp(min=0).long()], torch.ones(tokens, device=dev))
    assert_fp8_cast(out, scales, left / (torch.exp(-left) + 1) * right * weight[:, None], rows=expert >= 0)


# examples of checkouts later than v0.2.0, run when the folder has them
LATER = {"hopper_matmul_v4": "hopper_matmul/matmul_v4.py", "hopper_matmul_v5": "hopper_matmul/matmul_v5.py",
         "per_token_cast": "quantization/per_token_cast.py",
         "swiglu_per_token_cast": "quantization/swiglu_forward_and_per_token_cast.py"}


def in_checkout(name: str) -> bool:
    """Whether the examples folder has example `name` (v0.2.0's always; LATER's if there)."""
    return name not in LATER or os.path.exists(os.path.join(EXAMPLES, LATER[name]))

RUNS = {
    "vector_add": vector_add, "softmax": softmax, "layer_norm": layer_norm,
    **{f"matmul_v{i}": matmul(f"matmul/matmul_v{i}.py", f"MatmulV{i}") for i in range(6)},
    "hopper_matmul_v0": matmul("hopper_matmul/matmul_v0.py", "MatmulTMA", True),
    "hopper_matmul_v1": matmul("hopper_matmul/matmul_v1.py", "MatmulWGMMA", True),
    "hopper_matmul_v2": matmul("hopper_matmul/matmul_v2.py", "MatmulWGMMAV2", True),
    "hopper_matmul_v3": matmul("hopper_matmul/matmul_v3.py", "MatmulWGMMAV3", True),
    **{f"attention_v{i}": attention(f"attention/flash_attention_v{i}.py") for i in (1, 2, 3)},
    "attention_with_kvcache": attention_with_kvcache, "flash_attention_decode": flash_attention_decode,
    "quantized_matmul": quantized_matmul,
    "hopper_matmul_v4": matmul(LATER["hopper_matmul_v4"], "MatmulWGMMAV4", True),
    "hopper_matmul_v5": matmul(LATER["hopper_matmul_v5"], "MatmulWGMMAV5", True),
    "per_token_cast": per_token_cast, "swiglu_per_token_cast": swiglu_per_token_cast,
}


# ---- --compile: NVRTC reports for a few configurations of each kernel --------------------

def compile_reports(arch: str, per_kernel: int = 4):
    import tilus
    from tilus import _C

    h = torch.float16
    x, g = torch.zeros(64, 1000, dtype=h), torch.zeros(1000, dtype=h)
    q, kv = torch.zeros(1, 256, 8, 128, dtype=h), torch.zeros(1, 256, 2, 128, dtype=h)
    attn = dict(dtype=tilus.float16, num_heads=8, num_heads_kv=2, head_size=128)
    mat = torch.zeros(256, 256, dtype=h)
    kernels = [("softmax", load("softmax/softmax.py").FusedSoftmax, {}, (64, 1000, x, x)),
               ("layer_norm", load("norm/layer_norm.py").LayerNorm, {}, (64, 1000, x, g, g, x, 1e-5))]
    for v in (1, 2, 3):
        args = (1, 256, 256, q, kv, kv, q) if v == 3 else (1, 256, q, kv, kv, q)
        kernels.append((f"attention_v{v}", load(f"attention/flash_attention_v{v}.py").FlashAttention, attn, args))
    for v, cls in enumerate(["MatmulTMA", "MatmulWGMMA", "MatmulWGMMAV2", "MatmulWGMMAV3"]):
        if arch.startswith("sm_90"):
            kernels.append((f"hopper_matmul_v{v}", getattr(load(f"hopper_matmul/matmul_v{v}.py"), cls), {},
                            (256, 256, 256, mat, mat, mat)))
    for v in range(6):
        kernels.append((f"matmul_v{v}", getattr(load(f"matmul/matmul_v{v}.py"), f"MatmulV{v}"), {},
                        (256, 256, 256, mat, mat, mat)))
    for v in (4, 5):
        if arch.startswith("sm_90") and in_checkout(f"hopper_matmul_v{v}"):
            kernels.append((f"hopper_matmul_v{v}", getattr(load(LATER[f"hopper_matmul_v{v}"]), f"MatmulWGMMAV{v}"), {},
                            (256, 256, 256, mat, mat, mat)))
    f8 = torch.zeros(64, 1024, dtype=torch.float8_e4m3fn)
    f32, i32 = torch.zeros(64, 8), torch.zeros(64, dtype=torch.int32)
    if in_checkout("per_token_cast"):
        kernels.append(("per_token_cast", load(LATER["per_token_cast"]).PerTokenCast, {},
                        (64, 1024, torch.zeros(64, 1024, dtype=h), f8, f32)))
    if in_checkout("swiglu_per_token_cast"):
        kernels.append(("swiglu_per_token_cast", load(LATER["swiglu_per_token_cast"]).SwiGLUForwardAndPerTokenCast, {},
                        (64, 1024, 64, torch.zeros(64, 2048, dtype=h), f8, f32, i32, torch.zeros(64), i32, 3.0)))
    failed = 0
    for label, cls, fixed, args in kernels:
        space = getattr(cls, "_tilus_tune_space", None)
        configs = space.configs(fixed) if space else [{}]
        configs = [configs[int(i * len(configs) / per_kernel)] for i in range(min(per_kernel, len(configs)))]
        for config in configs:
            try:
                script = cls(**fixed, **config)
            except Exception as e:  # the script's __init__ refuses it, as the autotuner skips it
                print(f"  {label} {config}: refused by __init__ ({str(e)[:80]})")
                continue
            try:
                generated = _C.generate_cuda(script.compile(*args).program, True, arch)
                report = _C.runtime.compile_report(generated["source"], generated["name"], arch, [], None)
                print(f"  {label} {config}: {report['registers']} registers, {report['spill_bytes']} bytes spilled")
            except Exception as e:
                failed += 1
                print(f"  FAIL {label} {config}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    return failed


def main() -> int:
    global EXAMPLES
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", required=True, help="the examples folder of a Tilus checkout (v0.2.0 or later)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--only", default="", help="comma-separated example names")
    parser.add_argument("--compile", default="", metavar="ARCH", help="also compile through NVRTC for ARCH")
    args = parser.parse_args()
    EXAMPLES = os.path.abspath(args.examples)
    for missing in ("pandas", "einops"):  # imported by the examples' benchmark code only
        if importlib.util.find_spec(missing) is None:
            sys.modules[missing] = types.ModuleType(missing)
    # the quantization examples import DeepSeek's TileKernels for their own reference
    # (their main() only); ours is fp8_group_cast_reference
    if importlib.util.find_spec("tile_kernels") is None:
        for name, function in [("per_token_cast_kernel", "per_token_cast"),
                               ("swiglu_forward_and_per_token_cast_kernel", "swiglu_forward_and_per_token_cast")]:
            module = types.ModuleType(f"tile_kernels.quant.{name}")
            setattr(module, function, None)
            sys.modules[module.__name__] = module
        sys.modules["tile_kernels"] = types.ModuleType("tile_kernels")
        sys.modules["tile_kernels.quant"] = types.ModuleType("tile_kernels.quant")
    if args.device == "cpu":
        redirect_cuda_to_cpu()
    names = [n for n in args.only.split(",") if n] or [n for n in RUNS if in_checkout(n)]
    failed = 0
    for name in names:
        start = time.time()
        try:
            RUNS[name](args.device)
            print(f"ok   {name} ({time.time() - start:.1f} s)", flush=True)
        except Exception:
            failed += 1
            print(f"FAIL {name}:\n" + traceback.format_exc(limit=-4), flush=True)
    if args.compile:
        failed += compile_reports(args.compile)
    print(f"{failed} failure(s)" if failed else f"all {len(names)} examples ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
