"""The transpiler reads a kernel's source text: it works wherever Python keeps that text
(files, linecache entries of exec()'d code, IPython cells), and elsewhere (`python -c`,
stdin, exec() of a bare string) says what is needed, naming the class."""

import linecache
import os
import subprocess
import sys

import numpy as np
import pytest

import tilus

KERNEL = '''
import tilus
from tilus import float32, int32


class AddOne(tilus.Script):
    def __init__(self):
        super().__init__()

    def __call__(self, n: int32, x_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        g = self.global_view(x_ptr, dtype=float32, shape=[n])
        x = self.load_global(g, offsets=[0], shape=[32])
        self.store_global(g, x + 1.0, offsets=[0])
'''
CALL_LINE = KERNEL.splitlines().index("    def __call__(self, n: int32, x_ptr: ~float32):") + 1
RUN = KERNEL + '''
import numpy as np
x = np.zeros(32, np.float32)
AddOne()(32, x)
print("sum", x.sum())
'''


def _exec(name: str) -> dict:
    namespace = {"__name__": "kernel_text"}
    exec(compile(KERNEL, name, "exec"), namespace)  # noqa: S102 - the point of the test
    return namespace


def test_exec_of_a_bare_string_names_the_class_and_what_is_needed():
    add_one = _exec("<kernel text>")["AddOne"]()
    with pytest.raises(tilus.ScriptError) as error:
        add_one(32, np.zeros(32, np.float32))
    e = error.value
    assert isinstance(e, OSError)  # what inspect raised before, for existing handlers
    assert (e.file, e.line) == ("<kernel text>", CALL_LINE)
    message = str(e)
    assert "cannot read the source of AddOne.__call__" in message
    assert "define AddOne in a .py file" in message and "linecache.cache[name]" in message
    assert f'File "<kernel text>", line {CALL_LINE}, in AddOne.__call__' in message


def test_exec_of_text_registered_with_linecache_transpiles():
    name = "<kernel text registered>"
    linecache.cache[name] = (len(KERNEL), None, KERNEL.splitlines(True), name)
    try:
        x = np.zeros(32, np.float32)
        _exec(name)["AddOne"]()(32, x)
    finally:
        del linecache.cache[name]
    np.testing.assert_array_equal(x, np.ones(32, np.float32))


def _python(*args, stdin=None):
    return subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True,
                          env=dict(os.environ, TILUS_CACHE_DIR=""))


@pytest.mark.parametrize("how", ["-c", "stdin"])
def test_python_dash_c_and_stdin_say_a_file_is_needed(how):
    run = _python("-c", RUN) if how == "-c" else _python("-", stdin=RUN)
    assert run.returncode == 1
    lines = run.stderr.strip().splitlines()
    assert "could not get source code" not in run.stderr
    where = "<string>" if how == "-c" else "<stdin>"
    assert any(line.startswith("tilus.lang.errors.ScriptSourceError: tilus cannot read the "
                               "source of AddOne.__call__") for line in lines)
    assert f'File "{where}", line {CALL_LINE}, in AddOne.__call__' in run.stderr


def test_an_ipython_cell_transpiles():
    pytest.importorskip("IPython")
    driver = ("from IPython.testing.globalipapp import start_ipython\n"
              f"result = start_ipython().run_cell({RUN!r})\n"
              "assert result.success, result.error_in_exec\n")
    run = _python("-c", driver)
    assert run.returncode == 0, run.stderr
    assert "sum 32.0" in run.stdout
