"""Writes the generated CUDA of every example and of the seed's tuned configurations
(the programs tests/codegen/test_generated_sources.py compiles) for sm_80 and sm_90a,
aligned and unaligned variants, plus each program's IR text, into one folder, so that a
refactor can prove the generated code unchanged:

    PYTHONPATH=python python scripts/dump_generated_sources.py /tmp/before
    ... change ...
    PYTHONPATH=python python scripts/dump_generated_sources.py /tmp/after
    diff -r /tmp/before /tmp/after
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.codegen.test_generated_sources import _HOPPER_ONLY, _programs  # noqa: E402
from tests.conftest import load_example  # noqa: E402
from tilus import _C  # noqa: E402


def main(out: str) -> None:
    folder = pathlib.Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, kernel, args in _programs(load_example):
        program = kernel.compile(*args).program
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
        (folder / f"{stem}.ir.txt").write_text(str(program))
        for arch in ("sm_80", "sm_90a"):
            if arch == "sm_80" and name.startswith(_HOPPER_ONLY):
                continue  # written with Hopper's instructions (TMA, wgmma, setmaxnreg)
            for aligned in (True, False):
                generated = _C.generate_cuda(program, aligned, arch)
                tag = "aligned" if aligned else "unaligned"
                (folder / f"{stem}.{arch}.{tag}.cu").write_text(generated["source"])
                count += 1
    print(f"{count} sources written to {folder}")


if __name__ == "__main__":
    main(sys.argv[1])
