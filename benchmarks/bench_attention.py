"""Attention: tilus (examples/flash_attention.py, on sm_90 also the warp-specialised
examples/flash_attention_hopper.py as "tilus hopper", examples/decode_attention.py) beside
torch's scaled_dot_product_attention with each backend (FLASH_ATTENTION,
EFFICIENT_ATTENTION, CUDNN_ATTENTION, MATH; one that raises is skipped and named), a
Triton flash-attention kernel (benchmarks/triton_attention.py) and, for decode, a device
copy of the same K/V bytes. Same data, medians of CUDA-event timings with L2 flushed.

    python benchmarks/bench_attention.py [--out DIR] [--quick] [--configs] [--prefill-only | --decode-only]

--configs adds a table of every autotune configuration's rate at 32 heads, s = 1k..8k.

Layout [batch, seqlen, heads, head_dim]; torch gets the transposed views [b, h, s, d]
(enable_gqa=True where the backend takes it, else K/V repeated per query head, made
before timing). Targets (issue 12): prefill batch 1, 32 and 64 heads, 8 KV heads,
d=128, s in {1k, 2k, 4k, 8k}: >= 320 TFLOP/s non-causal and >= SDPA's flash backend;
causal within 10% of the non-causal rate (FLOPs of causal counted as half). Decode 16 x
64k: >= 80% of the copy bandwidth on the K/V bytes ("of copy BW" = tilus's K/V read rate /
the copy's rate, which counts the bytes it reads and writes, as benchmarks/bench_rowwise.py
compares a kernel with a copy of the same read + write bytes).
"""

from __future__ import annotations

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import load_example, median_ms, print_table, write_results  # noqa: E402

try:
    import triton_attention
except Exception as e:  # Triton missing or broken: say so, keep the rest
    triton_attention = None
    print(f"triton: skipped ({type(e).__name__}: {e})")

_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def _backends():
    from torch.nn.attention import SDPBackend
    return [(name, getattr(SDPBackend, name)) for name in
            ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH") if hasattr(SDPBackend, name)]


def _sdpa_runner(backend, q, k, v, causal):
    """A function running SDPA with one backend on [b, h, s, d] views, or the reason it
    cannot (the exception the backend raised on a first call)."""
    from torch.nn.attention import sdpa_kernel
    F = torch.nn.functional
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    group = q.shape[2] // k.shape[2]
    attempts = [lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, enable_gqa=group > 1)]
    if group > 1:
        kr, vr = kt.repeat_interleave(group, dim=1), vt.repeat_interleave(group, dim=1)
        attempts.append(lambda: F.scaled_dot_product_attention(qt, kr, vr, is_causal=causal))
    error = None
    for fn in attempts:
        def run(fn=fn):
            with sdpa_kernel([backend]):
                return fn()
        try:
            run()
            torch.cuda.synchronize()
            return run, None
        except Exception as e:  # noqa: PERF203 - the backend's own refusal
            error = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
    return None, error


def _chosen(module, q, k, causal, seqlen, v, o, *, fixed):
    """The configuration `module`'s autotuner chose for this call (None when unknown);
    `fixed` is the tail of the module's script key for an autotuned call."""
    if module is None:
        return None
    script = module._SCRIPTS.get((q.dtype, q.shape[2], k.shape[2], q.shape[3], causal, *fixed))
    try:
        return script.chosen_config(1, seqlen, q, k, v, o)
    except Exception:  # informational only
        return None


FA_KNOBS = ("warps", "block_q", "block_kv", "stages")
HOPPER_KNOBS = ("stages", "epilogue", "block_kv")


def _short(config, knobs=FA_KNOBS, missing="?"):
    """The config's values of `knobs`, joined by '/'."""
    return "/".join(str(config[n]) for n in knobs) if config else missing


