"""Runs one MatmulV5 configuration a few times, for ncu:

    ncu -k regex:matmul_v5 -c 1 --section SpeedOfLight --section WarpStateStats \
        python3 benchmarks/profile_one.py 4096 4096 4096 4 128 128 32 4 1
"""

import math
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import load_example  # noqa: E402

v5 = load_example("matmul_v5_splitk")

m, n, k, warps, bm, bn, bk, stages, split = (int(x) for x in sys.argv[1:10])
kernel = v5.MatmulV5(num_warps=warps, block_m=bm, block_n=bn, block_k=bk, num_stages=stages,
                     split_k_factor=split)
a = ((torch.rand(m, k, device="cuda") - 0.5) / math.sqrt(k)).half()
b = ((torch.rand(k, n, device="cuda") - 0.5) / math.sqrt(k)).half()
c = torch.empty(m, n, dtype=torch.float16, device="cuda")
for _ in range(3):
    kernel(m, n, k, a, b, c)
torch.cuda.synchronize()
