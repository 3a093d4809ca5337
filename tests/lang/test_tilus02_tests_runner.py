"""scripts/tilus02_tests.py, the runner of Tilus 0.2's own test files, on a made-up tests
folder: which files it runs and which it leaves out (internal imports, sm_100), that a
Hopper test written for CUDA runs on CPU tensors in the interpreter, and that a failing
test fails the run."""

import os
import pathlib
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[2]

HOPPER_TEST = '''
import tilus
import torch
from tilus import float32


class AddOne(tilus.Script):
    def __call__(self, n: int, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float32, shape=[n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])
        self.store_global(gy, self.load_global(gx, offsets=[0], shape=[128]) + 1.0, offsets=[0])


@tilus.testing.requires.nvgpu_sm90
def test_add_one():
    x = torch.randn(100).cuda()
    y = torch.empty(100, device="cuda")
    AddOne()(100, x, y)
    torch.testing.assert_close(y, x + 1.0)
'''


def make_tests(root: pathlib.Path, failing: bool):
    files = {
        "instructions/test_add_one.py": HOPPER_TEST,
        "lang/test_internals.py": "from tilus.drivers import build_and_load_program\n",
        "instructions/test_tcgen05_alloc.py": "def test_blackwell():\n    assert False\n",
        "ir/test_not_a_language_folder.py": "def test_other():\n    assert False\n",
    }
    if failing:
        files["kernels/test_wrong.py"] = "def test_wrong():\n    assert 1 + 1 == 3\n"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))


def run(tests: pathlib.Path):
    # the tilus this test imports (the source tree's or an installed one)
    import tilus

    package_root = os.path.dirname(os.path.dirname(os.path.abspath(tilus.__file__)))
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "tilus02_tests.py"), "--tests", str(tests)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": package_root})


def test_runs_the_language_tests_and_leaves_out_the_rest(tmp_path):
    make_tests(tmp_path, failing=False)
    done = run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "left out lang/test_internals.py: imports Tilus internals: tilus.drivers" in done.stdout
    assert "left out instructions/test_tcgen05_alloc.py: sm_100" in done.stdout
    assert "running 1 files: instructions/test_add_one.py" in done.stdout
    assert "1 passed" in done.stdout  # the sm_90 test ran, in the interpreter


def test_a_failing_test_fails_the_run(tmp_path):
    make_tests(tmp_path, failing=True)
    done = run(tmp_path)
    assert done.returncode != 0
    assert "1 failed, 1 passed" in done.stdout
