"""TMA copies on CUDA: the generated kernels take one tensor map per (view, box,
swizzle) as `const __grid_constant__` parameters and compile with NVRTC for sm_90a (the
PTX of every rank, loads and stores, the 32/64/128-byte swizzles, tiles in 128-byte
column blocks); sm_80 and what the TMA unit cannot do are refused at the script line;
the host computes cuTensorMapEncodeTiled's arguments from the launch arguments, refuses
strides and addresses TMA cannot take naming the parameter, and re-encodes only when
they change."""

import struct

import pytest
import torch

import tilus
from tests.codegen.nvrtc_compile import ELF_MAGIC, require_nvrtc
from tests.interp.test_mbarrier_tma import TmaPipelineMatmul, TmaStoreCopyTx
from tests.interp.tma_scripts import TmaBatchedCopy, TmaPipelineMatmulStages, TmaRoundTrip
from tilus import _C, float16, int32
from tilus.lang.errors import NativeError

rt = _C.runtime
require_nvrtc()

FP16 = 6  # CU_TENSOR_MAP_DATA_TYPE_FLOAT16
FP32 = 7


def _generate(kernel, args, arch="sm_90a", wgmma=True):
    return _C.generate_cuda(kernel.compile(*args).program, True, arch, wgmma=wgmma)


def _compile(kernel, args, arch="sm_90a", wgmma=True):
    generated = _generate(kernel, args, arch, wgmma)
    report = rt.compile_report(generated["source"], generated["name"], arch, [], None)
    assert report["cubin"][:4] == ELF_MAGIC
    return generated


def _h(*shape):
    return torch.zeros(*shape, dtype=torch.float16)


def _round_trip_args(m=37, n=72, ld=80):
    return (m, n, ld, _h(m, ld), _h(m, ld))


