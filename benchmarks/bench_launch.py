"""Host overhead per launch: back-to-back calls of a tiny kernel with 6 arguments
(3 tensors, 3 scalars) in tilus and Triton, against torch.Tensor.add_.

    python benchmarks/bench_launch.py [--out DIR]

Each measurement times 400 calls on the host (no synchronisation inside), 5 times; the
launchers take turns over 7 rounds and the table shows, per launcher, the median over
all rounds of microseconds per call and the ratio to add_. Beside tilus, Triton and
add_: the floor under any launcher (the same tilus kernel through the runtime binding
with its argument block packed once: cuLaunchKernel plus one pybind11 call), the
driver's own cost (an empty kernel without arguments), torch's cheapest launch
(`torch.cuda._sleep(0)`: one kernel through the CUDA runtime), and tilus's native
launcher entered through pybind11. Two more tables break the native launcher's host
time into its phases and list what each torch query it makes costs.
"""

import statistics
import struct
import sys
import time
import pathlib

import torch

import tilus
from tilus import _C, float32, int32
from tilus.utils import cdiv

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import print_table, write_results  # noqa: E402


class Axpby(tilus.Script):
    def __call__(self, n: int32, alpha: float32, beta: float32, x_ptr: ~float32, y_ptr: ~float32,
                 out_ptr: ~float32):
        self.attrs.blocks = cdiv(n, 128)
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])
        go = self.global_view(out_ptr, dtype=float32, shape=[n])
        x = self.load_global(gx, offsets=[self.blockIdx.x * 128], shape=[128])
        y = self.load_global(gy, offsets=[self.blockIdx.x * 128], shape=[128])
        self.store_global(go, x * alpha + y * beta, offsets=[self.blockIdx.x * 128])


ROUNDS = 7


def per_call_us(fn, calls=400, repeats=25) -> float:
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(samples)


def main(argv):
    n = 1024
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    kernel = Axpby()
    kernel(n, 2.0, 3.0, x, y, out)
    torch.testing.assert_close(out, 2 * x + 3 * y)
    rows, results = [], []
    launchers = [("torch.Tensor.add_", lambda: x.add_(y)), ("tilus (6 args)", lambda: kernel(n, 2.0, 3.0, x, y, out))]
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def axpby(x, y, o, n, alpha, beta, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(o + i, alpha * tl.load(x + i, mask=i < n) + beta * tl.load(y + i, mask=i < n), mask=i < n)

        def run_triton():
            axpby[(triton.cdiv(n, 128),)](x, y, out, n, 2.0, 3.0, BLOCK=128)

        run_triton()
        launchers.append(("triton (6 args)", run_triton))
    except Exception as e:  # noqa: BLE001
        print(f"triton unavailable: {e}")
    # the build the calls above used (variants are keyed by (aligned build, device))
    variant = next(iter(next(iter(kernel._tilus_compiled.values())).gpu.variants.values()))
    slots = struct.pack("<i4xf4xf4xQQQ", n, 2.0, 3.0, x.data_ptr(), y.data_ptr(), out.data_ptr())  # 8-byte slots
    stream = torch.cuda.current_stream().cuda_stream
    grid, threads = (cdiv(n, 128), 1, 1), variant.threads
    out.fill_(float("nan"))
    variant.kernel.launch_packed(grid, threads, variant.smem, stream, slots)
    torch.testing.assert_close(out, 2 * x + 3 * y)
    launchers.append(("floor: cuLaunchKernel, args packed once",
                      lambda: variant.kernel.launch_packed(grid, threads, variant.smem, stream, slots)))
    # The driver's own cost: an empty kernel without arguments, one block.
    rt = _C.runtime
    empty = rt.LoadedKernel(rt.compile_to_cubin('extern "C" __global__ void empty_kernel() {}', "empty_kernel",
                                                rt.arch_string(), []), "empty_kernel")
    launchers.append(("driver: empty kernel, no arguments", lambda: empty.launch_packed((1, 1, 1), 32, 0, stream, b"")))
    # torch's own cheapest launch: one tiny kernel through the CUDA runtime, no dispatcher
    launchers.append(("torch.cuda._sleep(0): runtime-API launch", lambda: torch.cuda._sleep(0)))
    # the native launcher entered through pybind11 instead of the script's C call slot
    launcher = next(iter(kernel._tilus_fast.values()))
    launchers.append(("tilus launcher called directly", lambda: launcher(n, 2.0, 3.0, x, y, out)))
    # Rounds interleave the launchers, so that a host's drift (these hosts vary by 20-30%
    # within a minute) reaches all of them alike; each entry is the median over rounds.
    samples = {name: [] for name, _ in launchers}
    for _ in range(ROUNDS):
        for name, fn in launchers:
            samples[name].append(per_call_us(fn, repeats=5))
    entries = [(name, statistics.median(v)) for name, v in samples.items()]
    t_add = entries[0][1]
    # Where the native launcher's host time goes, phase by phase (each phase looped on its
    # own in C++, so the sum misses only the call into the launcher).
    launcher.time_phases((n, 2.0, 3.0, x, y, out), 400)  # warm-up, not reported
    phases = launcher.time_phases((n, 2.0, 3.0, x, y, out), 4000)
    torch.cuda.synchronize()
    print_table("native launcher, host ns per call by phase", ["phase", "ns"],
                [[name, ns] for name, ns in phases.items()])
    # What each torch query costs on a CUDA tensor (timed from Python, the cost of an empty
    # lambda call subtracted): the launcher's argument phase is made of these.
    queries = {"x.dtype": lambda: x.dtype, "x.is_contiguous()": lambda: x.is_contiguous(),
               "x.get_device()": lambda: x.get_device(), "x.is_cuda": lambda: x.is_cuda,
               "x.data_ptr()": lambda: x.data_ptr(),
               "torch._C._cuda_getCurrentRawStream(0)": lambda: torch._C._cuda_getCurrentRawStream(0)}
    empty = per_call_us(lambda: None, calls=4000)
    query_ns = {name: (per_call_us(fn, calls=4000) - empty) * 1e3 for name, fn in queries.items()}
    print_table("torch queries, host ns per call (Python call overhead subtracted)", ["query", "ns"],
                [[name, ns] for name, ns in query_ns.items()])
    for name, us in entries:
        rows.append([name, us, us / t_add])
        results.append({"name": name, "us_per_call": us, "vs_add_": us / t_add})
    results.append({"name": "native launcher phases (ns)", "phases": phases})
    results.append({"name": "torch queries (ns)", "queries": query_ns})
    print_table("launch overhead (host time per call)", ["launcher", "us/call", "x add_"], rows)
    write_results("bench_launch", argv, results)


if __name__ == "__main__":
    main(sys.argv[1:])
