"""Sizes and indices that cannot work are located errors naming what is wrong (issue 18):
a grid whose int32 arithmetic overflows, dot on 1-D tiles, a constant index outside a
view's constant extent, a tile far larger than any thread block holds."""

import pathlib

import pytest
import torch

import tilus
from tilus import _C, float32, int32, int64
from tilus.utils import cdiv

THIS_FILE = str(pathlib.Path(__file__).resolve())
SOURCE = pathlib.Path(__file__).read_text().splitlines()


def assert_located(err, marker: str):
    e = err.value
    assert isinstance(e, tilus.ScriptError), repr(e)
    assert pathlib.Path(e.file).resolve() == pathlib.Path(THIS_FILE)
    assert SOURCE[e.line - 1].rstrip().endswith("# " + marker), (e.line, str(e))
    assert marker in str(e)


class HugeGrid(tilus.Script):
    def __call__(self, n: int32, out: ~float32):
        self.attrs.blocks = cdiv(n, 128)  # MARK-grid
        self.attrs.warps = 1
        g = self.global_view(out, dtype=float32, shape=[128])  # fits: only the grid is huge
        self.store_global(g, self.register_tensor(dtype=float32, shape=[128], init=1.0),
                          offsets=[0])


def test_a_grid_whose_int32_arithmetic_overflows_is_located():
    out = torch.zeros(128)
    with pytest.raises(ValueError) as err:
        HugeGrid()(2**31 - 1, out)
    assert_located(err, "MARK-grid")
    assert "overflows int32" in str(err.value) and "2147483647" in str(err.value)
    HugeGrid()(128, torch.zeros(128))  # sizes that fit still run (one block: every
    # block writes the same tile, which two blocks would race on)


def test_the_native_launch_shape_defers_an_overflowing_grid():
    program = HugeGrid().compile(4, torch.zeros(4)).program
    assert _C.host_launch_shape(program, [1000, 1 << 20]) == ((8, 1, 1), [])
    # None: the launcher asks the interpreter's evaluator, which raises the located error
    assert _C.host_launch_shape(program, [2**31 - 1, 1 << 20]) is None


class HugeGrid64(tilus.Script):
    def __call__(self, n: int64, out: ~float32):
        self.attrs.blocks = cdiv(n, 128)
        self.attrs.warps = 1


def test_an_int64_size_gives_the_right_grid():
    program = HugeGrid64().compile(4, torch.zeros(4)).program
    assert _C.evaluate_launch_shape(program, [2**31 - 1, 1 << 20])[0] == (2**24, 1, 1)


class Workspace(tilus.Script):
    def __call__(self, n: int32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        w = self.global_tensor(dtype=float32, shape=[n * 4096], requires_clean=True)  # MARK-ws


def test_a_workspace_size_that_overflows_is_located():
    with pytest.raises(ValueError) as err:
        Workspace()(2**20, torch.zeros(1))
    assert_located(err, "MARK-ws")


class Dot1D(tilus.Script):
    def __call__(self, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        a = self.register_tensor(dtype=float32, shape=[16], init=1.0)
        b = self.register_tensor(dtype=float32, shape=[16], init=1.0)
        c = self.dot(a, b)  # MARK-dot


def test_dot_of_1d_tiles_names_the_shapes():
    with pytest.raises(ValueError) as err:
        Dot1D()(torch.zeros(1))
    assert_located(err, "MARK-dot")
    assert "2-D" in str(err.value) and "[float32, 16]" in str(err.value)


class ConstantIndexPastView(tilus.Script):
    def __call__(self, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        g = self.global_view(out, dtype=int32, shape=[4])
        self.release_semaphore(~g[7], value=1)  # MARK-index


def test_a_constant_index_outside_a_constant_view_is_located():
    out = torch.zeros(8, dtype=torch.int32)
    with pytest.raises(IndexError) as err:
        ConstantIndexPastView()(out)
    assert_located(err, "MARK-index")
    assert "index 7" in str(err.value) and "g" in str(err.value)
    assert torch.all(out == 0)


class RuntimeIndexPastView(tilus.Script):
    def __call__(self, i: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        g = self.global_view(out, dtype=int32, shape=[4])
        self.release_semaphore(~g[i], value=1)  # MARK-runtime-index


def test_a_runtime_semaphore_index_outside_its_view_is_located():
    out = torch.zeros(8, dtype=torch.int32)
    RuntimeIndexPastView()(3, out)
    assert out.tolist() == [0, 0, 0, 1, 0, 0, 0, 0]
    with pytest.raises(IndexError) as err:
        RuntimeIndexPastView()(5, out)
    assert_located(err, "MARK-runtime-index")
    assert out[5] == 0


class HugeTile(tilus.Script):
    def __call__(self, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        a = self.register_tensor(dtype=float32, shape=[2**20, 2**20], init=1.0)  # MARK-tile


def test_a_tile_of_2_40_elements_is_a_located_memory_error():
    with pytest.raises(MemoryError) as err:
        HugeTile()(torch.zeros(1))
    assert_located(err, "MARK-tile")
    assert "[1048576, 1048576]" in str(err.value)
