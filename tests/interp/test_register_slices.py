"""Register tensors indexed at runtime positions (Tilus 0.2's `phases[stage]`,
`phases[stage] ^= 1`, `r[i, :]`, `r[i, :] = row`): every thread holds the whole tensor, so
any element is read or written without moving data. Checked against Python models."""

import pytest
import torch

import tilus
from tilus import float32, int32, uint32
from tilus.lang.errors import ScriptError

STAGES = 3


class PhasePerStage(tilus.Script):
    """The pipeline pattern: one phase bit per stage, flipped when the stage is used;
    out[k] = the phase stage k % STAGES had when step k used it."""

    def __call__(self, steps: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 2
        phases = self.register_tensor(dtype=uint32, shape=[STAGES], init=0)
        go = self.global_view(out, dtype=int32, shape=[steps])
        for k in range(steps):
            stage = k % STAGES
            seen: int32 = phases[stage]
            self.store_global(go, self.register_tensor(dtype=int32, shape=[1], init=seen), offsets=[k])
            phases[stage] ^= 1


def test_a_phase_per_stage():
    steps = 11
    out = torch.full((steps,), -1, dtype=torch.int32)
    PhasePerStage()(steps, out)
    expected = [(k // STAGES) % 2 for k in range(steps)]
    assert out.tolist() == expected


class RowsAtRuntimePositions(tilus.Script):
    """Reads row `i` of a 2-D register tile, writes it back doubled into row `j`, sets
    element (0, c) from a scalar, and stores the whole tile."""

    def __call__(self, i: int32, j: int32, c: int32, x: ~float32, out: ~float32, row_out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float32, shape=[3, 5])
        r = self.load_global(gx, offsets=[0, 0], shape=[3, 5])
        row = r[i, :]
        self.store_global(self.global_view(row_out, dtype=float32, shape=[5]), row, offsets=[0])
        r[j] = row * 2.0
        r[0, c] = -1.0
        self.store_global(self.global_view(out, dtype=float32, shape=[3, 5]), r, offsets=[0, 0])


@pytest.mark.parametrize("i,j,c", [(0, 2, 4), (2, 0, 1), (1, 1, 0)])
def test_rows_and_elements_at_runtime_positions(i, j, c):
    x = torch.randn(3, 5)
    out = torch.full((3, 5), float("nan"))
    row_out = torch.full((5,), float("nan"))
    RowsAtRuntimePositions()(i, j, c, x, out, row_out)
    expected = x.clone()
    expected[j] = x[i] * 2
    expected[0, c] = -1.0
    torch.testing.assert_close(row_out, x[i])
    torch.testing.assert_close(out, expected)


class InAThreadGroup(tilus.Script):
    """Hopper producers keep their phases inside a one-warp thread group."""

    def __call__(self, steps: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 2
        with self.thread_group(32, 32):
            phases = self.register_tensor(dtype=uint32, shape=[2], init=1)
            total: int32 = 0
            for k in range(steps):
                total = total + phases[k % 2].item() * (k + 1)
                phases[k % 2] ^= 1
            go = self.global_view(out, dtype=int32, shape=[1])
            self.store_global(go, self.register_tensor(dtype=int32, shape=[1], init=total), offsets=[0])


def test_phases_inside_a_thread_group():
    steps = 7
    out = torch.full((1,), -1, dtype=torch.int32)
    InAThreadGroup()(steps, out)
    phases, total = [1, 1], 0
    for k in range(steps):
        total += phases[k % 2] * (k + 1)
        phases[k % 2] ^= 1
    assert out.item() == total


class OutOfRangeAtRunTime(tilus.Script):
    def __call__(self, i: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        r = self.register_tensor(dtype=int32, shape=[4], init=3)
        v: int32 = r[i]
        self.store_global(self.global_view(out, dtype=int32, shape=[1]),
                          self.register_tensor(dtype=int32, shape=[1], init=v), offsets=[0])


def test_an_index_out_of_range_at_run_time_names_the_line():
    out = torch.zeros(1, dtype=torch.int32)
    OutOfRangeAtRunTime()(3, out)
    assert out.item() == 3
    with pytest.raises(ScriptError, match="index 4 is out of range for dimension 0") as info:
        OutOfRangeAtRunTime()(4, out)
    assert "v: int32 = r[i]" in str(info.value)


class ConstantOutOfRange(tilus.Script):
    def __call__(self, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        r = self.register_tensor(dtype=int32, shape=[4], init=3)
        r[4] = 1


class NarrowSlice(tilus.Script):
    def __call__(self, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        r = self.register_tensor(dtype=int32, shape=[4, 4], init=3)
        part = r[0, 1:3]


class SharedElementAssigned(tilus.Script):
    def __call__(self, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        s = self.shared_tensor(dtype=int32, shape=[4])
        s[1] = 2


class SubByteIndexed(tilus.Script):
    def __call__(self, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        r = self.register_tensor(dtype=tilus.uint4b, shape=[8], init=3)
        v = r[1]


@pytest.mark.parametrize("script,message,line", [
    (ConstantOutOfRange, "index 4 is out of range for dimension 0", "r[4] = 1"),
    (NarrowSlice, "a slice keeps a whole dimension", "part = r[0, 1:3]"),
    (SharedElementAssigned, "elements are assigned in register tensors", "s[1] = 2"),
    (SubByteIndexed, "sub-byte elements share registers", "v = r[1]"),
])
def test_bad_indexing_is_refused_at_its_line(script, message, line):
    with pytest.raises(ScriptError, match=message) as info:
        script()(torch.zeros(1, dtype=torch.int32))
    assert line in str(info.value)


class ScalarReboundToATile(tilus.Script):
    def __call__(self, steps: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        phases = self.register_tensor(dtype=int32, shape=[2], init=1)
        total: int32 = 0
        for k in range(steps):
            total = total + phases[k % 2]


def test_a_scalar_rebound_to_a_tile_in_a_loop_is_refused():
    with pytest.raises(ScriptError, match="'total' is a runtime int32 scalar defined outside this "
                                          "for; assigning a .* tensor to it") as info:
        ScalarReboundToATile()(3, torch.zeros(1, dtype=torch.int32))
    assert "total = total + phases[k % 2]" in str(info.value)


class TooLargeToIndex(tilus.Script):
    def __call__(self, i: int32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        r = self.register_tensor(dtype=float32, shape=[64, 64], init=0.0)
        row = r[i, :]


def test_a_tensor_too_large_for_one_thread_is_refused():
    with pytest.raises(ScriptError, match=r"r \(register\[float32, 64x64\], 16384 bytes\) is too large") as info:
        TooLargeToIndex()(0, torch.zeros(64))
    assert "row = r[i, :]" in str(info.value)
