"""Loading and launching cubins through tilus._C.runtime on a real GPU."""

from __future__ import annotations

import struct
import threading

import pytest

from tilus._C import runtime

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or not runtime.cuda_available():
    pytest.skip("needs an NVIDIA GPU", allow_module_level=True)

AXPB = r"""
extern "C" __global__ void axpb(float* out, const float* x, float a, int n, long long offset,
                                double b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + (float)b + (float)offset;
}
"""

# Reverses each block's chunk through dynamic shared memory of `smem` bytes; only the
# first blockDim.x floats are used, the rest just make the launch need opt-in.
REVERSE = r"""
extern "C" __global__ void reverse_blocks(float* data) {
  extern __shared__ float buffer[];
  int base = blockIdx.x * blockDim.x;
  buffer[threadIdx.x] = data[base + threadIdx.x];
  __syncthreads();
  data[base + threadIdx.x] = buffer[blockDim.x - 1 - threadIdx.x];
}
"""

STATIC_SMEM = r"""
extern "C" __global__ void uses_static(float* out) {
  __shared__ float tile[1024];
  tile[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = tile[1023 - threadIdx.x];
}
"""

COPY_BYTES = r"""
extern "C" __global__ void copy_bytes(unsigned char* out, const unsigned char* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
"""


def _load(source, name):
    arch = runtime.arch_string()
    cubin = runtime.compile_cache().get_or_compile(source, name + ".cu", arch)
    return runtime.LoadedKernel(cubin, name)


def _stream():
    return torch.cuda.current_stream().cuda_stream


@pytest.fixture(scope="module")
def axpb():
    torch.cuda.init()
    return _load(AXPB, "axpb")


def _expected(x, a, offset, b):
    return a * x + float(b) + float(offset)


def test_device_info_matches_torch():
    info = runtime.current_device_info()
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    assert info["name"] == props.name
    assert (info["cc_major"], info["cc_minor"]) == (props.major, props.minor)
    assert info["sm_count"] == props.multi_processor_count
    assert info["smem_per_block_optin"] >= info["smem_per_block"] >= 48 * 1024
    assert info["max_threads_per_block"] == 1024
    assert info["arch"] == runtime.arch_string()
    assert runtime.arch_string() == runtime.arch_string((props.major, props.minor))
    assert runtime.driver_version() >= 12000


def test_attributes(axpb):
    assert axpb.name == "axpb"
    assert axpb.num_regs > 0
    assert axpb.max_threads >= 256
    assert axpb.static_smem == 0
    assert axpb.local_bytes >= 0


def test_launch_with_typed_args(axpb):
    n = 1000
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    axpb.launch((8, 1, 1), 128, 0, _stream(),
                [("ptr", out.data_ptr()), ("ptr", x), ("f32", 2.0), ("i32", n), ("i64", 3),
                 ("f64", 0.5)])
    torch.cuda.synchronize()
    torch.testing.assert_close(out, _expected(x, 2.0, 3, 0.5))


def test_launch_packed_slots_and_sizes(axpb):
    n = 1000
    x = torch.randn(n, device="cuda")
    out = torch.full_like(x, -1.0)
    slots = struct.pack("<QQf4xi4xqd", out.data_ptr(), x.data_ptr(), 1.5, n, -2, 0.25)
    axpb.launch_packed(8, 128, 0, _stream(), slots)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, _expected(x, 1.5, -2, 0.25))

    out.fill_(-1.0)
    packed = struct.pack("<QQfiqd", out.data_ptr(), x.data_ptr(), 3.0, n, 7, 1.0)
    axpb.launch_packed((8,), 128, 0, _stream(), packed, [8, 8, 4, 4, 8, 8])
    torch.cuda.synchronize()
    torch.testing.assert_close(out, _expected(x, 3.0, 7, 1.0))


def test_zero_grid_launches_nothing(axpb):
    out = torch.full((128,), -1.0, device="cuda")
    x = torch.ones(128, device="cuda")
    args = [("ptr", out.data_ptr()), ("ptr", x.data_ptr()), ("f32", 1.0), ("i32", 128),
            ("i64", 0), ("f64", 0.0)]
    axpb.launch((0, 1, 1), 128, 0, _stream(), args)
    axpb.launch((1, 0, 1), 128, 0, _stream(), args)
    torch.cuda.synchronize()
    assert bool((out == -1.0).all())


