"""The mma.sync ceiling of this GPU: a kernel that does nothing but m16n8k16 fp16 mma
with fp32 accumulators held in registers (no memory traffic, many independent chains,
several warps per scheduler), timed with CUDA events. It measures the bound the seed's
MatmulV5 design cannot pass, to compare with its matmul results and with cuBLAS (wgmma).

    python benchmarks/mma_ceiling.py [--out DIR]
"""

import struct
import sys
import pathlib

import torch

from tilus._C import runtime

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import median_ms, print_table, write_results  # noqa: E402

CHAINS = 8  # independent accumulators per warp: enough to cover the mma latency
SOURCE = r"""
#include "tilus/runtime.cuh"
extern "C" __global__ void mma_loop(float* out, int iterations) {
  float acc[%(chains)d][4] = {};
  unsigned a[4], b[2];
  #pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u ^ (threadIdx.x * 2654435761u >> (i + 20));  // finite halves
  b[0] = a[1] ^ a[2];
  b[1] = a[0] ^ a[3];
  for (int it = 0; it < iterations; ++it) {
    #pragma unroll
    for (int c = 0; c < %(chains)d; ++c) tilus::mma_m16n8k16_f16_f32(acc[c], a, b, acc[c]);
  }
  float s = 0.f;
  #pragma unroll
  for (int c = 0; c < %(chains)d; ++c) s += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
""" % {"chains": CHAINS}


def main(argv):
    props = torch.cuda.get_device_properties(0)
    cubin = runtime.compile_cache().get_or_compile(SOURCE, "mma_loop.cu", runtime.arch_string())
    kernel = runtime.LoadedKernel(cubin, "mma_loop")
    iterations = 4096
    rows, results = [], []
    for warps_per_block, blocks_per_sm in ((4, 2), (8, 1), (8, 2), (16, 1)):
        blocks = props.multi_processor_count * blocks_per_sm
        threads = 32 * warps_per_block
        out = torch.empty(blocks * threads, device="cuda")
        slots = struct.pack("<Qi4x", out.data_ptr(), iterations)  # one 8-byte slot per argument
        stream = torch.cuda.current_stream().cuda_stream

        def run():
            kernel.launch_packed(blocks, threads, 0, stream, slots)

        ms = median_ms(run)
        flops = 2.0 * 16 * 8 * 16 * CHAINS * iterations * blocks * warps_per_block
        tflops = flops / ms * 1e-9
        rows.append([f"{warps_per_block} warps x {blocks_per_sm} blocks/SM", ms, tflops])
        results.append({"warps_per_block": warps_per_block, "blocks_per_sm": blocks_per_sm, "ms": ms,
                        "tflops": tflops})
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
    t = median_ms(lambda: a @ a)
    cublas = 2.0 * 8192 ** 3 / t * 1e-9
    rows.append(["cuBLAS 8192^3 fp16 (wgmma)", t, cublas])
    results.append({"cublas_8192_tflops": cublas})
    print_table(f"mma.sync m16n8k16 fp16->fp32 ceiling on {props.name}", ["kernel", "ms", "TFLOP/s"], rows)
    write_results("mma_ceiling", argv, results)


if __name__ == "__main__":
    main(sys.argv[1:])
