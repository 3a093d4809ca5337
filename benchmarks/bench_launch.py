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
time into its phases and list what each torch query it makes costs. On sm_90 a last
table prices TMA tensor maps: a tile copy through two TMA maps whose tensors repeat (maps
cached), the same copy cycling through 6 buffer pairs (more than the 4 parameter sets
kept per map: every call encodes both maps), and the same copy without TMA.
"""

import statistics
import struct
import sys
import time
import pathlib

import torch

import tilus
from tilus import _C, float16, float32, int32
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


class TileCopyTma(tilus.Script):
    """y = x through TMA: one 64 x 64 tile per block, two tensor maps."""

    def __call__(self, m: int32, n: int32, x_ptr: ~float16, y_ptr: ~float16):
        self.attrs.blocks = [cdiv(m, 64), cdiv(n, 64)]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float16, shape=[m, n])
        gy = self.global_view(y_ptr, dtype=float16, shape=[m, n])
        s = self.shared_tensor(dtype=float16, shape=[64, 64])
        bar = self.mbarrier.alloc()
        self.mbarrier.arrive_and_expect_tx(bar, 64 * 64 * 2 // 128)
        self.tma.global_to_shared(src=gx, dst=s, offsets=[self.blockIdx.x * 64, self.blockIdx.y * 64], mbarrier=bar)
        self.mbarrier.wait(bar, phase=0)
        self.tma.shared_to_global(s, gy, offsets=[self.blockIdx.x * 64, self.blockIdx.y * 64])
        self.tma.commit_group()
        self.tma.wait_group(0)


class TileCopy(tilus.Script):
    """y = x through registers, the same signature without TMA."""

    def __call__(self, m: int32, n: int32, x_ptr: ~float16, y_ptr: ~float16):
        self.attrs.blocks = [cdiv(m, 64), cdiv(n, 64)]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float16, shape=[m, n])
        gy = self.global_view(y_ptr, dtype=float16, shape=[m, n])
        t = self.load_global(gx, offsets=[self.blockIdx.x * 64, self.blockIdx.y * 64], shape=[64, 64])
        self.store_global(gy, t, offsets=[self.blockIdx.x * 64, self.blockIdx.y * 64])


def tma_launch_costs():
    """Rows (name, us per call) pricing tensor maps; [] before sm_90."""
    if torch.cuda.get_device_capability()[0] < 9:
        print("TMA launch costs skipped: TMA needs sm_90 (Hopper)")
        return [], {}
    m = n = 256
    pairs = [(torch.randn(m, n, device="cuda").half(), torch.empty(m, n, device="cuda").half()) for _ in range(6)]
    tma, plain = TileCopyTma(), TileCopy()
    for k in (tma, plain):
        x, y = pairs[0]
        y.fill_(float("nan"))
        k(m, n, x, y)
        torch.testing.assert_close(y, x)
    x, y = pairs[0]
    cycle = iter(())

    def cycling():
        nonlocal cycle
        try:
            xx, yy = next(cycle)
        except StopIteration:
            cycle = iter(pairs)
            xx, yy = next(cycle)
        tma(m, n, xx, yy)

    launchers = [("tilus TMA copy, 2 maps, same tensors (cached)", lambda: tma(m, n, x, y)),
                 ("tilus TMA copy, 6 buffer pairs (encoded every call)", cycling),
                 ("tilus copy without TMA, same signature", lambda: plain(m, n, x, y))]
    samples = {name: [] for name, _ in launchers}
    for _ in range(ROUNDS):
        for name, fn in launchers:
            samples[name].append(per_call_us(fn, repeats=5))
    launcher = next(iter(tma._tilus_fast.values()))
    launcher.time_phases((m, n, x, y), 400)
    phases = launcher.time_phases((m, n, x, y), 4000)
    torch.cuda.synchronize()
    return [(name, statistics.median(v)) for name, v in samples.items()], phases


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
    tma_rows, tma_phases = tma_launch_costs()
    if tma_rows:
        print_table("TMA tensor maps: native launcher, host ns per call by phase", ["phase", "ns"],
                    [[name, ns] for name, ns in tma_phases.items()])
        print_table("TMA tensor maps (host time per call)", ["launcher", "us/call", "x add_"],
                    [[name, us, us / t_add] for name, us in tma_rows])
        results += [{"name": name, "us_per_call": us, "vs_add_": us / t_add} for name, us in tma_rows]
        results.append({"name": "TMA native launcher phases (ns)", "phases": tma_phases})
    write_results("bench_launch", argv, results)


if __name__ == "__main__":
    main(sys.argv[1:])
