"""A helper rebinding a parameter that holds the caller's runtime variable (`n = n + 1`,
`n += 1`, in a runtime loop too) leaves the caller's variable alone, as in Python: the
helper's name gets a copy (assignments write runtime variables in place, which used to
change the caller's). Returning the value is how a helper updates the caller. Checked in
the interpreter; tests/gpu/test_helper_scalar_params_gpu.py runs the same script."""

import torch

import tilus
from tilus import int32


class ScalarParams(tilus.Script):
    """out = [c after bump, bump(c), e after bump_loop, bump_loop(e, m), g after g = twice(g),
    reads(c)] for c = e = g = k."""

    def bump(self, n):
        n = n + 1
        return n * 10

    def bump_loop(self, n, m: int32):
        for i in range(m):
            n += 1
        return n

    def twice(self, n):
        n *= 2
        return n

    def reads(self, n):
        return n + 100

    def __call__(self, k: int32, m: int32, out_ptr: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        go = self.global_view(out_ptr, dtype=int32, shape=[6])
        r = self.register_tensor(dtype=int32, shape=[6], init=0)
        c: int32 = k
        r[1] = self.bump(c)
        r[0] = c
        e: int32 = k
        r[3] = self.bump_loop(e, m)
        r[2] = e
        g: int32 = k
        g = self.twice(g)
        r[4] = g
        r[5] = self.reads(c)
        self.store_global(go, r, offsets=[0])


def expected(k, m):
    return [k, (k + 1) * 10, k, k + m, 2 * k, k + 100]


def run(k, m, device="cpu"):
    out = torch.full((6,), -1, dtype=torch.int32, device=device)
    ScalarParams()(k, m, out)
    return out.tolist()


def test_a_helper_rebinding_a_scalar_parameter_leaves_the_callers_variable_alone():
    for k, m in ((5, 3), (-2, 0), (7, 1)):
        assert run(k, m) == expected(k, m)
