"""The interpreter as a debugger: data races on shared and global memory and reads of
uninitialised shared and register elements (docs/interpreter.md). Each detector catches
a buggy script, naming both lines, the element and the threads, and passes its fixed
twin; the examples and the seed programs run with every check on without a report."""

import importlib.util
import pathlib
import re

import pytest
import torch

from tests.operands import matmul_operands

import tilus
from tilus import float16, float32, int32
from tilus.lang.errors import ScriptDataRaceError, ScriptUninitializedReadError
from tilus.utils import cdiv

HERE = pathlib.Path(__file__)
# The seed programs live in shared/seed_examples next to (an ancestor of) the checkout.
SEEDS = next((p / "shared" / "seed_examples" for p in HERE.resolve().parents
              if (p / "shared" / "seed_examples").is_dir()), HERE.parent / "no-seeds")


def line_of(marker: str) -> int:
    """The line of this file holding `# <marker>`."""
    for number, text in enumerate(HERE.read_text().splitlines(), start=1):
        if text.rstrip().endswith("# " + marker):
            return number
    raise AssertionError(marker)


def at(marker: str) -> str:
    return f"{HERE.name}:{line_of(marker)}"


@pytest.fixture(autouse=True)
def checks_on():
    tilus.option.debug.race_check(True)
    tilus.option.debug.uninit_check(True)
    yield
    tilus.option.debug.race_check(None)
    tilus.option.debug.uninit_check(None)


def _inputs(m, n, k):
    a, b = matmul_operands(m, n, k, device="cpu")
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    return a, b, c


def _close(c, a, b):
    torch.testing.assert_close(c, (a.double() @ b.double()).half(), rtol=1e-2, atol=1e-2)


# ------------------------------------------------------------------ shared memory races

class StagedMatmul(tilus.Script):
    """Tiles staged through shared memory; `first_sync` / `second_sync` drop the barrier
    after the stores (read-after-write race) or after the loads (the next iteration's
    stores overwrite what other warps may still read)."""

    def __init__(self, first_sync=True, second_sync=True):
        super().__init__()
        self.first_sync, self.second_sync = first_sync, second_sync

    def __call__(self, m_size: int32, n_size: int32, k_size: int32,
                 a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        self.attrs.blocks = [cdiv(m_size, 32), cdiv(n_size, 32)]
        self.attrs.warps = 4
        om: int32 = 32 * self.blockIdx.x
        on: int32 = 32 * self.blockIdx.y
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[k_size, n_size])
        sa = self.shared_tensor(dtype=float16, shape=[32, 16])
        sb = self.shared_tensor(dtype=float16, shape=[16, 32])
        acc = self.register_tensor(dtype=float32, shape=[32, 32], init=0.0)
        for k in range(0, k_size, 16):
            self.store_shared(sa, self.load_global(ga, offsets=[om, k], shape=[32, 16]))  # store-a
            self.store_shared(sb, self.load_global(gb, offsets=[k, on], shape=[16, 32]))
            if self.first_sync:
                self.sync()
            a = self.load_shared(sa)  # load-a
            b = self.load_shared(sb)
            acc = self.dot(a, b, acc)
            if self.second_sync:
                self.sync()
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        self.store_global(gc, self.cast(acc, dtype=float16), offsets=[om, on])


def _thread_pair(message):
    return [(int(t), int(w)) for t, w in re.findall(r"thread (\d+) \(warp (\d+)\)", message)]


def test_a_missing_sync_after_store_shared_is_a_race():
    a, b, c = _inputs(40, 50, 48)
    with pytest.raises(ScriptDataRaceError) as err:
        StagedMatmul(first_sync=False)(40, 50, 48, a, b, c)
    message = str(err.value)
    assert message.startswith("data race on shared memory in block (0, 0, 0): element sa[")
    assert f"written by thread" in message and at("store-a") in message
    assert f"read by thread" in message and at("load-a") in message
    assert "with no sync() between them" in message
    (t1, w1), (t2, w2) = _thread_pair(message)
    assert w1 == t1 // 32 and w2 == t2 // 32 and w1 != w2
    # the element named is one that both threads touch: its index lies in sa's shape
    row, col = map(int, re.search(r"element sa\[(\d+), (\d+)\]", message).groups())
    assert 0 <= row < 32 and 0 <= col < 16
    assert err.value.line == line_of("load-a")


