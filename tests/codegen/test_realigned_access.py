"""Realigned accesses: a run of 16 bytes along a row whose alignment is unknown (a pointer
off 16 bytes, an odd row length, a column offset of any value) is read with the two
aligned 16-byte loads that hold it and shifted into place (codegen/device/memory.cuh
load_realigned_16), by copy_async into shared memory and by load_global into registers.
Which accesses take it is checked here; tests/gpu/test_realigned_access_gpu.py checks the
values at every misalignment (and the element stores beside them)."""

import pytest
import torch

import tilus
from tilus import _C, float16, float32, int8, int32, void_p
from tilus.utils import cdiv

WIDTH = 64  # the window's columns
ROWS = 8  # rows a block


class Window(tilus.Script):
    """y[r, ycol + j] = x[r, col + j] for j < 64, where ycol + j is inside y's row; x's
    elements outside its row read as zero. Through shared memory (copy_async) or straight
    into registers (load_global)."""

    def __init__(self, dtype, through_shared):
        super().__init__()
        self.dtype = dtype
        self.through_shared = through_shared

    def __call__(self, m: int32, n: int32, col: int32, x: void_p, ny: int32, ycol: int32, y: void_p):
        self.attrs.blocks = [cdiv(m, ROWS)]
        self.attrs.warps = 2
        gx = self.global_view(x, dtype=self.dtype, shape=[m, n])
        gy = self.global_view(y, dtype=self.dtype, shape=[m, ny])
        row = self.blockIdx.x * ROWS
        if self.through_shared:
            stage = self.shared_tensor(dtype=self.dtype, shape=[ROWS, WIDTH])
            self.copy_async(src=gx, dst=stage, offsets=[row, col])
            self.copy_async_wait_all()
            self.sync()
            tile = self.load_shared(stage)
            self.free_shared(stage)
        else:
            tile = self.load_global(gx, offsets=[row, col], shape=[ROWS, WIDTH])
        self.store_global(gy, tile, offsets=[row, ycol])


def window_reference(x: torch.Tensor, col: int, y: torch.Tensor, ycol: int) -> torch.Tensor:
    """y (its poisoned contents) with the window written where the kernel writes it."""
    m, n = x.shape
    window = torch.zeros(m, WIDTH, dtype=x.dtype, device=x.device)
    lo, hi = max(col, 0), min(col + WIDTH, n)
    if lo < hi:
        window[:, lo - col:hi - col] = x[:, lo:hi]
    out = y.clone()
    lo, hi = max(ycol, 0), min(ycol + WIDTH, y.shape[1])
    if lo < hi:
        out[:, lo:hi] = window[:, lo - ycol:hi - ycol]
    return out


def _program(dtype, through_shared):
    t = tilus.utils.dtype_to_torch(dtype)
    x, y = torch.zeros(16, 200, dtype=t), torch.zeros(16, WIDTH, dtype=t)
    return Window(dtype, through_shared).compile(16, 200, 0, x, WIDTH, 0, y).program


def _lines(source, view):
    return [line for line in source.splitlines() if f"({view} +" in line or f"{view}[" in line]


@pytest.mark.parametrize("dtype", [float16, int8])
def test_copies_of_unaligned_rows_are_realigned(dtype):
    """1- and 2-byte elements have no cp.async narrower than 4 bytes: rows of unknown
    alignment used to be copied element by element."""
    program = _program(dtype, True)
    # the column offset is any integer, so even the aligned build cannot prove a row's
    # runs aligned
    for source in (_C.generate_cuda(program, False, "sm_80")["source"],
                   _C.generate_cuda(program, True, "sm_90a", unaligned_params=[1, 3])["source"],
                   _C.generate_cuda(program, True, "sm_80")["source"]):
        lines = _lines(source, "gx")
        assert lines and all("load_realigned_16<false>" in line for line in lines), source
        assert "*reinterpret_cast<uint4*>(" in lines[0]
        assert "tilus::cp_async_" not in source.replace("tilus::cp_async_wait", "")


class RowTile(tilus.Script):
    """Copies the block's row of x to shared memory and back (x [m, n], column 0)."""

    def __call__(self, m: int32, n: int32, x: ~float16):
        self.attrs.blocks = [m]
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float16, shape=[m, n])
        stage = self.shared_tensor(dtype=float16, shape=[1, 256])
        self.copy_async(src=gx, dst=stage, offsets=[self.blockIdx.x, 0])
        self.copy_async_wait_all()
        self.sync()
        self.store_global(gx, self.load_shared(stage) + 1.0, offsets=[self.blockIdx.x, 0])
        self.free_shared(stage)


