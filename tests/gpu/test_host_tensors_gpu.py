"""tilus.tensor's host tensors on the GPU: the conversions (tilus.host_cast's script as a
CUDA kernel) give the bytes the CPU interpreter gives, for every sub-byte type, and
Tilus 0.2's cast test runs on CUDA tensors as it does on CPU ones."""

import pytest
import torch

import tilus
from tests.lang.lowp_model import FLOATS, INTS, int_range
from tilus.utils import dtype_to_torch

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.mark.parametrize("name", sorted(INTS) + sorted(FLOATS))
def test_conversions_on_the_gpu_match_the_interpreter(name):
    t = getattr(tilus, name)
    if name in INTS:
        lo, hi = int_range(name)
        wide = torch.randint(lo, hi + 1, (3001,), dtype=torch.int32)
    else:
        wide = torch.randn(3001) * 8
    cpu = tilus.from_torch(wide).to(t)
    gpu = tilus.from_torch(wide.cuda()).to(t)
    assert gpu.storage.is_cuda and torch.equal(gpu.storage.cpu(), cpu.storage)
    back = tilus.float32 if name in FLOATS else tilus.int32
    assert torch.equal(gpu.to(back).torch().cpu(), cpu.to(back).torch())


@pytest.mark.parametrize("src", ["int32", "int8", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("dst", ["int32", "int16", "float32", "float16", "bfloat16"])
def test_tilus_02_cast_test_on_cuda(src, dst):
    src_dtype, dst_dtype = getattr(tilus, src), getattr(tilus, dst)
    if src_dtype.is_integer():
        a = tilus.randint(low=-128, high=127, shape=[1024], dtype=src_dtype, device="cuda")
    else:
        a = tilus.rand(shape=[1024], dtype=src_dtype, device="cuda")
    b = tilus.kernels.cast(a, dst_dtype)
    assert b.storage.is_cuda
    torch.testing.assert_close(b.torch(), a.torch().to(dtype_to_torch(dst_dtype)))


class _AddOne(tilus.Script):
    def __call__(self, n: tilus.int32, src: tilus.void_p, dst: ~tilus.float32):
        self.attrs.blocks = (n + 127) // 128
        self.attrs.warps = 4
        g = self.global_view(src, dtype=tilus.float32, shape=[n])
        o = self.global_view(dst, dtype=tilus.float32, shape=[n])
        t = self.load_global(g, offsets=[self.blockIdx.x * 128], shape=[128])
        self.store_global(o, t + 1.0, offsets=[self.blockIdx.x * 128])


def test_integer_addresses_of_cuda_memory_are_pointer_arguments():
    """Tilus 0.2 programs pass tensor.data_ptr(): CUDA memory taken by address (twice, the
    second call past the native launcher, which takes tensors only), its allocation's end
    bounding the views; the address of a CPU tensor that is gone is refused."""
    x = torch.randn(1000, device="cuda")
    y = torch.full((1000,), float("nan"), device="cuda")
    k = _AddOne()
    for _ in range(2):
        k(1000, x.data_ptr(), y.data_ptr())
        torch.cuda.synchronize()
        assert torch.equal(y, x + 1)
    assert tilus._C.runtime.bytes_to_allocation_end(x.data_ptr()) >= 4000
    with pytest.raises(TypeError, match="not the address of CUDA memory"):
        k(1000, torch.ones(1000).data_ptr(), y.data_ptr())
