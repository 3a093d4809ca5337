"""Loops that count down, `range(start, end, -s)` with a compile-time step (Python's
semantics: start, start - s, ... while > end; none when start <= end), also through
self.range (unrolled) and with a break; a runtime step that turns out negative is refused
at run time, naming the step. The GPU runs the same script (tests/gpu/test_descending_loops_gpu.py)."""

import pytest
import torch

import tilus
from tilus import int32


class Countdown(tilus.Script):
    """out[k] = the k-th value of the loop `mode` runs (-1 past the last), over a and b."""

    def __init__(self, mode: str):
        super().__init__()
        self.mode = mode

    def put(self, go, k, v):
        self.store_global(go, self.register_tensor(dtype=int32, shape=[1], init=v), offsets=[k])

    def __call__(self, a: int32, b: int32, out_ptr: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        go = self.global_view(out_ptr, dtype=int32, shape=[16])
        k: int32 = 0
        if self.mode == "range -1":
            for i in range(a, b, -1):
                self.put(go, k, i)
                k += 1
        elif self.mode == "range -3":
            for i in range(a, b, -3):
                self.put(go, k, i)
                k += 1
        elif self.mode == "self.range -2 unroll 2":
            for i in self.range(a, b, -2, unroll=2):
                self.put(go, k, i)
                k += 1
        elif self.mode == "break":
            for i in range(a, b, -1):
                if i * i < 10:
                    break
                self.put(go, k, i)
                k += 1
        else:  # "runtime step": b is the step
            for i in range(a, 0, b):
                self.put(go, k, i)
                k += 1


def expected(mode, a, b):
    if mode == "break":
        values = []
        for i in range(a, b, -1):
            if i * i < 10:
                break
            values.append(i)
    else:
        step = {"range -1": -1, "range -3": -3, "self.range -2 unroll 2": -2}[mode]
        values = list(range(a, b, step))
    return values + [-1] * (16 - len(values))


@pytest.mark.parametrize("mode", ["range -1", "range -3", "self.range -2 unroll 2", "break"])
@pytest.mark.parametrize("a,b", [(10, 0), (7, -3), (3, 3), (2, 5), (0, -1)])
def test_descending_loops(mode, a, b):
    out = torch.full((16,), -1, dtype=torch.int32)
    Countdown(mode)(a, b, out)
    assert out.tolist() == expected(mode, a, b)


def test_a_negative_runtime_step_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"the step of a for loop must be positive, but b evaluates to -2 "
                                         r"\(a loop that counts down takes a compile-time step"):
        Countdown("runtime step")(5, -2, torch.full((16,), -1, dtype=torch.int32))
