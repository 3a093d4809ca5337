"""Two names of one register tile behave as in Python: rebinding one (`a = a + 1`, which
the transpiler may turn into a write into the tile) leaves the other's value alone --
`b = a` then `a = ...`, a swap `a, b = b, a`, a helper rebinding its argument, a
compile-time loop over a list of tiles, and the register prefetch of a loop (`x = nxt`,
then `nxt = self.load_global(...)`). Explicit writes (`self.assign`) are seen through
every name, as a mutation is in Python. Where a runtime block must write the tile in
place (a loop carries it) and the other name was bound outside that block, reading the
other name afterwards is refused, naming the write. Checked in the interpreter; the GPU
runs the same scripts (tests/gpu/test_tile_aliases_gpu.py)."""

import pytest
import torch

import tilus
from tilus import float32, int32


class _Rows(tilus.Script):
    """A script over x [rows, 32] and out [rows, 32], one warp."""

    ROWS = 4

    def views(self, x_ptr, out_ptr):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[self.ROWS, 32])
        go = self.global_view(out_ptr, dtype=float32, shape=[self.ROWS, 32])
        return gx, go

    def row(self, g, i):
        return self.load_global(g, offsets=[i, 0], shape=[32])


class RebindAfterAlias(_Rows):
    """out[0] = x[0] + 1, out[1] = x[0]: `b = a` then `a = a + 1`."""

    def __call__(self, x_ptr: ~float32, out_ptr: ~float32):
        gx, go = self.views(x_ptr, out_ptr)
        a = self.row(gx, 0)
        b = a
        a = a + 1.0
        self.store_global(go, a, offsets=[0, 0])
        self.store_global(go, b, offsets=[1, 0])


class Swap(_Rows):
    """out[0] = x[1], out[1] = x[0]."""

    def __call__(self, x_ptr: ~float32, out_ptr: ~float32):
        gx, go = self.views(x_ptr, out_ptr)
        a = self.row(gx, 0)
        b = self.row(gx, 1)
        a, b = b, a
        self.store_global(go, a, offsets=[0, 0])
        self.store_global(go, b, offsets=[1, 0])


class HelperRebindsItsArgument(_Rows):
    """out[0] = x[0], out[1] = 2 x[0]: the helper's `t = t * 2` does not change the caller's
    tile; out[2] = x[0] + 1 through the helper's explicit self.assign, which does."""

    def doubled(self, t):
        t = t * 2.0
        return t

    def increment(self, t):
        self.assign(t, t + 1.0)

    def __call__(self, x_ptr: ~float32, out_ptr: ~float32):
        gx, go = self.views(x_ptr, out_ptr)
        a = self.row(gx, 0)
        d = self.doubled(a)
        self.store_global(go, a, offsets=[0, 0])
        self.store_global(go, d, offsets=[1, 0])
        self.increment(a)
        self.store_global(go, a, offsets=[2, 0])


class LoopOverTiles(_Rows):
    """out[i] = x[i] from a compile-time loop over a list of tiles, then the list again."""

    def __call__(self, x_ptr: ~float32, out_ptr: ~float32):
        gx, go = self.views(x_ptr, out_ptr)
        tiles = [self.row(gx, i) for i in range(2)]
        for i, t in enumerate(tiles):
            self.store_global(go, t, offsets=[i, 0])
        self.store_global(go, tiles[0], offsets=[2, 0])
        self.store_global(go, tiles[1], offsets=[3, 0])


class Prefetch(_Rows):
    """out[i] = 2 x[i] for i < n, each row's load issued one iteration ahead."""

    def __call__(self, n: int32, x_ptr: ~float32, out_ptr: ~float32):
        gx, go = self.views(x_ptr, out_ptr)
        nxt = self.row(gx, 0)
        for i in range(n):
            x = nxt
            nxt = self.row(gx, i + 1)
            self.store_global(go, x * 2.0, offsets=[i, 0])


class MutationSeenThroughAlias(_Rows):
    """out[0] = out[1] = x[0] + 1: `b = a`, then `self.assign(a, a + 1)` changes the tile."""

    def __call__(self, x_ptr: ~float32, out_ptr: ~float32):
        gx, go = self.views(x_ptr, out_ptr)
        a = self.row(gx, 0)
        b = a
        self.assign(a, a + 1.0)
        self.store_global(go, a, offsets=[0, 0])
        self.store_global(go, b, offsets=[1, 0])


