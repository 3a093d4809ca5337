"""A separate process that tunes `Scale` on the real GPU and reports what it did:
    python child_gpu.py REPORT.json
Run with TILUS_CACHE_DIR set by the parent."""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.autotune import fakes  # noqa: E402
from tests.autotune.kernels import Scale  # noqa: E402


def main():
    kernel = Scale(3.0)
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    start = time.perf_counter()
    kernel(1000, x)
    torch.cuda.synchronize()
    first_call_ms = (time.perf_counter() - start) * 1e3
    expected = torch.arange(1000, dtype=torch.float32, device="cuda") * 3
    fakes.report(sys.argv[1], config=kernel.chosen_config(1000, x),
                 correct=bool(torch.equal(x, expected)), table=kernel.tuning_table(),
                 first_call_ms=first_call_ms, **fakes.counters())


if __name__ == "__main__":
    main()
