"""The transpiler turns __call__ into IR; these tests assert on the printed IR text."""

import torch

import tilus
from tilus import float16, float32, int32
from tilus.utils import cdiv


class AddOne(tilus.Script):
    def __init__(self, block_n, warps):
        super().__init__()
        self.block_n = block_n
        self.warps = warps

    def __call__(self, n: int32, a_ptr: ~float32, b_ptr: ~float32):
        self.attrs.blocks = cdiv(n, self.block_n)
        self.attrs.warps = self.warps
        offset = self.blockIdx.x * self.block_n
        ga = self.global_view(a_ptr, shape=[n], dtype=float32)
        gb = self.global_view(b_ptr, shape=[n], dtype=float32)
        a = self.load_global(ga, offsets=[offset], shape=[self.block_n])
        b = a + 1.0
        self.store_global(gb, b, offsets=[offset])


def test_add_one_ir_text():
    x = torch.zeros(4)
    text = AddOne(128, 4).ir(4, x, x)
    assert text == (
        "kernel add_one(n: int32, a_ptr: ~float32, b_ptr: ~float32)\n"
        "  blocks = [((n + 127) / 128), 1, 1], warps = 4\n"
        "{\n"
        "  offset: int32 = (blockIdx.x * 128)\n"
        "  %ga = global_view(a_ptr, dtype=float32, shape=[n])   # global[float32, n]\n"
        "  %gb = global_view(b_ptr, dtype=float32, shape=[n])   # global[float32, n]\n"
        "  %a = load_global(%ga, offsets=[offset], shape=[128])   # register[float32, 128]\n"
        "  %b = %a + 1.0   # register[float32, 128]\n"
        "  store_global(%gb, %b, offsets=[offset])\n"
        "}\n"
    )


def test_compile_time_values_specialise_the_ir():
    x = torch.zeros(4)
    assert "shape=[64]" in AddOne(64, 2).ir(4, x, x)
    assert "warps = 2" in AddOne(64, 2).ir(4, x, x)


class ControlFlow(tilus.Script):
    def __init__(self):
        super().__init__()
        self.stages = 3

    def helper(self, x, scale):
        # a helper method of the class is inlined
        return x * scale + 1

    def __call__(self, n: int32, flag: bool, out_ptr: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        stage: int32 = 0
        total = 0 * n
        for i in range(n):
            if i % 2 == 0 and i > 1:
                total = total + self.helper(i, 2)
            else:
                total = total - 1
            stage = (stage + 1) % self.stages
        j = n
        while j > 0:
            j = j // 2
            if j == 3:
                break
        if flag:
            total = max(total, j)
        else:
            total = min(total, -j)
        for k in self.range(0, n, 4, unroll=2):
            total += k
        g = self.global_view(out_ptr, dtype=int32, shape=[1])
        self.store_global(g, self.register_tensor(dtype=int32, shape=[1], init=total), offsets=[0])


def test_control_flow_ir():
    x = torch.zeros(1, dtype=torch.int32)
    text = ControlFlow().ir(5, True, x)
    lines = [line.strip() for line in text.splitlines()]
    assert "stage: int32 = 0" in lines
    assert "total: int32 = (0 * n)" not in lines  # folded: 0 * n == 0
    assert "total: int32 = 0" in lines
    assert "for i in range(0, n, 1) {" in lines
    assert "if (((i % 2) == 0) && (i > 1)) {" in lines
    assert "total = (total + ((i * 2) + 1))" in lines
    assert "} else {" in lines
    assert "stage = ((stage + 1) % 3)" in lines
    assert "while (j > 0) {" in lines
    assert "j = (j / 2)" in lines
    assert "break" in lines
    assert "total = max(total, j)" in lines  # `if flag` is a compile-time branch
    assert "total = min(total, -j)" not in lines
    assert "for k in range(0, n, 4) unroll(2) {" in lines
    text_false = ControlFlow().ir(5, False, x)
    assert "total = min(total, -j)" in text_false


class SplitKShape(tilus.Script):
    def __call__(self, m: int32, c_ptr: ~float16, factor: int):
        self.attrs.blocks = [cdiv(m, 16), 2, factor]
        self.attrs.warps = 4
        sems = self.global_tensor(dtype=int32, shape=[cdiv(m, 16), 2], requires_clean=True)
        semaphore: ~int32 = ~sems[self.blockIdx.x, self.blockIdx.y]
        s = self.shared_tensor(dtype=float16, shape=[3, 16, 32])
        gc = self.global_view(c_ptr, dtype=float16, shape=[m, 32])
        if self.blockIdx.z > 0:
            self.lock_semaphore(semaphore, value=self.blockIdx.z)
        self.copy_async(src=gc, dst=s[1], offsets=[0, 0])
        self.copy_async_commit_group()
        self.copy_async_wait_group(0)
        self.sync()
        self.release_semaphore(semaphore, value=(self.blockIdx.z + 1) % factor)


def test_semaphores_workspace_and_shared_slices_in_ir():
    c = torch.zeros(4, 32, dtype=torch.float16)
    text = SplitKShape().ir(4, c, 4)
    assert "%sems = global_tensor(dtype=int32, shape=[((m + 15) / 16), 2], requires_clean=True)" in text
    assert "semaphore: ~int32 = ~%sems[blockIdx.x, blockIdx.y]" in text
    assert "lock_semaphore(semaphore, value=blockIdx.z)" in text
    assert "release_semaphore(semaphore, value=((blockIdx.z + 1) % 4))" in text
    assert "= %s[1]   # shared[float16, 16x32]" in text
    assert "copy_async_wait_group(n=0)" in text
    assert "blocks = [((m + 15) / 16), 2, 4]" in text


class RegisterRebinding(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        g = self.global_view(a_ptr, dtype=float32, shape=[n])
        acc = self.register_tensor(dtype=float32, shape=[8], init=0.0)
        for i in range(n):
            x = self.load_global(g, offsets=[i * 8], shape=[8])
            acc = acc + x
        self.store_global(g, acc, offsets=[0])


def test_rebinding_a_register_tensor_in_a_loop_updates_it():
    text = RegisterRebinding().ir(3, torch.zeros(24))
    assert "%acc := %r" in text  # the loop-carried tile is written in place


def test_instances_cache_programs_by_jit_values():
    from tilus.script import STATS

    kernel = ControlFlow()
    x = torch.zeros(1, dtype=torch.int32)
    before = STATS["transpiles"]
    kernel.compile(5, True, x)
    kernel.compile(7, True, x)  # runtime value changed: no new transpile
    assert STATS["transpiles"] == before + 1
    kernel.compile(7, False, x)  # JIT value changed: a new specialisation
    assert STATS["transpiles"] == before + 2


def _factory(dtype):
    class Fill(tilus.Script):
        def __call__(self, out: ~dtype):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            g = self.global_view(out, dtype=dtype, shape=[4])
            self.store_global(g, self.register_tensor(dtype=dtype, shape=[4], init=3), offsets=[0])

    return Fill


def test_classes_from_one_factory_keep_their_own_closures():
    from tilus import int8

    Fill16, Fill8 = _factory(float16), _factory(int8)
    assert "dtype=float16" in Fill16().ir(torch.zeros(4, dtype=torch.float16))
    out = torch.zeros(4, dtype=torch.int8)
    Fill8()(out)
    assert out.tolist() == [3, 3, 3, 3]