def _run(script, *args):
    x = torch.randn(_Rows.ROWS, 32)
    out = torch.full((_Rows.ROWS, 32), float("nan"))
    script(*args, x, out)
    return x, out


def test_rebinding_a_name_leaves_the_other_name_of_its_tile_alone():
    x, out = _run(RebindAfterAlias())
    torch.testing.assert_close(out[:2], torch.stack([x[0] + 1, x[0]]))


def test_swap():
    x, out = _run(Swap())
    torch.testing.assert_close(out[:2], torch.stack([x[1], x[0]]))


def test_a_helper_rebinding_its_argument_leaves_the_callers_tile_alone():
    x, out = _run(HelperRebindsItsArgument())
    torch.testing.assert_close(out[:3], torch.stack([x[0], x[0] * 2, x[0] + 1]))


def test_a_compile_time_loop_over_tiles_leaves_the_list_alone():
    x, out = _run(LoopOverTiles())
    torch.testing.assert_close(out, torch.cat([x[:2], x[:2]]))


@pytest.mark.parametrize("n", [1, 3])
def test_register_prefetch_in_a_loop(n):
    x, out = _run(Prefetch(), n)
    torch.testing.assert_close(out[:n], x[:n] * 2)
    assert torch.isnan(out[n:]).all()


def test_an_explicit_write_is_seen_through_every_name():
    x, out = _run(MutationSeenThroughAlias())
    torch.testing.assert_close(out[:2], torch.stack([x[0] + 1, x[0] + 1]))


class AliasOutsideTheBlock(_Rows):
    """`x = nxt` before a runtime block that rebinds `nxt`; `mode` says where `x` is read."""

    def __init__(self, mode: str):
        super().__init__()
        self.mode = mode

    def __call__(self, n: int32, x_ptr: ~float32, out_ptr: ~float32):
        gx, go = self.views(x_ptr, out_ptr)
        nxt = self.row(gx, 0)
        x = nxt
        if self.mode == "loop, read before":
            for i in range(n):
                self.store_global(go, x, offsets=[i, 0])
                nxt = self.row(gx, i + 1)
        elif self.mode == "loop, read after":
            for i in range(n):
                nxt = self.row(gx, i + 1)
            self.store_global(go, x, offsets=[0, 0])
        elif self.mode == "if, read after":
            if n > 2:
                nxt = nxt + 1.0
            self.store_global(go, x, offsets=[0, 0])
        else:  # "if, read in else": x there is the tile before the if; out[0] = nxt after it
            if n > 2:
                nxt = nxt + 1.0
            else:
                self.store_global(go, x, offsets=[1, 0])
            self.store_global(go, nxt, offsets=[0, 0])


def test_a_loop_that_read_the_other_name_before_rebinding_is_refused_at_the_write():
    with pytest.raises(TypeError) as info:
        _run(AliasOutsideTheBlock("loop, read before"), 3)
    message = str(info.value)
    assert "'x' and 'nxt' name one register tile, which this runtime for loop carries" in message
    assert "the next iteration's read of 'x'" in message
    assert "nxt = self.row(gx, i + 1)" in message  # the line of the write


@pytest.mark.parametrize("mode,block", [("loop, read after", "for loop"), ("if, read after", "if")])
def test_reading_the_other_name_after_the_block_is_refused_at_the_read(mode, block):
    with pytest.raises(NameError) as info:
        _run(AliasOutsideTheBlock(mode), 3)
    message = str(info.value)
    assert f"'x' names the register tile that line" in message
    assert f"as the new value of 'nxt' inside a runtime {block}" in message
    assert "self.assign(x, nxt)" in message  # the advice
    assert "self.store_global(go, x, offsets=[0, 0])" in message  # the read's line


@pytest.mark.parametrize("n", [1, 3])
def test_an_else_branch_still_reads_the_tile_before_the_if(n):
    x, out = _run(AliasOutsideTheBlock("if, read in else"), n)
    torch.testing.assert_close(out[0], x[0] + 1 if n > 2 else x[0])
    if n <= 2:
        torch.testing.assert_close(out[1], x[0])


