"""Element-wise conversion of a whole buffer from one tilus type to another, for the host
tensors of tilus.tensor (Tilus 0.2's ``tilus.kernels.cast``): one tilus script, so the
conversion is the language's own ``self.cast`` (the codec of docs/low_precision.md, sub-byte
types packed as in global memory), run by the CPU interpreter on CPU buffers and as a CUDA
kernel on GPU ones."""

from __future__ import annotations

import functools

from tilus.lang.types import DataType, int32, void_p
from tilus.script import Script

BLOCK = 1024  # elements a block converts: 8 a thread over 4 warps


class CastBuffer(Script):
    """dst[i] = cast(src[i]) for i < n, both buffers packed as their types lie in global
    memory (a sub-byte element i at bits [i * bits, (i + 1) * bits))."""

    def __init__(self, src_dtype: DataType, dst_dtype: DataType):
        super().__init__()
        self.src_dtype, self.dst_dtype = src_dtype, dst_dtype

    def __call__(self, n: int32, src: void_p, dst: void_p):
        self.attrs.blocks = [(n + BLOCK - 1) // BLOCK]
        self.attrs.warps = 4
        gs = self.global_view(src, dtype=self.src_dtype, shape=[n])
        gd = self.global_view(dst, dtype=self.dst_dtype, shape=[n])
        offset = self.blockIdx.x * BLOCK
        tile = self.load_global(gs, offsets=[offset], shape=[BLOCK])
        self.store_global(gd, self.cast(tile, dtype=self.dst_dtype), offsets=[offset])


@functools.lru_cache(maxsize=None)
def _kernel(src_dtype: DataType, dst_dtype: DataType) -> CastBuffer:
    return CastBuffer(src_dtype, dst_dtype)


def storage_bytes(dtype: DataType, numel: int) -> int:
    """Bytes of `numel` elements of `dtype` packed as in global memory."""
    return (dtype.bits * numel + 7) // 8


def cast_storage(storage, src_dtype: DataType, dst_dtype: DataType, numel: int, out=None):
    """The `numel` elements of `storage` (a contiguous torch buffer holding `src_dtype`
    values) converted to `dst_dtype`, in `out` (a torch buffer of at least
    storage_bytes(dst_dtype, numel) bytes on the same device) or a new uint8 buffer, zeroed
    first so that the bits past the last sub-byte element are 0."""
    import torch

    if out is None:
        out = torch.zeros(storage_bytes(dst_dtype, numel), dtype=torch.uint8, device=storage.device)
    if numel:
        _kernel(src_dtype, dst_dtype)(numel, storage, out)
    return out
