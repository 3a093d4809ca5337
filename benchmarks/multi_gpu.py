"""Many GPUs and many processes (issue 16), measured with the seed MatmulV5 at 4096^3.

Run under torchrun on a machine with 2 GPUs (each mode prints one JSON line and, with
--out, appends it to a file; benchmarks/README.md has the commands):

  ranks   (torchrun --nproc_per_node 2)  a cold job: every rank calls the tuned kernel
          once on its own GPU. Reports the compiles of every rank (target: 192 in total,
          not 384), the winner of every rank (they must agree), and each rank's
          first-call wall time.
  single  (python, one process)          the same first call in a single process on a
          cold cache: the baseline of the ranks' first call (target: ranks <= 1.15x).
  spread  (python, one process)          tuning one key on 1 GPU, then on 2 GPUs
          (tilus.option.tuning(spread=True)), both with the compile cache warm, so only
          the timing differs (target: 2 GPUs <= 0.6x).
  launch  (python, one process)          host time of a native launch on cuda:0 and on
          cuda:1 while cuda:0 is current (target: within 5%).
  summary FILE                            agreement and ratios over the lines of FILE.

A fresh cold cache directory is made per run unless --cache names one (ranks share it:
rank 0 makes it and publishes it through the process group's store).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The source tree only where it holds a built extension (a dev build): on a machine that
# installed tilus with pip it would shadow the installed package with one without _C.
if any((ROOT / "python" / "tilus").glob("_C*.so")):
    sys.path.insert(0, str(ROOT / "python"))
M = N = K = 4096


def load_v5():
    path = ROOT / "examples" / "matmul_v5_splitk.py"
    spec = importlib.util.spec_from_file_location("bench_matmul_v5", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.MatmulV5


def cold_cuda_cache():
    # NVRTC answers repeated compiles from the CUDA cache under ~/.nv: keep it out.
    os.environ["CUDA_CACHE_PATH"] = tempfile.mkdtemp(prefix="tilus_mgpu_cuda_cache_")
    os.environ["CUDA_CACHE_DISABLE"] = "1"


def inputs(device):
    import torch

    torch.manual_seed(0)
    a = ((torch.rand(M, K, device=device) - 0.5) / K ** 0.5).half()
    b = ((torch.rand(K, N, device=device) - 0.5) / K ** 0.5).half()
    c = torch.empty(M, N, dtype=torch.float16, device=device)
    return a, b, c


def first_call(device):
    """(milliseconds of the first call of a fresh tuned MatmulV5, its configuration,
    whether it computed a @ b)."""
    import torch

    matmul = load_v5()()
    a, b, c = inputs(device)
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    matmul(M, N, K, a, b, c)
    torch.cuda.synchronize(device)
    ms = (time.perf_counter() - start) * 1e3
    ok = bool(torch.allclose(c.float(), a.float() @ b.float(), rtol=2e-2, atol=2e-2))
    return ms, matmul.chosen_config(M, N, K, a, b, c), ok


def mode_ranks(args):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    store = dist.distributed_c10d._get_default_store()
    if rank == 0:
        cache = args.cache or tempfile.mkdtemp(prefix="tilus_mgpu_")
        store.set("bench/cache", cache)
    cache = store.get("bench/cache").decode()
    import tilus
    from tilus import _C

    tilus.option.cache_dir(cache)
    ms, config, ok = first_call(f"cuda:{local}")
    mine = {"rank": rank, "first_call_ms": ms, "config": config, "correct": ok,
            "compiles": _C.runtime.compile_cache().stats()["compiles"],
            "stats": dict(tilus.autotune.STATS)}
    store.set(f"bench/rank{rank}", json.dumps(mine))
    if rank == 0:
        everyone = [json.loads(store.get(f"bench/rank{r}")) for r in range(world)]
        configs = {json.dumps(r["config"], sort_keys=True) for r in everyone}
        emit(args, {"mode": "ranks", "world": world,
                    "dist_tuning": tilus.option.get_distributed_tuning().mode,
                    "total_compiles": sum(r["compiles"] for r in everyone),
                    "agree": len(configs) == 1,
                    "first_call_ms": max(r["first_call_ms"] for r in everyone),
                    "ranks": everyone})
        if not args.cache:
            shutil.rmtree(cache, ignore_errors=True)
    dist.barrier()
    dist.destroy_process_group()


def mode_single(args):
    import tilus
    from tilus import _C

    cache = args.cache or tempfile.mkdtemp(prefix="tilus_mgpu_")
    tilus.option.cache_dir(cache)
    ms, config, ok = first_call("cuda:0")
    emit(args, {"mode": "single", "first_call_ms": ms, "config": config, "correct": ok,
                "compiles": _C.runtime.compile_cache().stats()["compiles"]})
    if not args.cache:
        shutil.rmtree(cache, ignore_errors=True)


def mode_spread(args):
    import torch

    import tilus

    if torch.cuda.device_count() < 2:
        sys.exit("spread needs 2 GPUs")
    cache = args.cache or tempfile.mkdtemp(prefix="tilus_mgpu_")
    tilus.option.cache_dir(cache)
    first_call("cuda:0")  # compiles every configuration: later tunings only time
    times = {}
    for label, spread in (("one_gpu", False), ("two_gpus", True)):
        shutil.rmtree(os.path.join(cache, "tuning"), ignore_errors=True)
        tilus.option.tuning(spread=spread)
        times[label] = [first_call("cuda:0")[0] for _ in range(args.repeat)]
    one, two = statistics.median(times["one_gpu"]), statistics.median(times["two_gpus"])
    emit(args, {"mode": "spread", "one_gpu_ms": one, "two_gpus_ms": two,
                "ratio": two / one, "samples": times})
    if not args.cache:
        shutil.rmtree(cache, ignore_errors=True)


def mode_launch(args):
    import torch

    if torch.cuda.device_count() < 2:
        sys.exit("launch needs 2 GPUs")
    example = ROOT / "examples" / "add_one.py"
    spec = importlib.util.spec_from_file_location("bench_add_one", example)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = module.AddOneKernel(block_n=128, warps=4)
    results = {}
    torch.cuda.set_device(0)
    for device in ("cuda:0", "cuda:1"):
        a = torch.randn(1024, device=device)
        b = torch.empty(1024, device=device)
        kernel(1024, a, b)  # builds, loads and registers the native launcher
        samples = []
        for _ in range(args.repeat):
            torch.cuda.synchronize(device)
            start = time.perf_counter()
            for _ in range(10000):
                kernel(1024, a, b)
            samples.append((time.perf_counter() - start) / 10000 * 1e6)
            torch.cuda.synchronize(device)
        results[device] = statistics.median(samples)
    emit(args, {"mode": "launch", "cuda0_us": results["cuda:0"], "cuda1_us": results["cuda:1"],
                "ratio": results["cuda:1"] / results["cuda:0"],
                "current_device_after": torch.cuda.current_device()})


def summary(path):
    lines = [json.loads(line) for line in open(path) if line.strip()]
    ranks = [r for r in lines if r["mode"] == "ranks"]
    single = [r for r in lines if r["mode"] == "single"]
    if ranks:
        print(f"ranks: {sum(r['agree'] for r in ranks)} of {len(ranks)} runs agreed; "
              f"compiles per cold job: {sorted(r['total_compiles'] for r in ranks)}")
    if ranks and single:
        a = statistics.median(r["first_call_ms"] for r in ranks)
        b = statistics.median(r["first_call_ms"] for r in single)
        print(f"first call: ranks {a:.0f} ms vs single {b:.0f} ms = {a / b:.2f}x (target <= 1.15)")
    for r in lines:
        if r["mode"] == "spread":
            print(f"tuning: 1 GPU {r['one_gpu_ms']:.0f} ms, 2 GPUs {r['two_gpus_ms']:.0f} ms "
                  f"= {r['ratio']:.2f}x (target <= 0.6)")
        if r["mode"] == "launch":
            print(f"launch: cuda:0 {r['cuda0_us']:.2f} us, cuda:1 {r['cuda1_us']:.2f} us = "
                  f"{r['ratio']:.3f}x (target <= 1.05)")


def emit(args, record):
    text = json.dumps(record, sort_keys=True)
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write(text + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["ranks", "single", "spread", "launch", "summary"])
    parser.add_argument("file", nargs="?", help="summary: the JSON lines to read")
    parser.add_argument("--out", help="append the result as a JSON line to this file")
    parser.add_argument("--cache", help="cache directory (default: a fresh one per run)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("TILUS_PROGRESS", "0")
    if args.mode == "summary":
        return summary(args.file)
    cold_cuda_cache()
    {"ranks": mode_ranks, "single": mode_single, "spread": mode_spread,
     "launch": mode_launch}[args.mode](args)


if __name__ == "__main__":
    main()
