"""Row-wise kernels: tilus (examples/softmax.py, examples/norms.py) beside torch, a Triton
kernel (benchmarks/triton_rowwise.py) and a device copy of the same bytes, same run, same
data, medians of CUDA-event timings with L2 flushed.

    python benchmarks/bench_rowwise.py [--out DIR] [--quick | --unaligned | --long-rows]

`--unaligned`: softmax alone, over rows that are not a multiple of 16 elements
(vocabularies of 20001 to 131071 words), fp16 and fp32. `--long-rows` (sm_90): rows too
long for one block's shared memory, streamed through a ring (cluster_split=False) and kept
by a cluster of blocks (cluster_split=True; the wrapper's default where the ring would read
part of the row again), beside torch, Triton and the copy.

Targets (issue 12): softmax fp16 8192x8192 within 1.15x of the copy time and at least 2x
faster than torch.softmax; layer/RMS norm within 1.2x of the copy time at 4096x4096 and
8192x8192. The "vs copy" column is tilus time / copy time (1.00 = at the copy ceiling).
"""

from __future__ import annotations

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import load_example, median_ms, print_table, write_results  # noqa: E402

import triton_rowwise  # noqa: E402

_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def _copy_ms(x):
    y = torch.empty_like(x)
    return median_ms(lambda: y.copy_(x))


def bench_softmax(shapes, dtypes, results):
    sm = load_example("softmax")
    rows = []
    for dname in dtypes:
        dtype = _DTYPES[dname]
        for m, n in shapes:
            x = (torch.randn(m, n, device="cuda") * 3).to(dtype)
            expected = torch.softmax(x.float(), dim=1).to(dtype)
            y = torch.full_like(x, float("nan"))
            sm.softmax(x, y)
            torch.testing.assert_close(y, expected, atol=2e-3, rtol=2e-2)
            yt = torch.full_like(x, float("nan"))
            triton_rowwise.softmax(x, yt)
            torch.testing.assert_close(yt, expected, atol=2e-3, rtol=2e-2)
            t = {"tilus": median_ms(lambda: sm.softmax(x, y)),
                 "torch": median_ms(lambda: torch.softmax(x, dim=1)),
                 "triton": median_ms(lambda: triton_rowwise.softmax(x, yt)),
                 "copy": _copy_ms(x)}
            gbs = 2 * x.numel() * x.element_size() / t["tilus"] / 1e6
            rows.append([dname, m, n, t["tilus"], t["torch"], t["triton"], t["copy"],
                         t["tilus"] / t["copy"], t["torch"] / t["tilus"], t["triton"] / t["tilus"], gbs])
            results.append({"kernel": "softmax", "dtype": dname, "m": m, "n": n, **{f"{k}_ms": v for k, v in t.items()}})
    print_table("softmax (ms)", ["dtype", "m", "n", "tilus", "torch", "triton", "copy", "vs copy",
                                 "torch/tilus", "triton/tilus", "tilus GB/s"], rows)


def bench_long_rows(shapes, results):
    """Softmax of rows too long for one block: the ring (cluster_split=False) and a
    cluster of blocks a row (cluster_split=True, _cluster_split's choice)."""
    sm = load_example("softmax")
    rows = []
    for dname, m, n in shapes:
        x = (torch.randn(m, n, device="cuda") * 3).to(_DTYPES[dname])
        expected = torch.softmax(x.float(), dim=1).to(x.dtype)
        t = {}
        for name, split in (("ring", False), ("cluster", True)):
            y = torch.full_like(x, float("nan"))
            sm.softmax(x, y, cluster_split=split)
            torch.testing.assert_close(y, expected, atol=2e-3, rtol=2e-2)
            t[name] = median_ms(lambda: sm.softmax(x, y, cluster_split=split))
        yt = torch.full_like(x, float("nan"))
        triton_rowwise.softmax(x, yt)
        torch.testing.assert_close(yt, expected, atol=2e-3, rtol=2e-2)
        t.update(torch=median_ms(lambda: torch.softmax(x, dim=1)), triton=median_ms(lambda: triton_rowwise.softmax(x, yt)),
                 copy=_copy_ms(x))
        split = sm._cluster_split(x.device, n, x.element_size())
        rows.append([dname, m, n, t["ring"], t["cluster"], str(split), t["torch"], t["triton"], t["copy"],
                     t["ring"] / t["copy"], t["cluster"] / t["copy"]])
        results.append({"kernel": "softmax_long_rows", "dtype": dname, "m": m, "n": n, "cluster": split,
                        **{f"{k}_ms": v for k, v in t.items()}})
    print_table("softmax, rows longer than shared memory (ms)", ["dtype", "m", "n", "ring", "cluster", "(blocks, tiles)",
                                                                 "torch", "triton", "copy", "ring vs copy",
                                                                 "cluster vs copy"], rows)