def bench_prefill(shapes, dtypes, results):
    fa = load_example("flash_attention")
    # the warp-specialised Hopper version (TMA, wgmma, producer/consumer warpgroups)
    fah = load_example("flash_attention_hopper") if torch.cuda.get_device_capability() == (9, 0) else None
    rows, skipped = [], {}
    for dname in dtypes:
        dtype = _DTYPES[dname]
        for heads, seqlen in shapes:
            kv_heads, d = 8, 128
            q = torch.randn(1, seqlen, heads, d, device="cuda").to(dtype)
            k = torch.randn(1, seqlen, kv_heads, d, device="cuda").to(dtype)
            v = torch.randn(1, seqlen, kv_heads, d, device="cuda").to(dtype)
            for causal in (False, True):
                flops = 4 * heads * seqlen * seqlen * d * (0.5 if causal else 1.0)
                o = torch.full_like(q, float("nan"))
                fa.flash_attention(q, k, v, causal, out=o)
                ref = fa.attention_reference(q, k, v, causal) if seqlen <= 4096 else None
                if ref is not None:
                    torch.testing.assert_close(o.float(), ref, atol=3e-2, rtol=3e-2)
                t = {"tilus": median_ms(lambda: fa.flash_attention(q, k, v, causal, out=o))}
                if fah is not None:
                    oh = torch.full_like(q, float("nan"))
                    fah.flash_attention(q, k, v, causal, out=oh)
                    if ref is not None:
                        torch.testing.assert_close(oh.float(), ref, atol=3e-2, rtol=3e-2)
                    t["hopper"] = median_ms(lambda: fah.flash_attention(q, k, v, causal, out=oh))
                if triton_attention is not None:
                    ot = torch.empty_like(q)
                    triton_attention.flash_attention(q, k, v, causal, ot)
                    if ref is not None:
                        torch.testing.assert_close(ot.float(), ref, atol=3e-2, rtol=3e-2)
                    t["triton"] = median_ms(lambda: triton_attention.flash_attention(q, k, v, causal, ot))
                for name, backend in _backends():
                    if name == "MATH" and seqlen > 2048:
                        skipped[name] = "not timed above s=2048 (materialises the scores)"
                        continue
                    run, why = _sdpa_runner(backend, q, k, v, causal)
                    if run is None:
                        skipped[name] = why
                        continue
                    t[name.lower()] = median_ms(run, warmup=3, repeat=10 if name == "MATH" else 50)
                tf = {key: flops / ms * 1e-9 for key, ms in t.items()}
                flash = tf.get("flash_attention")
                chosen = _chosen(fa, q, k, causal, seqlen, v, o, fixed=((),))
                chosen_hopper = _chosen(fah, q, k, causal, seqlen, v, oh if fah is not None else o,
                                        fixed=(None, None, None))
                rows.append([dname, heads, seqlen, "causal" if causal else "full", t["tilus"], tf["tilus"],
                             tf.get("hopper", float("nan")),
                             *(tf.get(n, float("nan")) for n in ("flash_attention", "efficient_attention",
                                                                 "cudnn_attention", "math", "triton")),
                             tf["tilus"] / flash if flash else float("nan"),
                             tf.get("hopper", float("nan")) / flash if flash else float("nan"), _short(chosen),
                             _short(chosen_hopper, HOPPER_KNOBS, missing="-")])
                results.append({"kernel": "prefill", "dtype": dname, "batch": 1, "heads": heads, "kv_heads": kv_heads,
                                "seqlen": seqlen, "head_dim": d, "causal": causal, "config": str(chosen),
                                "hopper_config": _short(chosen_hopper, HOPPER_KNOBS, missing=None),
                                **{f"{key}_ms": ms for key, ms in t.items()},
                                **{f"{key}_tflops": x for key, x in tf.items()}})
    print_table("prefill, batch 1, 8 KV heads, d=128 (TFLOP/s; causal counts half the FLOPs)",
                ["dtype", "heads", "seqlen", "mask", "tilus ms", "tilus", "tilus hopper", "sdpa flash", "sdpa eff",
                 "sdpa cudnn", "sdpa math", "triton", "tilus/flash", "hopper/flash", "config", "hopper config"],
                rows)
    for name, why in skipped.items():
        print(f"  sdpa {name}: skipped ({why})")


def bench_configs(shapes, results):
    """--configs: every configuration of the autotune spaces (flash_attention.py's and, on
    sm_90, flash_attention_hopper.py's) timed on each shape (fp16, TFLOP/s), to see what
    the tuners chose from."""
    fa = load_example("flash_attention")
    # (table title, results kind, configurations, run(config, q, k, v, causal, out), describe(config))
    spaces = [("prefill fp16, every configuration (TFLOP/s; warps/block_q/block_kv/stages)", "prefill_config",
               fa.CONFIGS, lambda c, q, k, v, causal, o: fa.flash_attention(q, k, v, causal, out=o,
                                                                            config=dict(zip(FA_KNOBS, c))),
               lambda c: str(dict(zip(FA_KNOBS, c))))]
    if torch.cuda.get_device_capability() == (9, 0):
        fah = load_example("flash_attention_hopper")
        spaces.append(("prefill fp16, the Hopper kernel's every configuration (TFLOP/s; stages/epilogue/block_kv)",
                       "prefill_hopper_config", fah.CONFIGS,
                       lambda c, q, k, v, causal, o: fah.flash_attention(q, k, v, causal, out=o, stages=c[0],
                                                                         epilogue=c[1], block_kv=c[2]),
                       lambda c: "/".join(map(str, c))))
    for title, kind, configs, run, describe in spaces:
        rows = []
        for heads, seqlen in shapes:
            q = torch.randn(1, seqlen, heads, 128, device="cuda").half()
            k = torch.randn(1, seqlen, 8, 128, device="cuda").half()
            v = torch.randn(1, seqlen, 8, 128, device="cuda").half()
            o = torch.empty_like(q)
            for causal in (False, True):
                flops = 4 * heads * seqlen * seqlen * 128 * (0.5 if causal else 1.0)
                row = [heads, seqlen, "causal" if causal else "full"]
                for c in configs:
                    ms = median_ms(lambda: run(c, q, k, v, causal, o))
                    row.append(flops / ms * 1e-9)
                    results.append({"kernel": kind, "heads": heads, "seqlen": seqlen, "causal": causal,
                                    "config": describe(c), "ms": ms})
                rows.append(row)
        print_table(title, ["heads", "seqlen", "mask", *("/".join(map(str, c)) for c in configs)], rows)


