#!/usr/bin/env python3
"""Runs NVIDIA Tilus 0.2's own test files, unmodified, against this package: the
language-level half of "a program written for Tilus 0.2 runs unchanged" (the examples
are scripts/tilus02_examples.py's).

    git clone https://github.com/NVIDIA/tilus && git -C tilus checkout v0.2.0
    PYTHONPATH=python python scripts/tilus02_tests.py --tests tilus/tests
    PYTHONPATH=python python scripts/tilus02_tests.py --tests tilus/tests --device cuda

The test files under instructions/, kernels/ and lang/ run with pytest from a scratch
folder (nothing of theirs is copied into this repository). Files that import Tilus's
internal modules (its IR classes, its hidet primitives, its build drivers: what a kernel
author does not write) are listed and left out; so are its sm_100 (Blackwell) tests, for
which this package has no target. On the CPU (the default) the tests' CUDA tensors are
made on the CPU and their sm_80 / sm_90 requirements are lifted, so the Hopper tests run
in the interpreter; with `--device cuda` they run on the GPU as written. Exits with
pytest's status: non-zero when a test fails.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
FOLDERS = ("instructions", "kernels", "lang")

# Tests whose expectations differ from tilus's by design, with the reason (deselected and
# listed; docs/script.md "Programs written for Tilus 0.2").
KNOWN_DIFFERENCES = {
    "kernels/test_cast.py::test_cast_float32_to_float_subbyte":
        "float32 -> sub-byte float in the subnormal range: Tilus 0.2 rounds as if normal, then truncates "
        "(and flushes values under the smallest subnormal to zero); tilus rounds to nearest even there too "
        "(docs/low_precision.md). Every value at or above the smallest normal converts alike.",
}

# The scratch folder's conftest: replaces the checkout's (which only gathers CI
# diagnostics) and, on the CPU, moves the tests onto the interpreter.
CONFTEST = '''
import sys
sys.path.insert(0, {scripts!r})
if {cpu!r}:
    import tilus.testing
    from tilus02_examples import redirect_cuda_to_cpu

    redirect_cuda_to_cpu()
    # the interpreter runs sm_80 and sm_90 programs; sm_100 ones stay skipped
    tilus.testing.requires.nvgpu_sm80 = staticmethod(lambda test: test)
    tilus.testing.requires.nvgpu_sm90 = staticmethod(lambda test: test)
'''


def missing_modules(path: str) -> list:
    """The tilus modules a test file imports that this package does not have."""
    tree = ast.parse(open(path).read(), path)
    missing = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            if name.split(".")[0] != "tilus":
                continue
            try:
                found = importlib.util.find_spec(name) is not None
            except ModuleNotFoundError:
                found = False
            if not found:
                missing.append(name)
    return missing


def select(tests: str):
    """(chosen test files relative to `tests`, [(left-out file, why)])."""
    chosen, left_out = [], []
    for folder in FOLDERS:
        for root, _, files in os.walk(os.path.join(tests, folder)):
            for name in sorted(files):
                if not (name.startswith("test_") and name.endswith(".py")):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, tests)
                source = open(path).read()
                if "tcgen05" in name or "self.tcgen05" in source:
                    left_out.append((rel, "sm_100 (tcgen05): no Blackwell target"))
                    continue
                missing = missing_modules(path)
                if missing:
                    left_out.append((rel, "imports Tilus internals: " + ", ".join(sorted(set(missing)))))
                    continue
                chosen.append(rel)
    return sorted(chosen), left_out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", required=True, help="the tests folder of a Tilus checkout (v0.2.0)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest (after --)")
    args = parser.parse_args()
    tests = os.path.abspath(args.tests)
    chosen, left_out = select(tests)
    for rel, why in left_out:
        print(f"left out {rel}: {why}")
    if not chosen:
        print(f"no test files under {tests}/{{{','.join(FOLDERS)}}}")
        return 1
    with tempfile.TemporaryDirectory(prefix="tilus02_tests_") as scratch:
        for rel in chosen:
            os.makedirs(os.path.join(scratch, os.path.dirname(rel)), exist_ok=True)
            shutil.copy(os.path.join(tests, rel), os.path.join(scratch, rel))
        with open(os.path.join(scratch, "conftest.py"), "w") as f:
            f.write(CONFTEST.format(scripts=SCRIPTS, cpu=args.device == "cpu"))
        known = [test for test in KNOWN_DIFFERENCES if test.split("::")[0] in chosen]
        for test in known:
            print(f"deselected {test}: {KNOWN_DIFFERENCES[test]}")
        command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--rootdir", scratch,
                   *chosen, *[f"--deselect={test}" for test in known], *args.pytest_args]
        print(f"running {len(chosen)} files: " + " ".join(chosen), flush=True)
        # the tests run against the tilus this script sees (a relative PYTHONPATH would not
        # survive the change of folder)
        import tilus

        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(tilus.__file__)))]
                                            + [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                               if p])
        return subprocess.call(command, cwd=scratch, env=env)


if __name__ == "__main__":
    sys.exit(main())