def test_copies_of_aligned_rows_stay_cp_async():
    program = RowTile().compile(16, 256, torch.zeros(16, 256).half()).program
    aligned = _C.generate_cuda(program, True, "sm_80")["source"]
    assert "load_realigned_16" not in aligned and "tilus::cp_async_16(" in aligned
    assert "load_realigned_16" in _C.generate_cuda(program, False, "sm_80")["source"]


def test_float32_copies_keep_their_asynchronous_4_byte_copies():
    source = _C.generate_cuda(_program(float32, True), False, "sm_80")["source"]
    assert "load_realigned_16" not in source and "tilus::cp_async_4(" in source


@pytest.mark.parametrize("dtype", [float16, float32, int8])
def test_loads_of_an_unaligned_view_keep_16_byte_runs(dtype):
    """x misaligned (its pointer and row length), y not: the tile keeps 16-byte runs a
    thread and its loads from x are realigned instead of element by element."""
    program = _program(dtype, False)
    partly = _C.generate_cuda(program, True, "sm_80", unaligned_params=[1, 3])["source"]
    loads = _lines(partly, "gx")
    assert loads and all("load_realigned_16<false>" in line for line in loads), partly


def test_a_tile_stored_to_an_unaligned_view_keeps_single_elements():
    """Stores have no realigned form: a tile stored to a view without vectors lays out
    for single elements on consecutive lanes, and so its loads go element by element too."""
    source = _C.generate_cuda(_program(float16, False), False, "sm_80")["source"]
    assert "load_realigned_16" not in source
    assert "*(gx + (((row + i) * n_) + (col + tl_tid)))" in source, source  # lanes consecutive


def test_bounds_checked_builds_keep_element_accesses():
    program = _program(float16, True)
    source = _C.generate_cuda(program, False, "sm_80", bounds_check=True)["source"]
    assert "load_realigned_16" not in source


@pytest.mark.parametrize("through_shared", [True, False])
@pytest.mark.parametrize("col, ycol", [(-13, 0), (0, 3), (5, -9), (150, 170)])
def test_the_interpreter_agrees_with_the_reference(through_shared, col, ycol):
    x = torch.randn(21, 203).half()
    y = torch.full((21, 201), 7.0).half()
    expected = window_reference(x, col, y, ycol)
    Window(float16, through_shared)(21, 203, col, x, 201, ycol, y)
    torch.testing.assert_close(y, expected, rtol=0, atol=0)


def test_a_reduction_does_not_carry_single_elements_back_to_the_rows_it_reduced(example):
    """A long softmax row (examples/softmax.py, rows of 50257 in tiles of 32768): the first
    pass loads x and reduces it, the second writes y = exp(x - max) * (1 / sum). The row max
    is derived from the first pass's tile and broadcast against the second's; y's store to
    rows of unknown alignment makes the second pass single-element, which must not make the
    first pass's loads single-element too (they are read realigned)."""
    sm = example("softmax")
    script = sm.Softmax(float16, 32768, block_m=1, warps=16, persistent=False, staged=False, row_tiles=0,
                        long_rows=True, long_split=1, prefetch=False)
    x = torch.zeros(4, 50257).half()
    program = script.compile(4, 50257, 132, x, x).program
    source = _C.generate_cuda(program, True, "sm_90a", unaligned_params=[1])["source"]
    first_pass, second_pass = source.split("inv_sum", 1)
    # the first pass: realigned 16-byte runs; the second reads x again beside its stores,
    # element by element, lanes consecutive
    assert "load_realigned_16<false>(gx +" in first_pass, source
    assert "load_realigned_16" not in second_pass and "store_global_vec" not in second_pass
    assert "*(gy + ((row * n_size) + (col_1 + (tl_tid + " in second_pass


@pytest.mark.parametrize("dtype, realigned", [(float16, True), (float32, False)])
def test_tiles_of_more_than_eight_runs_a_thread_keep_single_elements(example, dtype, realigned):
    """A realigned run holds two 16-byte chunks in registers until it is shifted: a float32
    row tile of 32768 at 16 warps is 16 runs a thread (it spilled), a float16 one 8."""
    sm = example("softmax")
    script = sm.Softmax(dtype, 32768, block_m=1, warps=16, persistent=False, staged=False, row_tiles=0,
                        long_rows=True, long_split=1, prefetch=False)
    x = torch.zeros(4, 40001, dtype=tilus.utils.dtype_to_torch(dtype))
    program = script.compile(4, 40001, 132, x, x).program
    source = _C.generate_cuda(program, True, "sm_90a", unaligned_params=[1])["source"]
    assert ("load_realigned_16" in source) == realigned