def bench_decode(shapes, dtypes, results):
    da = load_example("decode_attention")
    rows = []
    for dname in dtypes:
        dtype = _DTYPES[dname]
        for batch, max_kv in shapes:
            heads, kv_heads, d = 32, 8, 128
            q = torch.randn(batch, heads, d, device="cuda").to(dtype)
            k = torch.randn(batch, max_kv, kv_heads, d, device="cuda").to(dtype)
            v = torch.randn(batch, max_kv, kv_heads, d, device="cuda").to(dtype)
            lengths = torch.full((batch,), max_kv, dtype=torch.int32, device="cuda")
            o = torch.full_like(q, float("nan"))
            da.decode_attention(q, k, v, lengths, out=o)
            if batch * max_kv <= 16 * 65536:
                torch.testing.assert_close(o.float(), da.decode_reference(q, k, v, lengths), atol=2e-2, rtol=2e-2)
            kv_bytes = 2 * k.numel() * k.element_size()
            kc, vc = torch.empty_like(k), torch.empty_like(v)
            t = {"tilus": median_ms(lambda: da.decode_attention(q, k, v, lengths, out=o)),
                 "copy": median_ms(lambda: (kc.copy_(k), vc.copy_(v)))}
            from torch.nn.attention import SDPBackend
            run, _ = _sdpa_runner(SDPBackend.FLASH_ATTENTION, q[:, None], k, v, False)
            if run is not None:
                t["sdpa_flash"] = median_ms(run)
            # The kernel reads the K/V bytes once; the copy reads them and writes as many
            # (2 x kv_bytes through HBM), so its bandwidth is 2 x kv_bytes / time, the
            # device's achievable rate (~3 TB/s on an H100), and "of copy BW" is the
            # kernel's read rate as a fraction of it.
            gbs = kv_bytes / t["tilus"] * 1e-6
            copy_gbs = 2 * kv_bytes / t["copy"] * 1e-6
            rows.append([dname, batch, max_kv, t["tilus"], gbs, t["copy"], copy_gbs, gbs / copy_gbs,
                         t.get("sdpa_flash", float("nan"))])
            results.append({"kernel": "decode", "dtype": dname, "batch": batch, "max_kv": max_kv, "heads": heads,
                            "kv_heads": kv_heads, "head_dim": d, "kv_bytes": kv_bytes,
                            **{f"{key}_ms": ms for key, ms in t.items()}})
    print_table("decode, 32 heads / 8 KV heads, d=128 (tilus: GB/s of K/V bytes read; copy: bytes read + "
                "written per second)",
                ["dtype", "batch", "kv len", "tilus ms", "tilus GB/s", "copy ms", "copy GB/s", "of copy BW",
                 "sdpa flash ms"], rows)


def main(argv):
    quick = "--quick" in argv
    results = []
    prefill = [(32, s) for s in (1024, 2048, 4096, 8192)] + ([] if quick else [(64, s) for s in (1024, 4096, 8192)])
    if "--decode-only" not in argv:
        bench_prefill(prefill, ["fp16"] if quick else ["fp16", "bf16"], results)
        if "--configs" in argv:
            bench_configs(prefill[:4], results)
    # batches below 16 as well: a [batch] view of the lengths once sent those to the
    # unaligned build (benchmarks/README.md)
    decode = [(16, 65536)] + ([] if quick else [(16, 8192), (64, 4096), (4, 32768), (1, 65536)])
    if "--prefill-only" not in argv:
        bench_decode(decode, ["fp16"] if quick else ["fp16", "bf16"], results)
    if "--out" in argv:
        write_results("bench_attention", argv, results)


if __name__ == "__main__":
    main(sys.argv[1:])