@pytest.mark.parametrize("block_m, block_n, swizzle, blocks", [
    (16, 16, 0, 1),     # 32-byte rows: no swizzle
    (16, 32, 64, 1),    # 64-byte rows: the 64B swizzle
    (32, 64, 128, 1),   # 128-byte rows: the 128B swizzle
    (16, 128, 128, 2),  # 256-byte rows: two 128-byte column blocks, one copy each
    (256, 8, 0, 1),     # the largest box extent
])
@pytest.mark.parametrize("shift", [0, 5])
def test_round_trip_compiles_with_the_swizzle_of_its_rows(block_m, block_n, swizzle, blocks, shift):
    g = _compile(TmaRoundTrip(block_m, block_n, shift), _round_trip_args())
    src = g["source"]
    maps = g["tma_maps"]
    assert len(maps) == 2  # x and y: two views
    for k in range(2):
        spec = maps.spec(k)
        assert spec["box"] == [block_m, block_n // blocks] and spec["swizzle_bytes"] == swizzle
        assert f"const __grid_constant__ tilus::TmaDescriptor tl_tma{k}" in src
    assert src.count("tilus::tma_load_2d(&tl_tma0") == blocks
    assert src.count("tilus::tma_store_2d(&tl_tma1") == blocks
    assert "if (tl_tid == 0)" in src and "__align__(1024)" in src
    assert src.count('cp.async.bulk.wait_group.read 0;') == 1  # before the kernel exits
    if blocks > 1:  # the second block: 128 bytes of columns further, rows * 128 bytes later
        assert f"+ {block_m * 128}, " in src and f") + {block_n // blocks}, " in src


def test_store_orders_the_blocks_writes_before_thread_0_issues_it():
    src = _compile(TmaRoundTrip(), _round_trip_args())["source"]
    store = src.index("tilus::tma_store_2d")
    before = src[:store]
    assert before.rindex("fence.proxy.async.shared::cta") < before.rindex("__syncthreads()")
    wait = src.index("cp.async.bulk.wait_group 0;")
    assert src.index("__syncthreads();", wait) > wait


def test_rank3_view_with_a_tile_over_two_dims():
    x = torch.zeros(3, 45, 72)
    g = _compile(TmaBatchedCopy(), (3, 45, 72, x, x))
    assert len(g["tma_maps"]) == 2
    # fp32 rows of 64 elements are 256 bytes: two 128-byte column blocks per tile
    assert g["tma_maps"].spec(0)["box"] == [1, 32, 32] and g["tma_maps"].spec(0)["swizzle_bytes"] == 128
    assert g["source"].count("tilus::tma_load_3d(&tl_tma0") == 2
    assert g["source"].count("tilus::tma_store_3d(&tl_tma1") == 2


@pytest.mark.parametrize("wgmma", [False, True])
def test_pipelined_matmuls_compile(wgmma):
    a = _h(128, 128)
    for kernel in (TmaPipelineMatmul(), TmaPipelineMatmulStages(64, 64, 32, 3),
                   TmaPipelineMatmulStages(64, 128, 64, 4)):
        g = _compile(kernel, (128, 128, 128, a, a, a), wgmma=wgmma)
        # one map per operand, shared by the prologue's and the loop's copies
        assert len(g["tma_maps"]) == 2
        assert g["source"].count("tilus::tma_load_2d(") >= 2


def test_wgmma_matmul_reads_the_tiles_tma_wrote():
    a = _h(128, 128)
    g = _compile(TmaPipelineMatmulStages(64, 128, 64, 3), (128, 128, 128, a, a, a), wgmma=True)
    assert "wgmma.mma_async" in g["source"]
    # B [64, 128] fp16: 256-byte rows -> two column blocks of the 128B swizzle
    assert [g["tma_maps"].spec(k)["swizzle_bytes"] for k in range(2)] == [128, 128]
    assert g["tma_maps"].spec(1)["box"] == [64, 64]


def test_interp_test_scripts_compile():
    _compile(TmaStoreCopyTx(), (37, 72, _h(37, 72), _h(37, 72)))


# ---- refusals at build time, with the script line

def test_sm80_refuses_tma_at_the_script_line():
    with pytest.raises(NativeError, match="needs sm_90a") as info:
        _generate(TmaFirst(), (_h(64, 64),), "sm_80")
    assert "self.tma.global_to_shared(src=gx, dst=s" in info.value.text


class TmaFirst(tilus.Script):
    def __call__(self, x_ptr: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float16, shape=[64, 64])
        s = self.shared_tensor(dtype=float16, shape=[16, 64])
        bar = self.mbarrier.alloc()
        self.tma.global_to_shared(src=gx, dst=s, offsets=[0, 0], mbarrier=bar)


class TmaColumn(tilus.Script):
    def __call__(self, n: int32, x_ptr: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float16, shape=[n, n])
        s = self.shared_tensor(dtype=float16, shape=[64])
        bar = self.mbarrier.alloc()
        self.tma.global_to_shared(src=gx, dst=s, offsets=[0, 0], dims=[0], mbarrier=bar)


class TmaTransposed(tilus.Script):
    def __call__(self, n: int32, x_ptr: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float16, shape=[n, n], strides=[1, n])
        s = self.shared_tensor(dtype=float16, shape=[16, 64])
        bar = self.mbarrier.alloc()
        self.tma.global_to_shared(src=gx, dst=s, offsets=[0, 0], mbarrier=bar)


class TmaOddStride(tilus.Script):
    def __call__(self, n: int32, x_ptr: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float16, shape=[n, 64], strides=[68, 1])
        s = self.shared_tensor(dtype=float16, shape=[16, 64])
        bar = self.mbarrier.alloc()
        self.tma.global_to_shared(src=gx, dst=s, offsets=[0, 0], mbarrier=bar)


class TmaBlockShape(tilus.Script):
    def __call__(self, n: int32, x_ptr: ~float16):
        self.attrs.blocks = [2]
        self.attrs.warps = 4
        rows: int32 = n + self.blockIdx.x
        gx = self.global_view(x_ptr, dtype=float16, shape=[rows, 64])
        s = self.shared_tensor(dtype=float16, shape=[16, 64])
        bar = self.mbarrier.alloc()
        self.tma.global_to_shared(src=gx, dst=s, offsets=[0, 0], mbarrier=bar)


class TmaWorkspace(tilus.Script):
    def __call__(self, n: int32, x_ptr: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        gw = self.global_tensor(dtype=float16, shape=[64, 64])
        s = self.shared_tensor(dtype=float16, shape=[16, 64])
        bar = self.mbarrier.alloc()
        self.tma.global_to_shared(src=gw, dst=s, offsets=[0, 0], mbarrier=bar)


class TmaOddStage(tilus.Script):
    """Stages of `rows` rows of 128 bytes. 12 rows: swizzled (8 rows or more), and the
    second stage does not start at a swizzle period; 5 rows: fewer than a period, so
    row-major (no swizzle), which TMA writes at any 128-byte multiple."""

    def __init__(self, rows=12):
        super().__init__()
        self.rows = rows

    def __call__(self, n: int32, x_ptr: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float16, shape=[n, 64])
        s = self.shared_tensor(dtype=float16, shape=[2, self.rows, 64])
        bar = self.mbarrier.alloc()
        self.tma.global_to_shared(src=gx, dst=s[1], offsets=[0, 0], mbarrier=bar)


@pytest.mark.parametrize("kernel, args, message", [
    (TmaColumn(), (64, _h(64, 64)), "the tile's last dimension must be that one"),
    (TmaTransposed(), (64, _h(64, 64)), "contiguous (stride 1)"),
    (TmaOddStride(), (64, _h(64, 68)), "multiple of 16 bytes"),
    (TmaBlockShape(), (64, _h(66, 64)), "the host cannot compute before the launch"),
    (TmaWorkspace(), (64, _h(64, 64)), "is a workspace"),
    (TmaOddStage(), (64, _h(64, 64)), "not at multiples of 1024 bytes"),
])
def test_what_tma_cannot_do_is_refused_at_the_line(kernel, args, message):
    with pytest.raises(NativeError) as info:
        _generate(kernel, args)
    assert message in str(info.value), str(info.value)
    assert "self.tma.global_to_shared(src=" in info.value.text


def test_stages_of_fewer_rows_than_a_swizzle_period_are_row_major():
    # [stages, 1..7, n] tiles (a scale row per stage) cannot be swizzled per stage
    source = _generate(TmaOddStage(rows=5), (64, _h(64, 64)))["source"]
    assert "tma_load_2d" in source


# ---- the host side: cuTensorMapEncodeTiled's arguments, refusals, the cache

def _maps(kernel, args):
    return _generate(kernel, args)["tma_maps"]


def test_encode_parameters_follow_the_launch_arguments():
    m, n, ld = 37, 72, 80
    maps = _maps(TmaRoundTrip(32, 64), _round_trip_args(m, n, ld))
    x_addr, y_addr = 0x7F0000001000, 0x7F0000100000
    p = maps.params([m, n, ld, x_addr, y_addr])
    assert [q["address"] for q in p] == [x_addr, y_addr]
    for q in p:
        assert q["data_type"] == FP16 and q["rank"] == 2
        assert q["dims"] == [n, m]  # innermost first
        assert q["strides"] == [ld * 2]  # bytes, of the outer dimension
        assert q["box"] == [64, 32] and q["element_strides"] == [1, 1]
        assert q["swizzle"] == 3  # CU_TENSOR_MAP_SWIZZLE_128B
        assert q["interleave"] == 0 and q["oob_fill"] == 0  # out of range reads zeros


def test_rank3_parameters():
    x = torch.zeros(3, 45, 72)
    p = _maps(TmaBatchedCopy(), (3, 45, 72, x, x)).params([3, 45, 72, 4096, 8192])[0]
    assert p["data_type"] == FP32 and p["rank"] == 3
    assert p["dims"] == [72, 45, 3] and p["strides"] == [72 * 4, 45 * 72 * 4]
    assert p["box"] == [32, 32, 1] and p["swizzle"] == 3  # a 128-byte column block


def test_stride_parameter_not_a_multiple_of_16_bytes_is_refused_naming_it():
    maps = _maps(TmaRoundTrip(), _round_trip_args())
    with pytest.raises(NativeError, match=r"'x_ptr'.*stride 75 elements \(150 bytes; ld\)") as info:
        maps.params([37, 72, 75, 4096, 8192])
    assert "tma.global_to_shared" in str(info.value)


def test_unaligned_address_is_refused_naming_the_parameter():
    maps = _maps(TmaRoundTrip(), _round_trip_args())
    with pytest.raises(NativeError, match=r"'y_ptr' starts at address 0x2008"):
        maps.params([37, 72, 80, 4096, 0x2008])


def test_repeated_arguments_do_not_re_encode():
    maps = _maps(TmaRoundTrip(), _round_trip_args())
    maps.use_fake_encoder()
    args = [37, 72, 80, 4096, 8192]
    blobs = maps.encode(args)
    assert maps.encodings == 2 and all(len(b) == 128 for b in blobs)
    address, = struct.unpack_from("<Q", blobs[1], 0)
    dims = struct.unpack_from("<5Q", blobs[1], 8)
    assert address == 8192 and dims[:2] == (72, 37)
    assert maps.encode(args) == blobs and maps.encodings == 2
    other = [37, 72, 80, 4096, 16384]  # a new y: only its map is encoded
    maps.encode(other)
    assert maps.encodings == 3
    assert maps.encode(args) == blobs and maps.encodings == 3  # both still cached


@pytest.mark.parametrize("warps, bm, bn, bk, stages", [
    (4, 128, 128, 64, 3), (8, 128, 128, 64, 4), (8, 128, 256, 64, 4), (4, 64, 128, 64, 3)])
def test_example_configurations_compile_without_spills(example, warps, bm, bn, bk, stages):
    kernel = example("matmul_tma_pipeline").MatmulTmaPipeline(
        num_warps=warps, block_m=bm, block_n=bn, block_k=bk, stages=stages)
    a = _h(64, 64)
    g = _generate(kernel, (4096, 4096, 4096, a, a, a))
    report = rt.compile_report(g["source"], g["name"], "sm_90a", [], None)
    assert report["cubin"][:4] == ELF_MAGIC
    assert report["spill_bytes"] == 0 and "0 bytes stack frame" in report["log"], report["log"]
    assert "wgmma.mma_async" in g["source"] and "serialized" not in report["log"]
    assert len(g["tma_maps"]) == 3  # A, B and C
    assert g["dynamic_smem"] <= 227 * 1024


def test_every_tma_helper_compiles_for_sm90a():
    """tma_load_{1..5}d, tma_load_multicast_{1..5}d, tma_store_{1..5}d and
    tma_prefetch_descriptor through ptxas."""
    calls = []
    for n in range(1, 6):
        coords = ", ".join(f"c + {i}" for i in range(n))
        calls.append(f"    tilus::tma_load_{n}d(&desc, smem, bar, {coords});")
        calls.append(f"    tilus::tma_load_multicast_{n}d(&desc, smem, bar, (unsigned short)3, {coords});")
        calls.append(f"    tilus::tma_store_{n}d(&desc, smem, {coords});")
    source = ('#include "tilus/runtime.cuh"\n'
              'extern "C" __global__ void k(const __grid_constant__ tilus::TmaDescriptor desc, int c) {\n'
              '  __shared__ alignas(1024) unsigned char tile[1024];\n'
              '  __shared__ alignas(8) unsigned long long mbar;\n'
              '  unsigned smem = tilus::smem_u32(tile), bar = tilus::smem_u32(&mbar);\n'
              '  if (threadIdx.x == 0) {\n    tilus::tma_prefetch_descriptor(&desc);\n'
              + "\n".join(calls) + "\n  }\n}\n")
    report = rt.compile_report(source, "k", "sm_90a", [], None)
    assert report["cubin"][:4] == ELF_MAGIC, report["log"]


def test_an_offset_not_provably_16_byte_aligned_is_refused_at_build():
    # n0 + 5 starts boxes 10 bytes into a row: an illegal instruction on sm_90, so the
    # build refuses it with the offset and the alignment the TMA unit needs.
    with pytest.raises(Exception, match=r"must be a multiple of 8 float16 elements \(16 bytes\)"):
        _generate(TmaRoundTrip(16, 16, 0, col_shift=5), _round_trip_args(), "sm_90a", True)
