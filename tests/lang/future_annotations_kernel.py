"""A kernel defined under `from __future__ import annotations` (annotations are strings)."""

from __future__ import annotations

import tilus
from tilus import float32, int32
from tilus.utils import cdiv


class Scale(tilus.Script):
    def __call__(self, n: int32, factor: float, x_ptr: ~float32):
        self.attrs.blocks = cdiv(n, 32)
        self.attrs.warps = 1
        g = self.global_view(x_ptr, dtype=float32, shape=[n])
        x = self.load_global(g, offsets=[self.blockIdx.x * 32], shape=[32])
        self.store_global(g, x * factor, offsets=[self.blockIdx.x * 32])
