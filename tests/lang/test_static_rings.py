"""tilus.option.static_rings: a pipelined loop `self.range(..., unroll=S)` whose stage
counters advance as `v = (v + 1) % S` is transpiled as S copies of its body per
iteration with the counters as constants. The interpreter runs the rewritten program,
so these check its semantics (odd sizes, partial last rounds, the counters' values
after the loop), the IR's shape, where the rewrite must not apply, and that the seed's
generated CUDA still compiles without spills or serialised wgmma."""

import re

import pytest
import torch

import tilus
from tilus import int32


@pytest.fixture
def static_rings():
    tilus.option.static_rings(True)
    yield
    tilus.option.static_rings(None)


def _v5(example, stages, split, warps=4):
    return example("matmul_v5_splitk").MatmulV5(num_warps=warps, block_m=32, block_n=32, block_k=16,
                                                num_stages=stages, split_k_factor=split)


@pytest.mark.parametrize("stages", [2, 3, 4, 5])
@pytest.mark.parametrize("split", [1, 3])
def test_the_pipelined_matmul_gives_the_rolled_loops_result(example, stages, split):
    # 11 k-tiles and a partial one: splits of 4 tiles leave partial rounds of the ring
    m, n, k = 37, 45, 16 * 11 + 5
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    outs = []
    for enabled in (False, True):
        tilus.option.static_rings(enabled)
        try:
            c = torch.full((m, n), float("nan")).half()
            _v5(example, stages, split)(m, n, k, a, b, c)
        finally:
            tilus.option.static_rings(None)
        outs.append(c)
    torch.testing.assert_close(outs[1].float(), a.float() @ b.float(), atol=5e-2, rtol=2e-2)
    assert torch.equal(outs[0], outs[1])


def test_the_ir_indexes_the_stages_with_constants(example, static_rings):
    m, n, k = 37, 45, 181
    args = (m, n, k, torch.zeros(m, k).half(), torch.zeros(k, n).half(), torch.zeros(m, n).half())
    ir = _v5(example, 3, 1).ir(*args)
    assert re.search(r"for offset_k\w* in range\(start_offset_k, offset_k_end, 48\)", ir), ir
    assert "% 3" not in ir  # no counter advances at run time
    for s in range(3):
        assert f"= %sa[{s}]" in ir and f"= %sb[{s}]" in ir
    assert "if ((offset_k_1 + 16) < offset_k_end)" in ir and "if ((offset_k_1 + 32) < offset_k_end)" in ir
    tilus.option.static_rings(False)
    rolled = _v5(example, 3, 1).ir(*args)
    assert "% 3" in rolled and "%sa[current_stage]" in rolled


class RingAfterLoop(tilus.Script):
    """out[0] = the stage counter after a pipelined loop of n iterations, out[1] = the sum
    of the stages it saw, out[2] = the sum of the loop variable (start 5, step 3)."""

    def __init__(self, stages):
        super().__init__()
        self.stages = stages

    def __call__(self, n: int32, out: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        go = self.global_view(out, dtype=int32, shape=[3])
        seen: int32 = 0
        total: int32 = 0
        stage: int32 = 1
        for i in self.range(5, 5 + 3 * n, 3, unroll=self.stages):
            seen = seen + stage * 10 + (stage + 1) % self.stages
            stage = (stage + 1) % self.stages
            total = total + i
        self.store_global(go, self.register_tensor(dtype=int32, shape=[1], init=stage), offsets=[0])
        self.store_global(go, self.register_tensor(dtype=int32, shape=[1], init=seen), offsets=[1])
        self.store_global(go, self.register_tensor(dtype=int32, shape=[1], init=total), offsets=[2])


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("n", [0, 1, 5, 7, 12])
def test_counters_and_the_loop_variable_hold_the_rolled_values(static_rings, stages, n):
    out = torch.full((3,), -1, dtype=torch.int32)
    kernel = RingAfterLoop(stages)
    kernel(n, out)
    assert "% " + str(stages) + ")" not in kernel.ir(n, out).split("for i")[1].split("}")[0]
    stage, seen, total = 1, 0, 0
    for i in range(5, 5 + 3 * n, 3):
        seen += stage * 10 + (stage + 1) % stages
        stage = (stage + 1) % stages
        total += i
    assert out.tolist() == [stage, seen, total]


class NotARing(tilus.Script):
    """A pipelined-looking loop that the rewrite must leave rolled (`case` picks why)."""

    def __init__(self, case):
        super().__init__()
        self.case = case

    def __call__(self, n: int32, out: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        go = self.global_view(out, dtype=int32, shape=[1])
        seen: int32 = 0
        if self.case == "declared outside the enclosing loop":
            stage: int32 = 0
            for r in self.range(2):
                for i in self.range(n, unroll=3):
                    seen = seen + stage
                    stage = (stage + 1) % 3
        else:
            stage: int32 = 0 if self.case != "a runtime start" else n % 3
            for i in self.range(n, unroll=3 if self.case != "unroll differs" else 2):
                seen = seen + stage
                if self.case == "assigned twice":
                    stage = 2
                if self.case == "advanced under an if":
                    if i > 1:
                        stage = (stage + 1) % 3
                else:
                    stage = (stage + 1) % 3
                if self.case == "a break":
                    if seen > 100:
                        break
        self.store_global(go, self.register_tensor(dtype=int32, shape=[1], init=seen), offsets=[0])


@pytest.mark.parametrize("case", ["declared outside the enclosing loop", "a runtime start", "unroll differs",
                                  "assigned twice", "advanced under an if", "a break"])
def test_what_is_not_a_ring_stays_rolled(static_rings, case):
    out = torch.zeros(1, dtype=torch.int32)
    kernel = NotARing(case)
    ir = kernel.ir(7, out)
    assert "% 3)" in ir, ir  # the counter still advances at run time
    kernel(7, out)
    stage = 7 % 3 if case == "a runtime start" else 0
    seen = 0
    for _ in range(2 if case == "declared outside the enclosing loop" else 1):
        for i in range(7):
            seen += stage
            if case == "assigned twice":
                stage = 2
            if case != "advanced under an if" or i > 1:
                stage = (stage + 1) % 3
    assert out.item() == seen


def test_the_option_is_off_by_default_and_checked():
    assert tilus.option.get_static_rings() in (False, True)  # the environment may set it
    with pytest.raises(TypeError, match="static_rings"):
        tilus.option.static_rings(1)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_seed_loop_unrolled_by_its_ring_compiles_without_spills(example, static_rings, arch):
    from tests.codegen.nvrtc_compile import require_nvrtc
    from tilus import _C

    require_nvrtc()
    z = torch.zeros(8, 8, dtype=torch.float16)
    for warps, bm, bn, bk, stages in ((4, 128, 128, 32, 3), (8, 128, 128, 32, 4), (4, 64, 128, 32, 5)):
        kernel = example("matmul_v5_splitk").MatmulV5(num_warps=warps, block_m=bm, block_n=bn, block_k=bk,
                                                      num_stages=stages, split_k_factor=1)
        program = kernel.compile(4096, 4096, 4096, z, z, z).program
        assert "% " + str(stages) not in str(program)
        generated = _C.generate_cuda(program, True, arch)
        report = _C.runtime.compile_report(generated["source"], generated["name"], arch, [], None)
        assert report["spill_bytes"] == 0 and "0 bytes stack frame" in report["log"], report["log"]
        assert "serialized" not in report["log"], report["log"]
