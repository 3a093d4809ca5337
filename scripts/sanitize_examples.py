"""Runs every example kernel once at small odd shapes on the GPU, checking results.
Meant to run under compute-sanitizer (memcheck, racecheck) from scripts/gpu_check.sh."""

import importlib.util
import math
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mats(m, n, k, dtype=torch.float16):
    a = ((torch.rand(m, k, device="cuda") - 0.5) / math.sqrt(k)).to(dtype)
    b = ((torch.rand(k, n, device="cuda") - 0.5) / math.sqrt(k)).to(dtype)
    c = torch.full((m, n), float("nan"), dtype=dtype, device="cuda")
    return a, b, c


def check(name, c, expected, tol=1e-2):
    torch.cuda.synchronize()
    torch.testing.assert_close(c, expected, rtol=tol, atol=tol)
    print(f"{name}: ok")


def main():
    m, n, k = 37, 100, 200
    n1 = 1000
    x = torch.randn(n1, device="cuda")
    y = torch.full((n1,), float("nan"), device="cuda")
    load("add_one").AddOneKernel(128, 4)(n1, x, y)
    check("add_one", y, x + 1)

    cases = [
        ("matmul_v0_jit", lambda mod: mod.Matmul()),
        ("matmul_v1_shared", lambda mod: mod.MatmulV1()),
        ("matmul_v2_autotune", lambda mod: mod.MatmulV2(num_warps=4, block_m=64, block_n=128, block_k=32)),
        ("matmul_v3_pipeline", lambda mod: mod.MatmulV3()),
    ]
    for split_k in (1, 4, 12):
        cases.append((f"matmul_v5_splitk[split_k={split_k}]", lambda mod, s=split_k: mod.MatmulV5(
            num_warps=4, block_m=64, block_n=128, block_k=32, num_stages=3, split_k_factor=s)))
    # two warpgroups on Hopper (wgmma dots waiting before each barrier)
    cases.append(("matmul_v5_splitk[8 warps]", lambda mod: mod.MatmulV5(
        num_warps=8, block_m=128, block_n=128, block_k=32, num_stages=3, split_k_factor=1)))
    cases.append(("matmul_decode_splitk", lambda mod: mod.MatmulDecode(
        num_warps=4, block_n=64, block_k=64, split_k=8, num_stages=3)))
    for name, make in cases:
        kernel = make(load(name.split("[")[0]))
        a, b, c = mats(m, n, k)
        kernel(m, n, k, a, b, c)
        check(name, c, (a.double() @ b.double()).half())

    simt = load("matmul_relu_fp32_simt").MatmulReluSimt()
    a, b, c = mats(m, n, k, torch.float32)
    simt(m, n, k, a, b, c)
    check("matmul_relu_fp32_simt", c, (a.double() @ b.double()).relu().float(), 1e-4)


if __name__ == "__main__":
    sys.exit(main())
