"""The CUDA generated for explicit wgmma (Tilus 0.2's self.wgmma) compiles with NVRTC for
sm_90a: the pipelined example's autotune configurations, every operand layout (128-, 64-
and 32-byte swizzle and none; K-major and MN-major) and operand type (float16, bfloat16,
tfloat32, float8). The async pass adds no wait around the script's own, the descriptors
are the automatic path's for the same tiles, and the refusals name the script line: an
sm_80 target, shapes and dtypes no wgmma takes, operands wgmma cannot read, blocks that
are not whole warpgroups."""

import re

import pytest
import torch

import tilus
from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.interp.test_wgmma_explicit import WgmmaAMajor, WgmmaBT, WgmmaRS, WrongWarps
from tilus import _C, bfloat16, float16, float32
from tilus.lang.errors import NativeError

require_nvrtc()


def _h(*shape, dtype=torch.float16):
    return torch.zeros(*shape, dtype=dtype)


def _wait_counts(src):
    return sorted(re.findall(r"wgmma_wait_group<(\d+)>", src))


@pytest.mark.parametrize("copy_tma", [True, False])
def test_example_configs_compile(example, copy_tma):
    module = example("matmul_wgmma")
    args = (4096, 4096, 4096, _h(4, 4), _h(4, 4), _h(4, 4))
    configs = module.MatmulWgmma().configs
    assert len(configs) == 16
    for config in configs:
        src = kernel_source(module.MatmulWgmma(**config), args, arch="sm_90a", copy_tma=copy_tma)
        assert "wgmma.mma_async.sync.aligned.m64n" in src and ".f32.f16.f16" in src
        assert src.count("tilus::wgmma_fence();") == 1
        assert src.count("tilus::wgmma_commit_group();") == 1
        # the script's wait_group(1) in the loop and wait_group(0) after it, nothing else
        assert _wait_counts(src) == ["0", "1"], (config, _wait_counts(src))
        if copy_tma:  # copy_async lowered to TMA: async-proxy writes, no fence before wgmma
            assert "tilus::copy_ring_wait(" in src and "cp_async" not in src.split('extern "C"')[1]
            assert "tilus::fence_proxy_async_shared();" not in src
        else:
            assert "tilus::fence_proxy_async_shared();" in src  # cp.async writes -> wgmma reads


def test_async_pass_leaves_explicit_programs_alone(example):
    kernel = example("matmul_wgmma").MatmulWgmma(4, 128, 128, 64, 4)
    program = kernel.compile(4096, 4096, 4096, _h(4, 4), _h(4, 4), _h(4, 4)).program
    assert str(_C.lower_async(program, "sm_90a")) == str(program)
    assert "wgmma_mma(" in str(program) and "wgmma_wait(1)" in str(program)


def test_descriptors_match_the_automatic_path(example):
    """A K-major [128, 64] tile and an N-major [64, 128] tile: the descriptors the dot
    lowering builds for matmul_v3 with the same tiles (GPU-tested there)."""
    args = (4096, 4096, 4096, _h(4, 4), _h(4, 4), _h(4, 4))
    explicit = kernel_source(example("matmul_wgmma").MatmulWgmma(4, 128, 128, 64, 4), args, arch="sm_90a")
    auto = kernel_source(example("matmul_v3_pipeline").MatmulV3(4, 128, 128, 64, 4), args, arch="sm_90a")
    # each tile's descriptor (address, leading and stride offsets, swizzle), then each
    # instruction's accumulator registers and byte offsets into A and B
    tiles = re.compile(r"tilus::wgmma_desc\(tl_([ab])_smem[_0-9]*, (\d+), (\d+), (\d)\)")
    steps = re.compile(r"\(acc \+ (\d+), tilus::wgmma_desc_add\(tl_a_desc[_0-9]*, (\d+)\), "
                       r"tilus::wgmma_desc_add\(tl_b_desc[_0-9]*, (\d+)\)\)")
    assert tiles.findall(explicit) and tiles.findall(explicit) == tiles.findall(auto)
    assert steps.findall(explicit) and steps.findall(explicit) == steps.findall(auto)


@pytest.mark.parametrize("bk, swizzle", [(16, 3), (32, 2), (64, 1), (48, 0)])
def test_k_major_layouts(bk, swizzle):
    src = kernel_source(WgmmaBT(block_m=128, block_n=64, block_k=bk), (200, 200, 200, _h(4), _h(4), _h(4, dtype=torch.float32)),
                        arch="sm_90a")
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in src
    # both operands K-major: no transpose
    assert re.search(r"p, 1, 1, 0, 0;", src)
    codes = {int(c) for c in re.findall(r"wgmma_desc\([^()]*, (\d)\)", src)}
    assert codes == {swizzle}


def test_mn_major_operands():
    src = kernel_source(WgmmaAMajor(), (200, 200, 200, _h(4), _h(4), _h(4, dtype=torch.float32)), arch="sm_90a")
    assert re.search(r"p, 1, 1, 1, 1;", src)  # A M-major, B N-major


@pytest.mark.parametrize("dtype, ptx", [(bfloat16, "m64n64k16.f32.bf16.bf16"), (tilus.tfloat32, "m64n64k8.f32.tf32.tf32"),
                                        (tilus.float8_e4m3, "m64n64k32.f32.e4m3.e4m3")])
def test_operand_types(dtype, ptx):
    src = kernel_source(WgmmaBT(block_m=128, block_n=64, block_k=32, warps=8, dtype=dtype),
                        (200, 200, 200, _h(4), _h(4), _h(4, dtype=torch.float32)), arch="sm_90a")
    assert f"wgmma.mma_async.sync.aligned.{ptx}" in src