class MergeInAHelper(_Rows):
    """Tilus 0.2's split-KV merge (flash attention v3's store_back): inside a runtime if
    of a helper, aliases of the helper's arguments are taken, then the arguments are
    rebound -- written in place, the if carries them -- and the aliases must still hold
    the old values. out[0] = the merged max, out[1] = the merged sum."""

    def merge(self, m, l, lhs_m, lhs_l, flag: int32):
        if flag > 0:
            rhs_m = m
            rhs_l = l
            m = self.maximum(lhs_m, rhs_m)
            l = lhs_l * self.exp(lhs_m - m) + rhs_l * self.exp(rhs_m - m)
        return m, l

    def __call__(self, flag: int32, x_ptr: ~float32, out_ptr: ~float32):
        gx, go = self.views(x_ptr, out_ptr)
        m, l = self.row(gx, 0), self.row(gx, 1)
        m, l = self.merge(m, l, self.row(gx, 2), self.row(gx, 3), flag)
        self.store_global(go, m, offsets=[0, 0])
        self.store_global(go, l, offsets=[1, 0])


@pytest.mark.parametrize("flag", [0, 1])
def test_the_split_kv_merge_of_tilus02_flash_attention_v3(flag):
    x, out = _run(MergeInAHelper(), flag)
    m, l, lhs_m, lhs_l = x
    if flag:
        new_m = torch.maximum(lhs_m, m)
        m, l = new_m, lhs_l * torch.exp(lhs_m - new_m) + l * torch.exp(m - new_m)
    torch.testing.assert_close(out[0], m)
    torch.testing.assert_close(out[1], l)


