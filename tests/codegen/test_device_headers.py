"""The CUDA device helpers (csrc/codegen/device/*.cuh) compile under NVRTC.

Every helper is used by a small kernel that includes "tilus/runtime.cuh", compiled
for sm_80 and sm_90a with the headers handed to NVRTC in memory under the names
the binary embeds them with ("tilus/<file>.cuh"). Needs NVRTC, not a GPU, and does
not import tilus (the extension need not be built): NVRTC is loaded with ctypes.
"""

from __future__ import annotations

import itertools

import pytest

from .nvrtc_ctypes import DEVICE_DIR, ELF_MAGIC, Nvrtc, device_headers, load_nvrtc

ARCHS = ["sm_80", "sm_90a"]


@pytest.fixture(scope="module")
def nvrtc() -> Nvrtc:
    compiler, why = load_nvrtc()
    if compiler is None:
        pytest.skip(why)
    return compiler


def compile_ok(nvrtc: Nvrtc, source: str, arch: str, options: list[str] | None = None):
    ok, log, cubin, ptx = nvrtc.compile(source, arch, device_headers(), options)
    assert ok, f"NVRTC ({nvrtc.path}) failed for {arch}:\n{log}"
    assert cubin[:4] == ELF_MAGIC
    return ptx


# ---- the headers themselves --------------------------------------------------------

EXPECTED = ["types", "convert", "arith", "math", "memory", "ldmatrix", "cp_async", "mma", "wgmma", "tma",
            "semaphore", "atomic", "random", "lowp_codec", "lowp", "packed", "lowp_vec", "runtime", "bounds", "hang"]


