"""Ready-made kernels over host tensors (Tilus 0.2's ``tilus.kernels``)."""

from __future__ import annotations

from typing import Optional

from tilus.host_cast import cast_storage
from tilus.lang.types import DataType
from tilus.tensor import Tensor, empty

__all__ = ["cast"]


def cast(tensor: Tensor, dtype: DataType, *, out: Optional[Tensor] = None) -> Tensor:
    """Every element of `tensor` converted to `dtype` (into `out` when given: same shape,
    type `dtype`, same device)."""
    if out is None:
        out = empty(tensor.shape, dtype, device=tensor.device)
    elif out.dtype != dtype or out.shape != tensor.shape:
        raise ValueError(f"cast: out is {out.dtype.name}{out.shape}, expected {dtype.name}{tensor.shape}")
    import torch

    cast_storage(tensor.storage.view(-1), tensor.dtype, dtype, tensor.numel(),
                 out=out.storage.view(torch.uint8).view(-1))
    return out
