"""Ctrl-C stops a kernel that never ends in the CPU interpreter (KeyboardInterrupt)."""

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import tilus

ROOT = pathlib.Path(__file__).resolve().parents[2]

_CHILD = textwrap.dedent("""
    import signal
    import sys
    # Python leaves SIGINT ignored when it starts with it ignored (a job started in the
    # background by a non-interactive shell does): Ctrl-C must raise KeyboardInterrupt here
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import torch
    import tilus
    from tilus import int32

    class Forever(tilus.Script):
        def __call__(self, n: int32, out: ~int32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            i: int32 = 0
            while i < n:
                i = i * 1  # never advances
            g = self.global_view(out, dtype=int32, shape=[1])
            self.store_global(g, self.register_tensor(dtype=int32, shape=[1], init=i), offsets=[0])

    kernel = Forever()
    out = torch.zeros(1, dtype=torch.int32)
    kernel.compile(1, out)  # transpile before saying we are ready
    print("running", flush=True)
    try:
        kernel(1, out)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(3)
""")


def test_ctrl_c_stops_an_endless_runtime_loop(tmp_path):
    script = tmp_path / "forever.py"  # the transpiler reads kernels from their file
    script.write_text(_CHILD)
    # the child imports the tilus this test runs against (installed, or the checkout's
    # python/ with its built extension), not whatever python/ folder lies in the tree
    here = str(pathlib.Path(tilus.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    try:
        assert child.stdout.readline().strip() == "running", child.stderr.read()
        time.sleep(0.5)  # well inside the endless loop
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 3, (out, err)
    assert "interrupted" in out