class ScalarTuples(tilus.Script):
    """out = [q, p, fib(n), fib(n + 1)]: `a, b = b, a` and `a, b = b, a + b` (in a runtime
    loop) over runtime scalars, whose variables are written in place one target at a time."""

    def __call__(self, p: int32, q: int32, n: int32, out_ptr: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        go = self.global_view(out_ptr, dtype=int32, shape=[4])
        a = p + 0
        b = q + 0
        a, b = b, a
        f: int32 = 0
        g: int32 = 1
        for i in range(n):
            f, g = g, f + g
        for k, v in enumerate((a, b, f, g)):
            self.store_global(go, self.register_tensor(dtype=int32, shape=[1], init=v), offsets=[k])


def test_tuple_assignment_of_runtime_scalars_reads_the_old_values():
    out = torch.zeros(4, dtype=torch.int32)
    ScalarTuples()(3, 7, 10, out)
    assert out.tolist() == [7, 3, 55, 89]



class Accumulator(tilus.Class):
    """A tilus.Class holding a register tile that its methods rebind."""

    def __init__(self, tile):
        self.tile = tile

    def double(self):
        self.tile = self.tile * 2.0

    def add(self, x):
        self.tile = self.tile + x


class MemberTiles(_Rows):
    """mode "top": out[0] = x[0] (the name the object was made from), out[1] = 2 x[0] (its
    doubled member); "loop": the member accumulates x[1..n] in a runtime loop whose body
    first names the member's tile (out[i + 2] = the running sum before row i + 1), out[1]
    = the total."""

    def __init__(self, mode: str):
        super().__init__()
        self.mode = mode

    def __call__(self, n: int32, x_ptr: ~float32, out_ptr: ~float32):
        gx, go = self.views(x_ptr, out_ptr)
        a = self.row(gx, 0)
        acc = Accumulator(a)
        if self.mode == "top":
            acc.double()
            self.store_global(go, a, offsets=[0, 0])
            self.store_global(go, acc.tile, offsets=[1, 0])
        else:
            for i in range(n):
                before = acc.tile
                acc.add(self.row(gx, i + 1))
                self.store_global(go, before, offsets=[i + 2, 0])
            self.store_global(go, acc.tile, offsets=[1, 0])


def test_a_class_member_rebound_leaves_the_name_it_was_made_from_alone():
    x, out = _run(MemberTiles("top"), 0)
    torch.testing.assert_close(out[:2], torch.stack([x[0], x[0] * 2]))


def test_a_class_member_carried_by_a_loop_and_named_in_its_body():
    x, out = _run(MemberTiles("loop"), 2)
    torch.testing.assert_close(out[2], x[0])
    torch.testing.assert_close(out[3], x[0] + x[1])
    torch.testing.assert_close(out[1], x[0] + x[1] + x[2])


class HelperLoopRebindsItsArgument(_Rows):
    """A helper whose runtime loop rebinds its argument (`t = t + 1.0` carried by the loop,
    so written in place): `mode` says what the caller does with its own name afterwards."""

    def __init__(self, mode: str):
        super().__init__()
        self.mode = mode

    def accumulate(self, t, n):
        for i in range(n):
            t = t + 1.0
        return t

    def accumulate_own_tile(self, t, n):
        fresh = self.register_tensor(dtype=float32, shape=[32])
        self.assign(fresh, t)
        t = fresh
        for i in range(n):
            t = t + 1.0
        return t

    def step(self, t, n):
        return self.accumulate(t, n) * 2.0

    def __call__(self, n: int32, m: int32, x_ptr: ~float32, out_ptr: ~float32):
        gx, go = self.views(x_ptr, out_ptr)
        a = self.row(gx, 0)
        if self.mode == "read after":  # refused at the read: `a` would hold a + n
            d = self.accumulate(a, n)
            self.store_global(go, a, offsets=[0, 0])
        elif self.mode == "rebound":  # out[0] = x[0] + n
            a = self.accumulate(a, n)
            self.store_global(go, a, offsets=[0, 0])
        elif self.mode == "own tile":  # out[0] = x[0], out[1] = x[0] + n
            d = self.accumulate_own_tile(a, n)
            self.store_global(go, a, offsets=[0, 0])
            self.store_global(go, d, offsets=[1, 0])
        elif self.mode == "caller loop carries it":  # out[0] = ((x[0] + n) * 2 ...) m times
            for j in range(m):
                a = self.step(a, n)
            self.store_global(go, a, offsets=[0, 0])
        else:  # "caller loop reads it": each iteration would pass the tile the last one wrote
            s = self.register_tensor(dtype=float32, shape=[32], init=0.0)
            for j in range(m):
                s = s + self.accumulate(a, n)
            self.store_global(go, s, offsets=[0, 0])


def test_a_helper_loop_rebinding_its_argument_refuses_the_callers_stale_name():
    with pytest.raises(NameError) as info:
        _run(HelperLoopRebindsItsArgument("read after"), 3, 1)
    message = str(info.value)
    assert "'a' names the register tile that the helper's line" in message
    assert "(`t = t + 1.0`) writes in place as the new value of 't' inside a runtime for loop" in message
    assert "self.store_global(go, a, offsets=[0, 0])" in message  # the read's line


@pytest.mark.parametrize("n", [0, 3])
def test_a_helper_loop_result_rebound_to_the_callers_name(n):
    x, out = _run(HelperLoopRebindsItsArgument("rebound"), n, 1)
    torch.testing.assert_close(out[0], x[0] + n)


def test_a_helper_loop_over_a_tile_of_its_own_leaves_the_caller_alone():
    x, out = _run(HelperLoopRebindsItsArgument("own tile"), 3, 1)
    torch.testing.assert_close(out[:2], torch.stack([x[0], x[0] + 3]))


@pytest.mark.parametrize("m", [1, 3])
def test_a_caller_loop_carrying_the_tile_a_helper_loop_writes(m):
    x, out = _run(HelperLoopRebindsItsArgument("caller loop carries it"), 2, m)
    expected = x[0]
    for _ in range(m):
        expected = (expected + 2) * 2
    torch.testing.assert_close(out[0], expected)


def test_a_caller_loop_that_reads_the_tile_a_helper_loop_writes_is_refused():
    with pytest.raises(TypeError) as info:
        _run(HelperLoopRebindsItsArgument("caller loop reads it"), 2, 3)
    message = str(info.value)
    assert "this runtime for loop reads 'a' at line" in message
    assert "the next iteration would read the new value" in message
