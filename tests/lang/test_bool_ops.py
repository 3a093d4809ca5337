"""Python's `and` / `or` on runtime values: of two booleans a boolean, otherwise one of
the operands (`n or default`), the second evaluated only when it decides the result.
Interpreter here; the GPU in tests/gpu/test_bool_ops_gpu.py."""

import pytest
import torch

import tilus
from tilus import int32


class BoolOps(tilus.Script):
    """Python's `and` / `or` of runtime integers give one of the operands: out = [n and m,
    n or m, (n > 3) and (m > 3)]."""

    def __call__(self, n: int32, m: int32, out_ptr: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        go = self.global_view(out_ptr, dtype=int32, shape=[3])
        for k, v in enumerate((n and m, n or m, (n > 3) and (m > 3))):
            self.store_global(go, self.register_tensor(dtype=int32, shape=[1], init=v), offsets=[k])


@pytest.mark.parametrize("n,m", [(5, 7), (0, 7), (5, 0), (0, 0)])
def test_and_or_of_runtime_integers_give_an_operand(n, m):
    out = torch.zeros(3, dtype=torch.int32)
    BoolOps()(n, m, out)
    assert out.tolist() == [n and m, n or m, int(n > 3 and m > 3)]


class ShortCircuit(tilus.Script):
    """out[0] = how many of x[0..7] are positive, reading x[i] only when i < n; out[1] = 1
    from `n < 100 or x[1000] > 0`, which must not read x[1000]."""

    def __call__(self, n: int32, x_ptr: ~int32, out_ptr: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=int32, shape=[n])
        go = self.global_view(out_ptr, dtype=int32, shape=[2])
        c: int32 = 0
        for i in range(8):
            if i < n and gx[i].item() > 0:
                c += 1
        t = n < 100 or gx[1000].item() > 0
        for k, v in enumerate((c, t)):
            self.store_global(go, self.register_tensor(dtype=int32, shape=[1], init=v), offsets=[k])


def test_the_second_operand_is_read_only_when_it_decides():
    # the interpreter reports any element read past a tensor's end: none is made
    out = torch.zeros(2, dtype=torch.int32)
    ShortCircuit()(3, torch.tensor([1, -1, 2], dtype=torch.int32), out)
    assert out.tolist() == [2, 1]