@pytest.mark.parametrize("warps, bm, dtype, ptx", [
    (4, 128, float16, "m64n64k16.f32.f16.f16"), (8, 64, bfloat16, "m64n32k16.f32.bf16.bf16"),
    (4, 64, tilus.tfloat32, "m64n64k8.f32.tf32.tf32"), (4, 64, tilus.float8_e4m3, "m64n64k32.f32.e4m3.e4m3")])
def test_register_a(warps, bm, dtype, ptx):
    src = kernel_source(WgmmaRS(block_m=bm, block_k=32, warps=warps, dtype=dtype),
                        (200, 200, 200, _h(4), _h(4), _h(4, dtype=torch.float32)), arch="sm_90a")
    assert f"wgmma.mma_async.sync.aligned.{ptx}" in src
    # A as four 32-bit registers; the 16-bit forms keep only B's transpose flag
    assert re.search(r"\}, \{%\d+, %\d+, %\d+, %\d+\}, %\d+, p, 1, 1" + (", 0;" if ptx.endswith("16") else ";"), src)
    assert "reinterpret_cast<const unsigned int*>(a" in src


class Generic(tilus.Script):
    """One mma of a [m, k] by b [k, n] tile stored as given; for the refusals."""

    def __init__(self, m=64, n=64, k=16, a_dtype=float16, b_dtype=float16, d_dtype=float32, warps=4,
                 a_register=False, b_transposed=False, a_reshaped=False):
        super().__init__()
        self.m, self.n, self.k, self.warps = m, n, k, warps
        self.a_dtype, self.b_dtype, self.d_dtype = a_dtype, b_dtype, d_dtype
        self.a_register, self.b_transposed, self.a_reshaped = a_register, b_transposed, a_reshaped

    def __call__(self, c_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = self.warps
        if self.a_reshaped:
            sa2 = self.shared_tensor(dtype=self.a_dtype, shape=[2, self.m // 2, self.k])
            sa = self.reshape_shared(sa2, [self.m, self.k])
        else:
            sa = self.shared_tensor(dtype=self.a_dtype, shape=[self.m, self.k])
        if self.b_transposed:
            sbt = self.shared_tensor(dtype=self.b_dtype, shape=[self.n, self.k])
            sb = sbt.transpose()
        else:
            sb = self.shared_tensor(dtype=self.b_dtype, shape=[self.k, self.n])
        acc = self.register_tensor(dtype=self.d_dtype, shape=[self.m, self.n], init=0.0)
        self.wgmma.fence()
        if self.a_register:
            self.wgmma.mma(self.load_shared(sa), sb, acc)
        else:
            self.wgmma.mma(sa, sb, acc)
        self.wgmma.commit_group()
        self.wgmma.wait_group(0)
        gc = self.global_view(c_ptr, dtype=self.d_dtype, shape=[self.m, self.n])
        self.store_global(gc, acc, offsets=[0, 0])


def _where(err) -> str:
    """The script line an error names: a NativeError carries it in .text, a script error
    in its message."""
    return getattr(err, "text", "") + str(err)


def _refused(kernel, arch="sm_90a", c_dtype=torch.float32):
    with pytest.raises(Exception) as info:
        _C.generate_cuda(kernel.compile(_h(4, dtype=c_dtype)).program, True, arch)
    return info.value


def test_no_swizzle_mn_major_compiles():
    src = kernel_source(Generic(n=40), (_h(4, dtype=torch.float32),), arch="sm_90a")
    assert "m64n40k16.f32.f16.f16" in src and re.search(r"p, 1, 1, 0, 1;", src)


def test_sm80_is_refused_at_the_script_line():
    err = _refused(Generic(), arch="sm_80")
    assert isinstance(err, NativeError) and "needs an sm_90a target" in str(err)
    assert err.line > 0 and "self.wgmma.fence()" in err.text


@pytest.mark.parametrize("kwargs, message", [
    (dict(m=32), "M = 32 .* must be a multiple of 64"),
    (dict(k=24), "K = 24 must be a multiple of 16"),
    (dict(n=36), "N = 36 .* must be a multiple of 8"),
    (dict(b_dtype=bfloat16), "no wgmma multiplies float16 by bfloat16"),
    (dict(d_dtype=float16), "the accumulator d must be float32"),
])
def test_bad_operands_are_refused_at_the_script_line(kwargs, message):
    c_dtype = torch.float16 if kwargs.get("d_dtype") is float16 else torch.float32
    err = _refused(Generic(**kwargs), c_dtype=c_dtype)
    assert re.search(message, str(err)), str(err)
    assert "self.wgmma.mma(" in _where(err)


def test_float8_mn_major_is_refused():
    err = _refused(Generic(k=32, a_dtype=tilus.float8_e4m3, b_dtype=tilus.float8_e4m3))
    assert "N-major" in str(err) and "only for float16 and bfloat16" in str(err)
    assert "self.wgmma.mma(sa, sb, acc)" in _where(err)
    # stored K-major it compiles
    kernel_source(Generic(k=32, a_dtype=tilus.float8_e4m3, b_dtype=tilus.float8_e4m3, b_transposed=True),
                  (_h(4, dtype=torch.float32),), arch="sm_90a")


def test_reshaped_view_is_refused():
    err = _refused(Generic(a_reshaped=True))
    assert "whole matrix of the last two dimensions" in str(err)
    assert "self.wgmma.mma(sa, sb, acc)" in _where(err)


def test_partial_warpgroup_is_refused():
    """Refused while the script is built (for CUDA and the interpreter alike), at its first
    wgmma instruction."""
    with pytest.raises(Exception, match="whole warpgroups") as info:
        WrongWarps().compile(_h(4), _h(4, dtype=torch.float32))
    assert "self.wgmma.fence()" in _where(info.value)
