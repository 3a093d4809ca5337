"""A one-warp dot of float16 activations with small-float weights viewed from packed
bytes in the A16Wx example's packing unit (examples/matmul_a16wx.py: one k16 step of
eight n8 mma atoms, each lane's codes in its B fragments' order), its float32 product
times a column scale: the decode kernels' `part * scale`, whose conversion can hand its
rebias to the scale (csrc/codegen/rebias_moves.h). Shared by the source and GPU tests."""

import tilus
from tilus import float16, float32, uint8, void_p
from tilus.layout import local, spatial

from tests.conftest import load_example

VARIANTS = ("moved", "product_read_twice", "float32_scale", "accumulating")


class ScaledDot(tilus.Script):
    """y[16, 64] = (x[16, 16] @ cast(codes[16, 64])) * scale[1, 64] (float32). Variants:
    "moved" is the decode kernels' form; "product_read_twice" also stores the product
    into extra, "float32_scale" reads the scale as float32, "accumulating" adds the
    product to extra's tile inside the dot: each keeps the rebias in the conversion."""

    def __init__(self, w_dtype, variant="moved"):
        super().__init__()
        assert variant in VARIANTS
        ex = load_example("matmul_a16wx")
        self.w_dtype, self.variant = w_dtype, variant
        self.w_layout = ex.unit_layout(w_dtype)
        self.nbytes = ex.unit_bytes(w_dtype)

    def __call__(self, x: void_p, packed: void_p, scale: void_p, y: void_p, extra: void_p):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float16, shape=[16, 16])
        gp = self.global_view(packed, dtype=uint8, shape=[32 * self.nbytes])
        f32_scale = self.variant == "float32_scale"
        gs = self.global_view(scale, dtype=float32 if f32_scale else float16, shape=[1, 64])
        gy = self.global_view(y, dtype=float32, shape=[16, 64])
        ge = self.global_view(extra, dtype=float32, shape=[16, 64])
        a = self.load_global(gx, offsets=[0, 0], shape=[16, 16])
        raw = self.load_global(gp, offsets=[0], layout=spatial(32) * local(self.nbytes))
        w = self.cast(self.view(raw, dtype=self.w_dtype, layout=self.w_layout), dtype=float16)
        if self.variant == "accumulating":
            part = self.dot(a, w, self.load_global(ge, offsets=[0, 0], shape=[16, 64]))
        else:
            part = self.dot(a, w)
        s = self.load_global(gs, offsets=[0, 0], shape=[1, 64])
        self.store_global(gy, part * (s if f32_scale else self.cast(s, dtype=float32)), offsets=[0, 0])
        if self.variant == "product_read_twice":
            self.store_global(ge, part, offsets=[0, 0])


def lane_codes_model(kernel, packed, values):
    """The [16, 64] weight values the kernel views: lane t's codes (unpacked from its
    nbytes bytes) at w_layout's coordinates; `values` maps a code to its value."""
    import numpy as np

    from tests.lang.packed_kernels import unpack

    w = np.zeros((16, 64))
    for lane in range(32):
        codes = unpack(packed[lane * kernel.nbytes:(lane + 1) * kernel.nbytes], kernel.w_dtype.bits, 32)
        for e, code in enumerate(codes):
            w[kernel.w_layout.coords(lane, e)] = values[code]
    return w
