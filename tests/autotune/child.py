"""A separate process that tunes `Scale` on the fake GPU and reports what it did:
    python child.py REPORT.json [SLEEP_SECONDS_PER_CANDIDATE]
Run with TILUS_CACHE_DIR set by the parent."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.autotune import fakes  # noqa: E402
from tests.autotune.kernels import Scale  # noqa: E402


def main():
    report_path = sys.argv[1]
    sleep_s = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    fakes.install(sleep_s=sleep_s)
    kernel = Scale(3.0)
    x = np.arange(100, dtype=np.float32)
    kernel(100, x)
    fakes.report(report_path, config=kernel.chosen_config(100, x),
                 correct=bool(np.array_equal(x, np.arange(100, dtype=np.float32) * 3)),
                 table=kernel.tuning_table(), **fakes.counters())


if __name__ == "__main__":
    main()
