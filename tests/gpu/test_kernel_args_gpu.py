"""Every scalar parameter type and pointers reach the kernel with their exact values
through both launch paths: the Python path (LoadedKernel.launch, fed by
runtime/launcher.py) and the native one (FastLauncher), which share one typed packer
(csrc/runtime/kernel_args.h)."""

import pytest
import torch

import tilus
from tilus import (bfloat16, boolean, float16, float32, float64, int8, int16, int32, int64,
                   uint8, uint16, uint32, uint64)

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():
    pytest.skip("needs an NVIDIA GPU; run `pytest -m gpu` on the device machine",
                allow_module_level=True)

TYPES = [int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32,
         float64, boolean]


class EchoScalars(tilus.Script):
    """out[i] = scalar i as float64, for each of the 13 scalar parameters."""

    def __call__(self, out_ptr: ~float64, a: int8, b: int16, c: int32, d: int64, e: uint8,
                 f: uint16, g: uint32, h: uint64, i: float16, j: bfloat16, k: float32,
                 m: float64, p: boolean):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        out = self.global_view(out_ptr, dtype=float64, shape=[13])
        self.store_global(out, self.register_tensor(dtype=float64, shape=[1], init=a),
                          offsets=[0])
        self.store_global(out, self.register_tensor(dtype=float64, shape=[1], init=b),
                          offsets=[1])
        self.store_global(out, self.register_tensor(dtype=float64, shape=[1], init=c),
                          offsets=[2])
        self.store_global(out, self.register_tensor(dtype=float64, shape=[1], init=d),
                          offsets=[3])
        self.store_global(out, self.register_tensor(dtype=float64, shape=[1], init=e),
                          offsets=[4])
        self.store_global(out, self.register_tensor(dtype=float64, shape=[1], init=f),
                          offsets=[5])
        self.store_global(out, self.register_tensor(dtype=float64, shape=[1], init=g),
                          offsets=[6])
        self.store_global(out, self.register_tensor(dtype=float64, shape=[1], init=h),
                          offsets=[7])
        self.store_global(out, self.register_tensor(dtype=float64, shape=[1], init=i),
                          offsets=[8])
        self.store_global(out, self.register_tensor(dtype=float64, shape=[1], init=j),
                          offsets=[9])
        self.store_global(out, self.register_tensor(dtype=float64, shape=[1], init=k),
                          offsets=[10])
        self.store_global(out, self.register_tensor(dtype=float64, shape=[1], init=m),
                          offsets=[11])
        self.store_global(out, self.register_tensor(dtype=float64, shape=[1], init=p),
                          offsets=[12])


# Extremes of each integer type (that float64 holds exactly), values 16-bit floats hold
# exactly, and ones they must round (to nearest even, as tilus.arguments checks them).
VALUES = [(-128, -32768, -2**31, -2**53, 255, 65535, 2**32 - 1, 2**53, 65504.0, -3.0e38,
           3.4028234663852886e38, 1e300, True),
          (127, 32767, 2**31 - 1, 2**53 - 1, 0, 0, 0, 0, -0.333, 1.00390625, -1.5, -2.5e-310,
           False)]


def _expected(values):
    out = []
    for t, v in zip(TYPES, values):
        if t is float16:
            v = torch.tensor(v, dtype=torch.float16).item()
        elif t is bfloat16:
            v = torch.tensor(v, dtype=torch.float32).to(torch.bfloat16).item()
        elif t is float32:
            v = torch.tensor(v, dtype=torch.float32).item()
        out.append(float(v))
    return torch.tensor(out, dtype=torch.float64)


@pytest.mark.parametrize("values", VALUES)
def test_every_scalar_kind_and_a_pointer_through_both_launch_paths(values):
    kernel = EchoScalars()
    first = torch.full((13,), -7.0, dtype=torch.float64, device="cuda")
    kernel(first, *values)  # the Python path; registers the native launcher
    launcher = next(iter(kernel._tilus_fast.values()))
    assert launcher is not None  # 16-bit float scalars no longer force the Python path
    second = torch.full((13,), -7.0, dtype=torch.float64, device="cuda")
    assert launcher(second, *values)  # the native path accepted and launched it
    torch.cuda.synchronize()
    expected = _expected(values)
    assert torch.equal(first.cpu(), expected), (first.cpu(), expected)
    assert torch.equal(second.cpu(), expected), (second.cpu(), expected)


def test_a_value_a_kind_cannot_hold_is_refused_by_the_packer():
    # LoadedKernel.launch packs through runtime/kernel_args.h and names the argument.
    kernel = EchoScalars()
    out = torch.zeros(13, dtype=torch.float64, device="cuda")
    kernel(out, *VALUES[0])
    gpu = kernel.compile(out, *VALUES[0]).gpu
    variant = gpu.variant(True)
    args = [("ptr", out.data_ptr())] + [(k, 0) for k in gpu.kinds[1:]]
    args[3] = ("i32", 2**31)
    with pytest.raises(ValueError, match=r"kernel argument 3 = 2147483648 does not fit in i32"):
        variant.kernel.launch(1, 32, 0, 0, args)
    args[3] = ("i32", 1)
    args[9] = ("f16", 1e6)
    with pytest.raises(ValueError, match=r"kernel argument 9 = 1000000.0 does not fit in f16"):
        variant.kernel.launch(1, 32, 0, 0, args)
    with pytest.raises(ValueError, match=r"unknown kernel parameter kind 'half'.*opaque"):
        variant.kernel.launch(1, 32, 0, 0, [("half", 1)])
