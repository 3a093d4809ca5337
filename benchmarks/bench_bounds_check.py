"""Cost of tilus.option.debug.bounds_check on the GPU: the seed-style pipelined matmul
(examples/matmul_v3_pipeline.py, fp16 4096^3) and the softmax example (fp16 8192x8192)
built without and with the check, medians of CUDA-event timings with L2 flushed.

    PYTHONPATH=python python benchmarks/bench_bounds_check.py

Both builds are timed as kernels (the checked one launched with its hidden arguments,
without the synchronisation and record read a checked call adds, which the "call"
column shows separately). Target: checked / unchecked <= 3.0 for the kernel time.
Before timing, each checked build runs once through the ordinary call with the option on
(it must report nothing) and its result is compared with torch.
"""

from __future__ import annotations

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import load_example, median_ms  # noqa: E402

import tilus  # noqa: E402
from tilus import _C  # noqa: E402
from tilus.arguments import prepare_runtime_args  # noqa: E402
from tilus.runtime import bounds  # noqa: E402
from tilus.runtime.launcher import alignment_of  # noqa: E402


def kernel_launcher(script, args, checked: bool):
    """A function launching `script`'s build (checked or not) on `args` with nothing
    else around it: the kernel's own time."""
    handle = script.compiled(*args)
    compiled = handle.compiled
    runtime_args, tensors = prepare_runtime_args(handle.sig, list(args), type(script).__name__)
    compiled._ensure_gpu()
    gpu = compiled.gpu
    device = torch.cuda.current_device()
    variant = gpu.variant(alignment_of(compiled.program, runtime_args), device, checked)
    grid, workspaces = _C.evaluate_launch_shape(compiled.program, runtime_args)
    assert not workspaces, "this benchmark's kernels use no workspace"
    stream = torch.cuda.current_stream().cuda_stream
    packed = list(zip(gpu.kinds, runtime_args))
    if checked:
        sizes = {t.param: t.nbytes for t in tensors}
        names = [handle.sig.params[i].name for i in handle.sig.runtime_indices]
        record = bounds.record_pointer(device, stream)
        packed += bounds.hidden_args(variant.generated, [sizes.get(n, -1) for n in names], record)
    grid = tuple(grid)
    return lambda: variant.kernel.launch(grid, variant.threads, variant.smem, stream, packed)


def run_checked_once(script, args, check):
    tilus.option.debug.bounds_check(True)
    try:
        script(*args)  # raises ScriptBoundsError if any access were outside its tensor
    finally:
        tilus.option.debug.bounds_check(False)
    torch.cuda.synchronize()
    check()


def row(name, script, args, check):
    run_checked_once(script, args, check)
    plain = median_ms(kernel_launcher(script, args, False))
    checked = median_ms(kernel_launcher(script, args, True))
    tilus.option.debug.bounds_check(True)
    try:
        call = median_ms(lambda: script(*args))
    finally:
        tilus.option.debug.bounds_check(False)
    print(f"{name:28s} {plain:9.3f} {checked:9.3f} {checked / plain:7.2f}x {call:9.3f}")
    return checked / plain


def main():
    torch.manual_seed(0)
    tilus.option.debug.bounds_check(False)
    print(f"{'kernel':28s} {'off ms':>9s} {'on ms':>9s} {'ratio':>8s} {'call ms':>9s}")
    ratios = []

    mm = load_example("matmul_v3_pipeline")
    m = n = k = 4096
    a = torch.randn(m, k, device="cuda").half()
    b = torch.randn(k, n, device="cuda").half()
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    ref = (a.float() @ b.float()).half()
    ratios.append(row("matmul_v3 fp16 4096^3", mm.MatmulV3(), (m, n, k, a, b, c),
                      lambda: torch.testing.assert_close(c, ref, rtol=2e-2, atol=2e-1)))

    sm = load_example("softmax")
    x = (torch.randn(8192, 8192, device="cuda") * 3).half()
    y = torch.empty_like(x)
    expected = torch.softmax(x.float(), dim=1).half()
    for block_m, warps in ((1, 8), (2, 8), (1, 4)):
        script = sm.Softmax(tilus.float16, 8192, block_m, warps, persistent=False, staged=False, long_split=1, prefetch=False)
        ratios.append(row(f"softmax fp16 8192^2 m{block_m} w{warps}", script, (8192, 8192, 132, x, y),
                          lambda: torch.testing.assert_close(y, expected, atol=2e-3, rtol=2e-2)))
    worst = max(ratios)
    verdict = "ok" if worst <= 3.0 else "OVER"
    print(f"worst checked/unchecked: {worst:.2f}x (target <= 3.0x): {verdict}")


if __name__ == "__main__":
    main()
