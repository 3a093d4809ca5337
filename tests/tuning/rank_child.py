"""One rank of a torch.distributed (gloo, CPU) job that tunes `Scale` on the fake GPU:
    python rank_child.py REPORT_DIR RANK WORLD PORT SCENARIO
Each rank times the configurations with its own fake costs (ranks disagree on purpose)
and reports the configuration it launched and its counters to REPORT_DIR/<rank>.json.
SCENARIO: "rank0", "all" (the modes), "partial" (only the last rank calls the kernel,
with a 2 s timeout). Run with TILUS_CACHE_DIR set by the parent."""

import os
import sys
from datetime import timedelta

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch.distributed as dist  # noqa: E402

import tilus  # noqa: E402
from tests.autotune import fakes  # noqa: E402
from tests.autotune.kernels import Scale  # noqa: E402

# Fake milliseconds per rank and configuration (warps, block): each rank has a
# different favourite, and the best total over ranks 0 and 1 is (1, 64), the
# favourite of neither rank 0 nor rank 2.
COSTS = {
    0: {(1, 32): 1.0, (1, 64): 4.0, (2, 32): 5.0, (2, 64): 6.0},
    1: {(1, 32): 9.0, (1, 64): 2.0, (2, 32): 3.0, (2, 64): 8.0},
    2: {(1, 32): 5.0, (1, 64): 5.0, (2, 32): 0.5, (2, 64): 9.0},
}


def main():
    report_dir, rank, world, port, scenario = sys.argv[1], *map(int, sys.argv[2:5]), sys.argv[5]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=timedelta(seconds=60))
    costs = COSTS[rank]
    bench = fakes.install(cost=lambda config: costs[(config["warps"], config["block"])])
    if scenario in ("rank0", "all"):
        tilus.option.distributed_tuning(scenario)
    else:
        tilus.option.distributed_tuning("rank0", timeout_s=2)
    kernel = Scale(3.0)
    x = np.arange(100, dtype=np.float32)
    result = {"rank": rank}
    store = dist.distributed_c10d._get_default_store()
    if scenario == "partial" and rank != world - 1:
        # Rank 0 never reaches the kernel; it stays up (it hosts the TCPStore) until
        # the last rank has reported.
        store.wait(["test/done"], timedelta(seconds=120))
    else:
        try:
            kernel(100, x)
            result["config"] = kernel.chosen_config(100, x)
            result["correct"] = bool(np.array_equal(x, np.arange(100, dtype=np.float32) * 3))
            result["table"] = kernel.tuning_table()
        except Exception as e:  # noqa: BLE001 - the parent checks the error
            result["error"] = f"{type(e).__name__}: {e}"
        if scenario == "partial":
            store.set("test/done", "1")
    result["measured"] = [dict(c) for c in bench.measured]
    fakes.report(os.path.join(report_dir, f"{rank}.json"), **result, **fakes.counters())
    if scenario != "partial":
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