def test_every_header_is_present():
    assert sorted(p.stem for p in DEVICE_DIR.glob("*.cuh")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", EXPECTED)
def test_header_embeds_cleanly(name):
    """cmake/embed_headers.cmake wraps each file in R"tilus_embed(...)tilus_embed"."""
    text = (DEVICE_DIR / f"{name}.cuh").read_text()
    assert text.isascii()
    assert ")tilus_embed" not in text
    assert "#include <" not in text, "NVRTC gets no system headers"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", EXPECTED)
def test_header_stands_alone(nvrtc, name, arch):
    """Each header includes what it needs and survives being included twice."""
    source = f'#include "tilus/{name}.cuh"\n#include "tilus/{name}.cuh"\n' \
             'extern "C" __global__ void k(int* p) { p[0] = 1; }\n'
    compile_ok(nvrtc, source, arch)


@pytest.mark.parametrize("options", [["--std=c++17"], ["--std=c++20", "-default-device"]])
def test_other_compile_options(nvrtc, options):
    """Without -default-device (everything is marked __device__) and under C++20."""
    compile_ok(nvrtc, KERNELS["convert"][0] + KERNELS["mma"][0].replace(PRELUDE, ""), "sm_80",
               options)


def test_headers_add_no_globals_to_the_module(nvrtc):
    """-default-device turns namespace-scope variables into __device__ globals; there are none."""
    ptx = compile_ok(nvrtc, '#include "tilus/runtime.cuh"\n'
                            'extern "C" __global__ void k(int* p) { p[0] = 1; }\n', "sm_80")
    assert ".global ." not in ptx


def test_too_old_arch_is_a_clear_error(nvrtc):
    ok, log, _, _ = nvrtc.compile('#include "tilus/runtime.cuh"\n', "sm_75", device_headers())
    assert not ok and "need sm_80" in log


# ---- one kernel per header, using every function -------------------------------------

SCALARS = ["bool", "tilus::int8_t", "tilus::int16_t", "tilus::int32_t", "tilus::int64_t",
           "tilus::uint8_t", "tilus::uint16_t", "tilus::uint32_t", "tilus::uint64_t",
           "tilus::half", "tilus::bfloat16", "float", "double"]

# Reads and writes values of any scalar type through byte buffers, so that every
# instantiation has observable effects and cannot be optimized away.
PRELUDE = r"""
#include "tilus/runtime.cuh"
template <typename T> __device__ T get(const unsigned char* p) {
  T v; memcpy(&v, p, sizeof(T)); return v;
}
template <typename T> __device__ void put(unsigned char* p, T v) { memcpy(p, &v, sizeof(T)); }
"""

TYPES_KERNEL = PRELUDE + r"""
static_assert(sizeof(tilus::int8_t) == 1 && sizeof(tilus::uint8_t) == 1, "");
static_assert(sizeof(tilus::int16_t) == 2 && sizeof(tilus::uint16_t) == 2, "");
static_assert(sizeof(tilus::int32_t) == 4 && sizeof(tilus::uint32_t) == 4, "");
static_assert(sizeof(tilus::int64_t) == 8 && sizeof(tilus::uint64_t) == 8, "");
static_assert(sizeof(tilus::half) == 2 && alignof(tilus::bfloat16) == 2, "");
extern "C" __global__ void types_kernel(tilus::half* out, tilus::bfloat16* out2) {
  __shared__ tilus::half tile[64];
  tile[threadIdx.x] = tilus::half{0x3c00};  // 1.0
  __syncthreads();
  out[threadIdx.x] = tile[63 - threadIdx.x];
  out2[threadIdx.x] = tilus::bfloat16{0x3f80};
}
"""


def convert_kernel() -> str:
    lines = [PRELUDE, 'extern "C" __global__ void convert_kernel(const unsigned char* in, '
                      'unsigned char* out) {']
    for i, (to, frm) in enumerate(itertools.product(SCALARS, SCALARS)):
        lines.append(f"  put<{to}>(out + {8 * i}, tilus::cast<{to}>(get<{frm}>(in + {8 * i})));")
    lines.append(r"""
  float f = get<float>(in);
  tilus::half h = tilus::to_half(f);
  tilus::bfloat16 b = tilus::to_bfloat16(f);
  put<float>(out + 4000, tilus::to_float(h) + tilus::to_float(b));
  tilus::uint32_t p[4] = {tilus::pack_half2(h, h), tilus::pack_half2(f, 2.0f * f),
                          tilus::pack_bfloat162(b, b), tilus::pack_bfloat162(f, 2.0f * f)};
  put<tilus::half>(out + 4100, tilus::half2_lo(p[0]));
  put<tilus::half>(out + 4102, tilus::half2_hi(p[1]));
  put<tilus::bfloat16>(out + 4104, tilus::bfloat162_lo(p[2]));
  put<tilus::bfloat16>(out + 4106, tilus::bfloat162_hi(p[3]));
  put<tilus::half>(out + 4108, tilus::cast<tilus::half>(3));  // an int literal
}""")
    return "\n".join(lines)


def arith_kernel() -> str:
    lines = [PRELUDE, 'extern "C" __global__ void arith_kernel(const unsigned char* in, '
                      'unsigned char* out) {']
    binary = ["add", "sub", "mul", "div", "mod", "min_", "max_"]
    compare = ["lt", "le", "gt", "ge", "eq", "ne", "and_", "or_"]
    offset = 0
    for t in SCALARS:
        lines.append(f"  {{ {t} a = get<{t}>(in + {offset}), b = get<{t}>(in + {offset + 8});")
        for op in binary:
            if t == "bool" and op in ("div", "mod"):
                continue  # bool / bool is an integer division by zero or one; not emitted
            offset += 16
            lines.append(f"    put<{t}>(out + {offset}, tilus::{op}(a, b));")
        offset += 16
        lines.append(f"    put<{t}>(out + {offset}, tilus::neg(a));")
        for op in compare:
            offset += 16
            lines.append(f"    put<bool>(out + {offset}, tilus::{op}(a, b));")
        offset += 16
        lines.append(f"    put<bool>(out + {offset}, tilus::not_(a));")
        lines.append(f"    put<{t}>(out + {offset + 8}, tilus::add<{t}>(a, b)); }}")  # explicit T
        offset += 16
    lines.append("}")
    return "\n".join(lines)


MEMORY_KERNEL = PRELUDE + r"""
template <int Bytes> __device__ void round_trip(unsigned char* g, unsigned char* s, int i) {
  alignas(16) unsigned char r[16];
  tilus::load_global_vec<Bytes>(r, g + Bytes * i);
  tilus::store_shared_vec<Bytes>(s + Bytes * i, r);
  __syncthreads();
  tilus::load_shared_vec<Bytes>(r, s + Bytes * (31 - i));
  r[0] += 1;
  tilus::store_global_vec<Bytes>(g + Bytes * i, r);
  tilus::load_global_cg<Bytes>(r, g + 1024 + Bytes * i);
  tilus::store_global_vec<Bytes>(g + 2048 + Bytes * i, r);
}
extern "C" __global__ void memory_kernel(unsigned char* g, tilus::half* h) {
  __shared__ alignas(16) unsigned char s[16 * 32];
  int i = threadIdx.x;
  round_trip<1>(g, s, i);
  round_trip<2>(g, s, i);
  round_trip<4>(g, s, i);
  round_trip<8>(g, s, i);
  round_trip<16>(g, s, i);
  tilus::half x[8];  // a register tile of half: no alignment needed
  tilus::load_global_vec<16>(x, h + 8 * i);
  for (int j = 0; j < 8; ++j) x[j] = tilus::add(x[j], x[j]);
  tilus::store_global_vec<16>(h + 8 * i, x);
  put<tilus::uint32_t>(g + 4096, tilus::smem_u32(s + i));
  // runs at runtime misalignments, cut at runtime bounds: the word selection stays in registers
  put<uint4>(g + 8192 + 16 * i, tilus::load_realigned_16<false>(g + 3 + 16 * i, i % 17, 16));
  put<uint4>(g + 8704 + 16 * i, tilus::load_realigned_16<true>(h + i, 0, i % 17));
}
"""

LDMATRIX_KERNEL = PRELUDE + r"""
extern "C" __global__ void ldmatrix_kernel(const tilus::half* in, tilus::uint32_t* out) {
  __shared__ alignas(16) tilus::half s[32 * 8];
  int lane = threadIdx.x;
  for (int j = 0; j < 8; ++j) s[lane * 8 + j] = in[lane * 8 + j];
  __syncthreads();
  tilus::uint32_t addr = tilus::smem_u32(&s[lane * 8]);
  tilus::uint32_t r[24];
  tilus::ldmatrix_x1(r + 0, addr);
  tilus::ldmatrix_x2(r + 1, addr);
  tilus::ldmatrix_x4(r + 3, addr);
  tilus::ldmatrix_x1_trans(r + 7, addr);
  tilus::ldmatrix_x2_trans(r + 8, addr);
  tilus::ldmatrix_x4_trans(r + 10, addr);
  for (int j = 0; j < 14; ++j) out[lane * 14 + j] = r[j];
}
"""

CP_ASYNC_KERNEL = PRELUDE + r"""
extern "C" __global__ void cp_async_kernel(const float* g, float* out, int n, int pending) {
  __shared__ alignas(16) float s[3][32 * 4];
  int i = threadIdx.x;
  // Out-of-range chunks read 0 bytes from the tensor base and are zero-filled.
  int left = (n - 4 * i) * 4;
  int bytes = left < 0 ? 0 : (left > 16 ? 16 : left);
  tilus::cp_async_16(tilus::smem_u32(&s[0][4 * i]), bytes > 0 ? g + 4 * i : g, bytes);
  tilus::cp_async_commit_group();
  tilus::cp_async_8(tilus::smem_u32(&s[1][2 * i]), g + 2 * i, 8);
  tilus::cp_async_commit_group();
  tilus::cp_async_4(tilus::smem_u32(&s[2][i]), g + i, i < n ? 4 : 0);
  tilus::cp_async_commit_group();
  tilus::cp_async_wait_group<2>();
  tilus::cp_async_wait_group<1>();
  tilus::cp_async_wait_group(pending);
  tilus::cp_async_wait_group<0>();
  tilus::cp_async_wait_all();
  __syncthreads();
  out[i] = s[0][4 * i] + s[1][2 * i] + s[2][i] + s[0][127 - i];
}
"""

MMA_KERNEL = PRELUDE + r"""
extern "C" __global__ void mma_kernel(const tilus::uint32_t* a, const tilus::uint32_t* b,
                                      float* df, tilus::uint32_t* dh, tilus::int32_t* di) {
  int lane = threadIdx.x;
  tilus::uint32_t ra[4], rb[2];
  for (int j = 0; j < 4; ++j) ra[j] = a[lane * 4 + j];
  for (int j = 0; j < 2; ++j) rb[j] = b[lane * 2 + j];
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  tilus::mma_m16n8k16_f16_f32(acc, ra, rb, acc);  // d aliases c
  tilus::mma_m16n8k16_bf16_f32(acc, ra, rb, acc);
  tilus::uint32_t hacc[2] = {0u, 0u};
  tilus::mma_m16n8k16_f16_f16(hacc, ra, rb, hacc);
  tilus::int32_t iacc[4] = {0, 0, 0, 0}, iout[4];
  tilus::mma_m16n8k32_s8_s32(iacc, ra, rb, iacc);
  tilus::mma_m16n8k32_u8_s32(iout, ra, rb, iacc);
  for (int j = 0; j < 4; ++j) df[lane * 4 + j] = acc[j];
  for (int j = 0; j < 2; ++j) dh[lane * 2 + j] = hacc[j];
  for (int j = 0; j < 4; ++j) di[lane * 4 + j] = iout[j];
}
"""

SEMAPHORE_KERNEL = PRELUDE + r"""
extern "C" __global__ void semaphore_kernel(float* partial, tilus::int32_t* sem) {
  int z = blockIdx.z;
  if (z > 0) tilus::lock_semaphore(sem + blockIdx.x, z);
  float v[4];
  tilus::load_global_cg<16>(v, partial + 4 * threadIdx.x);
  for (int j = 0; j < 4; ++j) v[j] += 1.0f;
  tilus::store_global_vec<16>(partial + 4 * threadIdx.x, v);
  tilus::release_semaphore(sem + blockIdx.x, z + 1);
}
"""

KERNELS = {
    "types": (TYPES_KERNEL, []),
    "convert": (convert_kernel(), ["cvt.rn.f16.f32", "cvt.rn.bf16.f32", "cvt.f32.f16",
                                   "cvt.rn.f16x2.f32", "cvt.rn.bf16x2.f32", "cvt.rzi.sat.s32.f32",
                                   "cvt.rz.f32.f64", "cvt.rn.f16.f64", "cvt.rn.f16.s64"]),
    "arith": (arith_kernel(), []),
    "memory": (MEMORY_KERNEL, ["ld.global.v4.b32", "ld.global.cg.v4.b32", "st.shared.v4.b32",
                               "ld.shared.v2.b32", "st.global.b16", "ld.global.u8", "shf.r.wrap.b32"]),
    "ldmatrix": (LDMATRIX_KERNEL, ["ldmatrix.sync.aligned.m8n8.x1.shared.b16",
                                   "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"]),
    "cp_async": (CP_ASYNC_KERNEL, ["cp.async.cg.shared.global", "cp.async.ca.shared.global",
                                   "cp.async.commit_group", "cp.async.wait_group 2",
                                   "cp.async.wait_all"]),
    "mma": (MMA_KERNEL, ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                         "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
                         "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                         "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
                         "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32"]),
    "semaphore": (SEMAPHORE_KERNEL, ["ld.acquire.gpu.global.b32", "st.release.gpu.global.b32",
                                     "nanosleep", "bar.sync"]),
}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", list(KERNELS))
def test_kernel_using_every_helper_compiles(nvrtc, name, arch):
    source, instructions = KERNELS[name]
    ptx = compile_ok(nvrtc, source, arch)
    for instruction in instructions:
        assert instruction in ptx, f"{instruction} missing from the PTX of {name}"


@pytest.mark.parametrize("name", ["memory", "ldmatrix", "mma", "convert"])
def test_register_tiles_stay_in_registers(nvrtc, name):
    """The memcpy/uint32_t views of register tiles must not force a local-memory stack."""
    ptx = compile_ok(nvrtc, KERNELS[name][0], "sm_80")
    assert ".local" not in ptx