def test_a_missing_sync_after_load_shared_is_a_race_with_the_next_store():
    a, b, c = _inputs(40, 50, 48)
    with pytest.raises(ScriptDataRaceError) as err:
        StagedMatmul(second_sync=False)(40, 50, 48, a, b, c)
    message = str(err.value)
    assert re.search(r"element sa\[\d+, \d+\] is read by thread \d+ \(warp \d+\) at .*"
                     + re.escape(at("load-a")) + r".* and written by thread \d+ \(warp \d+\) at .*"
                     + re.escape(at("store-a")), message), message


def test_the_synchronised_staging_passes():
    a, b, c = _inputs(40, 50, 48)
    StagedMatmul()(40, 50, 48, a, b, c)
    _close(c, a, b)


class CopyThenRead(tilus.Script):
    """cp.async into shared, wait, then read as a dot operand (an mma layout, not the
    copy's): without the sync after the wait, warps read what other warps' copies wrote."""

    def __init__(self, sync_after_wait):
        super().__init__()
        self.sync_after_wait = sync_after_wait

    def __call__(self, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        ga = self.global_view(a_ptr, dtype=float16, shape=[32, 16])
        gb = self.global_view(b_ptr, dtype=float16, shape=[16, 32])
        gc = self.global_view(c_ptr, dtype=float32, shape=[32, 32])
        s = self.shared_tensor(dtype=float16, shape=[32, 16])
        self.copy_async(src=ga, dst=s, offsets=[0, 0])  # copy
        self.copy_async_commit_group()
        self.copy_async_wait_group(0)  # wait
        if self.sync_after_wait:
            self.sync()
        a = self.load_shared(s)  # read-copied
        b = self.load_global(gb, offsets=[0, 0], shape=[16, 32])
        acc = self.dot(a, b, self.register_tensor(dtype=float32, shape=[32, 32], init=0.0))
        self.store_global(gc, acc, offsets=[0, 0])


def test_a_copy_async_lands_at_its_wait_and_races_with_reads_of_other_warps():
    a, b = torch.randn(32, 16).half(), torch.randn(16, 32).half()
    c = torch.full((32, 32), float("nan"))
    with pytest.raises(ScriptDataRaceError) as err:
        CopyThenRead(False)(a, b, c)
    message = str(err.value)
    assert message.startswith("data race on shared memory in block (0, 0, 0): element s[")
    assert re.search(r"is written by thread \d+ \(warp \d\) at [^ ]*" + re.escape(at("copy"))
                     + r".* \(a copy_async landing at the wait at [^ ]*" + re.escape(at("wait"))
                     + r".*\) and read by thread \d+ \(warp \d\) at [^ ]*"
                     + re.escape(at("read-copied")), message), message


def test_a_copy_async_followed_by_wait_and_sync_passes():
    a, b = torch.randn(32, 16).half(), torch.randn(16, 32).half()
    c = torch.full((32, 32), float("nan"))
    CopyThenRead(True)(a, b, c)
    torch.testing.assert_close(c, (a.double() @ b.double()).float(), rtol=1e-3, atol=1e-3)


# ------------------------------------------------------------------ global memory races

class SplitSum(tilus.Script):
    """Every block z adds its slice of x into y[0:n]; with `ordered` a semaphore passes
    the partial sum from block to block, without it the blocks race on y."""

    def __init__(self, ordered):
        super().__init__()
        self.ordered = ordered

    def __call__(self, n: int32, parts: int32, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = [1, 1, parts]
        self.attrs.warps = 1  # the [64] tile is replicated within the warp only
        gx = self.global_view(x_ptr, dtype=float32, shape=[parts, n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])
        sem = self.global_tensor(dtype=int32, shape=[1], requires_clean=True)
        x = self.load_global(gx, offsets=[self.blockIdx.z, 0], dims=[1], shape=[64])
        if self.ordered:
            self.lock_semaphore(~sem[0], value=self.blockIdx.z)
        y = self.load_global(gy, offsets=[0], shape=[64])  # read-y
        self.store_global(gy, x + y, offsets=[0])  # write-y
        if self.ordered:
            self.sync()
            self.release_semaphore(~sem[0], value=(self.blockIdx.z + 1) % parts)


def test_blocks_adding_into_one_output_without_a_semaphore_race():
    x = torch.randn(3, 64)
    y = torch.zeros(64)
    with pytest.raises(ScriptDataRaceError) as err:
        SplitSum(False)(64, 3, x, y)
    message = str(err.value)
    assert message.startswith("data race on global memory: element gy[")
    assert re.search(r"is written by block \(0, 0, 0\) thread \d+ \(warp \d\) at .*"
                     + re.escape(at("write-y")) + r".* and read by block \(0, 0, 1\) thread \d+ "
                     r"\(warp \d\) at .*" + re.escape(at("read-y")), message), message
    assert "no release_semaphore -> lock_semaphore chain" in message


def test_blocks_ordered_by_a_semaphore_pass():
    x = torch.randn(3, 64)
    y = torch.zeros(64)
    SplitSum(True)(64, 3, x, y)
    torch.testing.assert_close(y, x.sum(0))


class LastBlockSums(tilus.Script):
    """Every block z stores its slice of x in its own plane of a workspace and counts
    itself in with an atomic add of `sem`; the block that counts last adds the planes
    into y (split-K's last-slice reduction). With `acquire_again` the last block
    acquires through a second atomic (an add of 0), after counting with a release."""

    def __init__(self, sem, acquire_again=False):
        super().__init__()
        self.sem, self.acquire_again = sem, acquire_again

    def __call__(self, n: int32, parts: int32, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = [1, 1, parts]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[parts, n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])
        planes = self.global_tensor(dtype=float32, shape=[parts, n])
        count = self.global_tensor(dtype=int32, shape=[1], requires_clean=True)
        x = self.load_global(gx, offsets=[self.blockIdx.z, 0], dims=[1], shape=[64])
        self.store_global(planes, x, offsets=[self.blockIdx.z, 0], dims=[1])  # write-plane
        self.sync()
        one = self.register_tensor(dtype=int32, shape=[1], init=1)
        seen = self.atomic.global_add(count, one, offsets=[0], sem=self.sem)
        if seen.item() == parts - 1:
            if self.acquire_again:
                zero = self.register_tensor(dtype=int32, shape=[1], init=0)
                self.atomic.global_add(count, zero, offsets=[0], sem="acquire")
            total = self.register_tensor(dtype=float32, shape=[64], init=0.0)
            for z in range(parts):
                total = total + self.load_global(planes, offsets=[z, 0], dims=[1], shape=[64])  # read-plane
            self.store_global(gy, total, offsets=[0])
            self.store_global(count, self.register_tensor(dtype=int32, shape=[1], init=0), offsets=[0])


@pytest.mark.parametrize("sem, acquire_again", [("acq_rel", False), ("release", True)])
def test_blocks_ordered_by_release_and_acquire_atomics_pass(sem, acquire_again):
    """An acquiring atomic orders the block after every block whose releasing atomic on
    the same address came before: a chain of read-modify-writes, not only the last one."""
    x = torch.randn(3, 64)
    y = torch.full((64,), float("nan"))
    LastBlockSums(sem, acquire_again)(64, 3, x, y)
    torch.testing.assert_close(y, x.sum(0))


def test_a_relaxed_atomic_count_orders_nothing():
    x = torch.randn(3, 64)
    y = torch.full((64,), float("nan"))
    with pytest.raises(ScriptDataRaceError) as err:
        LastBlockSums("relaxed")(64, 3, x, y)
    message = str(err.value)
    assert re.search(r"is written by block \(0, 0, 0\) .*" + re.escape(at("write-plane")) +
                     r".* and read by block \(0, 0, 2\) .*" + re.escape(at("read-plane")), message), message


class SameBlockGlobal(tilus.Script):
    """One block writes a tile and reads it back in another layout (a dot operand):
    without a sync other warps read what a warp wrote."""

    def __init__(self, sync):
        super().__init__()
        self.sync_between = sync

    def __call__(self, a_ptr: ~float16, t_ptr: ~float16, c_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        ga = self.global_view(a_ptr, dtype=float16, shape=[32, 32])
        gt = self.global_view(t_ptr, dtype=float16, shape=[32, 32])
        gc = self.global_view(c_ptr, dtype=float32, shape=[32, 32])
        self.store_global(gt, self.load_global(ga, offsets=[0, 0], shape=[32, 32]), offsets=[0, 0])  # put
        if self.sync_between:
            self.sync()
        a = self.load_global(gt, offsets=[0, 0], shape=[32, 32])  # get
        acc = self.dot(a, a, self.register_tensor(dtype=float32, shape=[32, 32], init=0.0))
        self.store_global(gc, acc, offsets=[0, 0])


def test_a_global_round_trip_within_a_block_needs_a_sync():
    a = torch.randn(32, 32).half()
    t = torch.zeros(32, 32, dtype=torch.float16)
    c = torch.zeros(32, 32)
    with pytest.raises(ScriptDataRaceError) as err:
        SameBlockGlobal(False)(a, t, c)
    message = str(err.value)
    assert "data race on global memory: element gt[" in message
    assert at("put") in message and at("get") in message
    assert "block (0, 0, 0)" in message and "with no sync() between them" in message
    SameBlockGlobal(True)(a, t, c)
    torch.testing.assert_close(c, (a.double() @ a.double()).float(), rtol=1e-2, atol=1e-2)


# ------------------------------------------------------------------ uninitialised reads

class ReadStage(tilus.Script):
    """Writes stage 0 of a two-stage shared buffer and reads stage `stage`."""

    def __init__(self, stage):
        super().__init__()
        self.stage = stage

    def __call__(self, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[8, 16])
        gy = self.global_view(y_ptr, dtype=float32, shape=[8, 16])
        s = self.shared_tensor(dtype=float32, shape=[2, 8, 16])
        self.store_shared(s[0], self.load_global(gx, offsets=[0, 0], shape=[8, 16]))
        self.sync()
        t = self.load_shared(s[self.stage])  # read-stage
        self.store_global(gy, t, offsets=[0, 0])


def test_reading_shared_memory_nothing_wrote_is_reported():
    x = torch.randn(8, 16)
    y = torch.zeros(8, 16)
    with pytest.raises(ScriptUninitializedReadError) as err:
        ReadStage(1)(x, y)
    message = str(err.value)
    assert message.startswith("load_shared reads element s[1, 0, 0] of shared memory before "
                              "anything wrote it"), message
    assert err.value.line == line_of("read-stage")
    ReadStage(0)(x, y)
    torch.testing.assert_close(y, x)


class Accumulate(tilus.Script):
    def __init__(self, init):
        super().__init__()
        self.init = init

    def __call__(self, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[4, 32])
        gy = self.global_view(y_ptr, dtype=float32, shape=[4, 32])
        if self.init:
            acc = self.register_tensor(dtype=float32, shape=[4, 32], init=0.0)
        else:
            acc = self.register_tensor(dtype=float32, shape=[4, 32])
        for i in range(2):
            acc = acc + self.load_global(gx, offsets=[0, 0], shape=[4, 32])  # accumulate
        self.store_global(gy, acc, offsets=[0, 0])


def test_a_register_tensor_without_init_read_before_assignment_is_reported():
    x = torch.randn(4, 32)
    y = torch.zeros(4, 32)
    with pytest.raises(ScriptUninitializedReadError) as err:
        Accumulate(False)(x, y)
    message = str(err.value)
    assert message.startswith("elementwise reads register tensor acc (register[float32, 4x32]), "
                              "element [0, 0] and every other, before anything was assigned"), message
    assert err.value.line == line_of("accumulate")
    Accumulate(True)(x, y)
    torch.testing.assert_close(y, 2 * x)


class AssignedLater(tilus.Script):
    """A register tensor declared without init and assigned before its first read."""

    def __call__(self, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[32])
        gy = self.global_view(y_ptr, dtype=float32, shape=[32])
        t = self.register_tensor(dtype=float32, shape=[32])
        t = self.load_global(gx, offsets=[0], shape=[32])  # assigns into t
        self.store_global(gy, t * 3.0, offsets=[0])


def test_a_register_tensor_assigned_before_its_read_passes():
    x = torch.randn(32)
    y = torch.zeros(32)
    AssignedLater()(x, y)
    torch.testing.assert_close(y, 3 * x)


def test_the_checks_can_be_turned_off():
    tilus.option.debug.race_check(False)
    tilus.option.debug.uninit_check(False)
    assert not tilus.option.debug.get_race_check() and not tilus.option.debug.get_uninit_check()
    x = torch.randn(3, 64)
    y = torch.zeros(64)
    SplitSum(False)(64, 3, x, y)  # the interpreter runs blocks in order: the sum is right
    torch.testing.assert_close(y, x.sum(0))
    Accumulate(False)(torch.randn(4, 32), torch.zeros(4, 32))  # poison (NaN), no report


def test_the_option_takes_bools_only():
    with pytest.raises(TypeError, match="race_check"):
        tilus.option.debug.race_check(1)


# ------------------------------------------------------------------ no false reports

EXAMPLE_RUNS = ["add_one", "matmul_v0_jit", "matmul_v1_shared", "matmul_v2_autotune",
                "matmul_v3_pipeline", "matmul_v5_splitk", "matmul_relu_fp32_simt",
                "matmul_decode_splitk"]


@pytest.mark.parametrize("name", EXAMPLE_RUNS)
def test_every_example_runs_clean_with_every_check(example, name, capsys):
    example(name).main("cpu")


@pytest.mark.parametrize("split_k", [1, 4, 16])
@pytest.mark.parametrize("stages", [2, 3, 5])
@pytest.mark.parametrize("warps,bm,bn,bk", [(4, 64, 128, 16), (8, 128, 64, 32), (4, 32, 256, 16)])
def test_split_k_matmul_configurations_run_clean(example, split_k, stages, warps, bm, bn, bk):
    matmul = example("matmul_v5_splitk").MatmulV5(num_warps=warps, block_m=bm, block_n=bn,
                                                  block_k=bk, num_stages=stages,
                                                  split_k_factor=split_k)
    a, b, c = _inputs(70, 130, 200)
    matmul(70, 130, 200, a, b, c)
    _close(c, a, b)


def _load_seed(name):
    path = SEEDS / f"{name}.py"
    if not path.exists():
        pytest.skip("../shared/seed_examples is not next to this checkout")
    spec = importlib.util.spec_from_file_location(f"tilus_seed_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_seed_split_k_matmul_runs_clean_at_256_cubed():
    seed = _load_seed("matmul_v5_splitk")
    a, b, c = _inputs(256, 256, 256)
    seed.MatmulV5()(256, 256, 256, a, b, c)
    _close(c, a, b)
    for split_k in (4, 12):
        matmul = seed.MatmulV5(num_warps=8, block_m=64, block_n=128, block_k=32, num_stages=4,
                               split_k_factor=split_k)
        a, b, c = _inputs(100, 70, 300)
        matmul(100, 70, 300, a, b, c)
        _close(c, a, b)


def test_the_seed_matmul_v5_at_256_cubed_runs_clean_with_every_check(example):
    # (its speed, the "under 2 s", is measured by benchmarks/interp_throughput.py)
    path = SEEDS / "matmul_v5_splitk.py"
    module = _load_seed("matmul_v5_splitk") if path.exists() else example("matmul_v5_splitk")
    matmul = module.MatmulV5()
    a, b, c = _inputs(256, 256, 256)
    c.fill_(float("nan"))
    matmul(256, 256, 256, a, b, c)
    _close(c, a, b)


def test_the_seed_autotuned_matmul_runs_clean():
    # (seed_examples/matmul_jit.py runs its CUDA main() when imported: its kernel is
    # examples/matmul_v0_jit.py, run above.)
    for name, cls in [("matmul_v2_autotune", "MatmulV2")]:
        kernel = getattr(_load_seed(name), cls)()
        a, b, c = _inputs(37, 100, 72)
        kernel(37, 100, 72, a, b, c)
        _close(c, a, b)


def test_the_seed_add_one_runs_clean(capsys):
    _load_seed("add_one").main()
    assert "tensor([ 1.,  2.," in capsys.readouterr().out