def test_limits_are_checked_before_launch(axpb):
    info = runtime.current_device_info()
    args = [("ptr", 0), ("ptr", 0), ("f32", 0.0), ("i32", 0), ("i64", 0), ("f64", 0.0)]
    refused = runtime.LaunchRefusedError  # a RuntimeError the script layer reports at `def __call__`
    assert issubclass(refused, RuntimeError)
    with pytest.raises(refused, match="threads per block"):
        axpb.launch(1, axpb.max_threads + 1, 0, _stream(), args)
    with pytest.raises(refused, match=r"shared memory.*at most %d" % info["smem_per_block_optin"]):
        axpb.launch(1, 128, info["smem_per_block_optin"] + 1, _stream(), args)
    with pytest.raises(refused, match="grid exceeds"):
        axpb.launch((1, 65536, 1), 128, 0, _stream(), args)
    with pytest.raises(refused, match="grid exceeds"):
        axpb.launch((2**31, 1, 1), 128, 0, _stream(), args)
    with pytest.raises(ValueError):
        axpb.launch(1, 128, 0, _stream(), [("bogus", 1)])


def test_large_dynamic_shared_memory():
    kernel = _load(REVERSE, "reverse_blocks")
    info = runtime.current_device_info()
    smem = min(100 * 1024, info["smem_per_block_optin"])
    assert smem > 48 * 1024
    data = torch.arange(4 * 256, dtype=torch.float32, device="cuda")
    expected = data.view(4, 256).flip(1).reshape(-1)
    kernel.launch(4, 256, smem, _stream(), [("ptr", data)])
    torch.cuda.synchronize()
    torch.testing.assert_close(data, expected)


def test_static_shared_memory_is_reported():
    kernel = _load(STATIC_SMEM, "uses_static")
    assert kernel.static_smem == 4096
    out = torch.empty(1024, device="cuda")
    kernel.launch(1, 1024, 0, _stream(), [("ptr", out)])
    torch.cuda.synchronize()
    torch.testing.assert_close(out, torch.arange(1023, -1, -1, dtype=torch.float32, device="cuda"))


def test_launch_on_side_stream_and_other_thread(axpb):
    n = 256
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    stream = torch.cuda.Stream()
    # x is written on the current stream: the side stream must not read it before then
    stream.wait_stream(torch.cuda.current_stream())
    args = [("ptr", out), ("ptr", x), ("f32", 2.0), ("i32", n), ("i64", 1), ("f64", 0.0)]
    axpb.launch(2, 128, 0, stream.cuda_stream, args)
    stream.synchronize()
    torch.testing.assert_close(out, _expected(x, 2.0, 1, 0.0))

    # A new thread has no current driver context until tilus makes one current.
    out.zero_()
    errors = []

    def worker():
        try:
            axpb.launch(2, 128, 0, 0, args)
            runtime.synchronize(0)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert not errors
    torch.testing.assert_close(out, _expected(x, 2.0, 1, 0.0))


def test_workspace_reuse_and_zeroing():
    copy = _load(COPY_BYTES, "copy_bytes")
    stream = _stream()
    clean = runtime.get_workspace("test_launch.clean", 4096, True, stream)
    assert clean != 0
    assert runtime.get_workspace("test_launch.clean", 4096, True, stream) == clean
    assert runtime.get_workspace("test_launch.clean", 8192, True, stream) != clean
    assert runtime.get_workspace("test_launch.scratch", 4096, False, stream) != clean
    assert runtime.get_workspace("test_launch.zero", 0, True, stream) == 0
    assert runtime.pointer_device(clean) == torch.cuda.current_device()
    out = torch.full((4096,), 255, dtype=torch.uint8, device="cuda")
    copy.launch(16, 256, 0, stream, [("ptr", out), ("ptr", clean), ("i32", 4096)])
    torch.cuda.synchronize()
    assert bool((out == 0).all())
    assert runtime.workspace_bytes() >= 4096 + 8192 + 4096


def test_wrong_arch_and_missing_function_are_clear_errors():
    info = runtime.current_device_info()
    other_arch = "sm_80" if info["cc_major"] >= 9 else "sm_90a"
    cubin = runtime.compile_to_cubin(AXPB, "axpb.cu", other_arch)
    with pytest.raises(RuntimeError, match="another architecture"):
        runtime.LoadedKernel(cubin, "axpb")
    good = runtime.compile_to_cubin(AXPB, "axpb.cu", runtime.arch_string())
    with pytest.raises(RuntimeError, match="'no_such_kernel' not found"):
        runtime.LoadedKernel(good, "no_such_kernel")
