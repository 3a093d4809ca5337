"""The seed programs in ../shared/seed_examples run unchanged (when the seed folder is
present next to the checkout; CI's clean clone may not have it). examples/add_one.py is
the project's own copy and is always checked."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SEED_ADD_ONE = ROOT.parent / "shared" / "seed_examples" / "add_one.py"

EXPECTED = (
    "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
    "        14., 15.])\n"
    "tensor([ 1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13., 14.,\n"
    "        15., 16.])\n"
)


def _run(path):
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)


def test_examples_add_one_prints_the_seed_output():
    result = _run(ROOT / "examples" / "add_one.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED


@pytest.mark.skipif(not SEED_ADD_ONE.exists(), reason="../shared/seed_examples is not next to this checkout")
def test_seed_add_one_unchanged():
    result = _run(SEED_ADD_ONE)
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED
