"""The names Tilus 0.2 programs import from tilus (issue 12, item 1): short dtype names,
the tensor and layout class names, and tilus.utils helpers."""

import pytest
import torch

import tilus
from tilus import GlobalTensor, RegisterTensor, SharedTensor, f32, i32

# Tilus 0.2's short spellings and the types they name (from its documentation).
SHORT = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
         "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
         "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}


@pytest.mark.parametrize("short,name", sorted(SHORT.items()))
def test_short_dtype_names(short, name):
    assert getattr(tilus, short) == getattr(tilus, name)
    assert getattr(tilus, short).name == name
    assert short in tilus.__all__
    namespace = {}
    exec(f"from tilus import {short}", namespace)  # the import a Tilus 0.2 script writes
    assert namespace[short] == getattr(tilus, name)


def test_layout_and_tensor_class_names():
    assert tilus.RegisterLayout is tilus.layout.RegisterLayout
    assert tilus.SharedLayout is tilus.layout.SharedLayout
    assert isinstance(tilus.layout.spatial(4, 8), tilus.RegisterLayout)
    assert not isinstance(3, RegisterTensor) and not isinstance("x", GlobalTensor)


class ScopeChecks(tilus.Script):
    """Adds 1 only when every isinstance check on the three tile kinds holds."""

    def __call__(self, n: i32, a: ~f32, b: ~f32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        g = self.global_view(a, shape=[n], dtype=f32)
        x = self.load_global(g, offsets=[0], shape=[32])
        s = self.shared_tensor(dtype=f32, shape=[32])
        if (isinstance(x, RegisterTensor) and isinstance(s, SharedTensor)
                and isinstance(g, GlobalTensor) and not isinstance(x, SharedTensor)
                and not isinstance(s, RegisterTensor) and not isinstance(g, RegisterTensor)):
            x = x + 1.0
        self.free_shared(s)
        self.store_global(self.global_view(b, shape=[n], dtype=f32), x, offsets=[0])


def test_isinstance_tells_the_tile_kinds_apart_in_a_script():
    a = torch.randn(32)
    b = torch.full((32,), float("nan"))
    ScopeChecks()(32, a, b)
    assert torch.equal(b, a + 1)


def test_utils():
    assert tilus.utils.gcd(12, 18) == 6 and tilus.utils.gcd(7, 0) == 7
    assert tilus.utils.cdiv(10, 4) == 3
    assert tilus.utils.dtype_to_torch(tilus.bf16) is torch.bfloat16
    assert tilus.utils.dtype_to_torch(tilus.u16) is torch.uint16
    assert tilus.utils.dtype_to_torch(tilus.boolean) is torch.bool
    assert callable(tilus.utils.benchmark_func)