def bench_norms(shapes, dtypes, results):
    nm = load_example("norms")
    rows = []
    for dname in dtypes:
        dtype = _DTYPES[dname]
        for m, n in shapes:
            x = (torch.randn(m, n, device="cuda") * 2 + 0.5).to(dtype)
            w = torch.randn(n, device="cuda").to(dtype)
            b = torch.randn(n, device="cuda").to(dtype)
            tol = dict(atol=2e-2, rtol=2e-2)
            ref_ln = torch.nn.functional.layer_norm(x.float(), [n], w.float(), b.float(), 1e-5).to(dtype)
            xf = x.float()
            ref_rms = (xf * torch.rsqrt(xf.pow(2).mean(1, keepdim=True) + 1e-6) * w.float()).to(dtype)
            y = torch.full_like(x, float("nan"))
            nm.layer_norm(x, w, b, 1e-5, out=y)
            torch.testing.assert_close(y, ref_ln, **tol)
            yt = torch.full_like(x, float("nan"))
            triton_rowwise.layer_norm(x, w, b, yt, 1e-5)
            torch.testing.assert_close(yt, ref_ln, **tol)
            z = torch.full_like(x, float("nan"))
            nm.rms_norm(x, w, 1e-6, out=z)
            torch.testing.assert_close(z, ref_rms, **tol)
            zt = torch.full_like(x, float("nan"))
            triton_rowwise.rms_norm(x, w, zt, 1e-6)
            torch.testing.assert_close(zt, ref_rms, **tol)
            copy = _copy_ms(x)
            for kernel, tilus_fn, torch_fn, triton_fn in [
                ("layer_norm", lambda: nm.layer_norm(x, w, b, 1e-5, out=y),
                 lambda: torch.nn.functional.layer_norm(x, [n], w, b, 1e-5),
                 lambda: triton_rowwise.layer_norm(x, w, b, yt, 1e-5)),
                ("rms_norm", lambda: nm.rms_norm(x, w, 1e-6, out=z),
                 lambda: torch.nn.functional.rms_norm(x, [n], w, 1e-6),
                 lambda: triton_rowwise.rms_norm(x, w, zt, 1e-6)),
            ]:
                t = {"tilus": median_ms(tilus_fn), "torch": median_ms(torch_fn),
                     "triton": median_ms(triton_fn), "copy": copy}
                rows.append([kernel, dname, m, n, t["tilus"], t["torch"], t["triton"], copy,
                             t["tilus"] / copy, t["torch"] / t["tilus"], t["triton"] / t["tilus"]])
                results.append({"kernel": kernel, "dtype": dname, "m": m, "n": n,
                                **{f"{k}_ms": v for k, v in t.items()}})
    print_table("layer norm / RMS norm (ms)", ["kernel", "dtype", "m", "n", "tilus", "torch", "triton",
                                               "copy", "vs copy", "torch/tilus", "triton/tilus"], rows)


def main(argv):
    quick = "--quick" in argv
    results = []
    if "--unaligned" in argv:  # (rows of one tile, 20001 and 32001; longer, 50257 and 131071)
        bench_softmax([(4096, 20001), (4096, 32001), (4096, 50257), (2048, 131071)], ["fp16", "fp32"], results)
        write_results("bench_rowwise", argv, results)
        return
    if "--long-rows" in argv:
        bench_long_rows([("fp16", 2048, 131071), ("bf16", 2048, 131072), ("fp32", 2048, 131071),
                         ("fp16", 4096, 65537), ("fp32", 4096, 50257), ("fp16", 1024, 262144)], results)
        write_results("bench_rowwise", argv, results)
        return
    # (4096, 50257): logits over a GPT-2-sized vocabulary, rows longer than one tile and
    # not 16-byte aligned
    softmax_shapes = ([(8192, 8192), (4096, 32768)] if quick else
                      [(8192, 8192), (4096, 4096), (1823, 781), (4096, 32768), (4096, 50257)])
    bench_softmax(softmax_shapes, ["fp16"] if quick else ["fp16", "bf16", "fp32"], results)
    bench_norms([(4096, 4096), (8192, 8192)], ["fp16"] if quick else ["fp16", "bf16"], results)
    write_results("bench_rowwise", argv, results)


if __name__ == "__main__":
    main(sys.argv[1:])
