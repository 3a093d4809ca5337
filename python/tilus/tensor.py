"""Host tensors of any tilus type, Tilus 0.2's ``tilus.tensor``: a dtype, a shape and a torch
buffer (``storage``) holding the elements packed as global memory holds them, so that types
torch has no name for (``int3b``, ``float6_e3m2``, ...) can be created, converted, passed to
kernels and read back::

    w = tilus.randint(-4, 4, shape=[128, 64], dtype=tilus.int3b)   # 3 bytes per 8 elements
    kernel(..., w.storage, ...)                                     # a void_p parameter
    w.to(tilus.float32).torch()                                     # the values, in torch

Conversions (``to``, the random and constant constructors) run tilus.host_cast's script: the
language's own casts, by the CPU interpreter for CPU buffers and on the GPU for CUDA ones.
New tensors go to the GPU when there is one, else to the CPU (Tilus 0.2 always uses the
GPU); ``device=`` chooses.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Union

from tilus.host_cast import cast_storage, storage_bytes
from tilus.lang.types import DataType, float32, from_foreign, int32
from tilus.utils import dtype_to_torch

__all__ = ["Tensor", "from_torch", "view_torch", "empty", "rand", "randn", "randint", "ones", "zeros",
           "full", "view"]


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _default_device(device):
    if device is not None:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class Tensor:
    """`dtype` elements of shape `shape` in `storage` (a contiguous torch tensor of
    storage_bytes(dtype, numel) bytes, of any torch dtype)."""

    def __init__(self, dtype: DataType, shape: Sequence[int], storage):
        if storage.numel() * storage.element_size() != storage_bytes(dtype, _numel(shape)):
            raise ValueError(f"tilus.Tensor: {_numel(shape)} elements of {dtype.name} take "
                             f"{storage_bytes(dtype, _numel(shape))} bytes, the storage has "
                             f"{storage.numel() * storage.element_size()}")
        if not storage.is_contiguous():
            raise ValueError("tilus.Tensor: the storage must be contiguous")
        self.dtype: DataType = dtype
        self.shape: List[int] = [int(s) for s in shape]
        self.storage = storage

    @property
    def device(self):
        return self.storage.device

    def numel(self) -> int:
        return _numel(self.shape)

    def data_ptr(self) -> int:
        return self.storage.data_ptr()

    def __str__(self) -> str:
        wide = float32 if self.dtype.is_float else int32
        return f"{self.dtype.name}{self.shape}:\n{self.to(wide).torch()}"

    __repr__ = __str__

    def torch(self):
        """The elements as a torch tensor of the same type, sharing the storage; a ValueError
        for the types torch has no counterpart of (convert first: ``t.to(tilus.float32)``)."""
        return self.storage.view(dtype_to_torch(self.dtype)).reshape(self.shape)

    def to(self, dtype: DataType) -> "Tensor":
        """The elements converted to `dtype` (a new tensor on the same device)."""
        out = cast_storage(self.storage.view(-1), self.dtype, dtype, self.numel())
        return Tensor(dtype, self.shape, out)

    def view(self, *, dtype: Optional[DataType] = None, shape: Optional[Sequence[int]] = None) -> "Tensor":
        return view(self, dtype, shape)

    def clone(self) -> "Tensor":
        return Tensor(self.dtype, self.shape, self.storage.clone())

    def __setitem__(self, key, value):
        """``t[i, a:b] = value`` (a number, a tilus.Tensor or a torch tensor): the elements
        go through float32 (floats) or int32 (integers), where every tilus value is exact,
        and back."""
        import torch

        wide = float32 if self.dtype.is_float else int32
        values = self.to(wide).torch().clone()
        if isinstance(value, Tensor):
            value = value.to(wide).torch()
        values[key] = value
        cast_storage(values.reshape(-1), wide, self.dtype, self.numel(), out=self.storage.view(torch.uint8).view(-1))


def from_torch(torch_tensor) -> Tensor:
    """A torch tensor as a tilus tensor of the same type, sharing its memory (a copy when it
    is not contiguous)."""
    dtype = from_foreign(torch_tensor.dtype)
    if dtype is None:
        raise ValueError(f"from_torch: tilus has no type for {torch_tensor.dtype}")
    return Tensor(dtype, list(torch_tensor.shape), torch_tensor.contiguous())


def view_torch(torch_tensor, *, dtype: DataType, shape: Sequence[int]) -> Tensor:
    """The bytes of a contiguous torch tensor read as `shape` elements of `dtype` (packed:
    `shape` must need exactly its bytes)."""
    return Tensor(dtype, shape, torch_tensor)


def empty(shape: Sequence[int], dtype: DataType, device=None) -> Tensor:
    """An uninitialised tensor (its bytes are whatever the allocation held)."""
    import torch

    nbytes = storage_bytes(dtype, _numel(shape))
    return Tensor(dtype, shape, torch.empty(nbytes, dtype=torch.uint8, device=_default_device(device)))


def _converted(values, dtype: DataType) -> Tensor:
    return from_torch(values).to(dtype)


def rand(shape: Sequence[int], dtype: DataType, device=None) -> Tensor:
    """Uniform in [0, 1), drawn in float32 and converted to `dtype`."""
    import torch

    return _converted(torch.rand(list(shape), dtype=torch.float32, device=_default_device(device)), dtype)


def randn(shape: Sequence[int], dtype: DataType, device=None) -> Tensor:
    """Standard normal, drawn in float32 and converted to `dtype`."""
    import torch

    return _converted(torch.randn(list(shape), dtype=torch.float32, device=_default_device(device)), dtype)


def randint(low: int, high: int, shape: Sequence[int], dtype: DataType, device=None) -> Tensor:
    """Integers uniform in [low, high), drawn in int32 and converted to `dtype`."""
    import torch

    return _converted(torch.randint(low, high, list(shape), dtype=torch.int32, device=_default_device(device)),
                      dtype)


def full(shape: Sequence[int], fill_value: Union[int, float], dtype: DataType, device=None) -> Tensor:
    """Every element `fill_value` converted to `dtype` (through float32)."""
    import torch

    return _converted(torch.full(list(shape), fill_value, dtype=torch.float32, device=_default_device(device)),
                      dtype)


def ones(shape: Sequence[int], dtype: DataType, device=None) -> Tensor:
    """Every element 1."""
    return full(shape, 1.0, dtype, device)


def zeros(shape: Sequence[int], dtype: DataType, device=None) -> Tensor:
    """Every element 0."""
    return full(shape, 0.0, dtype, device)


def view(tensor: Tensor, dtype: Optional[DataType] = None, shape: Optional[Sequence[int]] = None) -> Tensor:
    """The same bits as another type and/or shape. Without `shape`, the last dimension
    scales by the ratio of the bit widths (``[4, 8]`` int8 viewed as uint4b is ``[4, 16]``)."""
    dtype = tensor.dtype if dtype is None else dtype
    if shape is None:
        shape = list(tensor.shape)
        old, new = tensor.dtype.bits, dtype.bits
        if shape and (shape[-1] * old) % new == 0:
            shape[-1] = shape[-1] * old // new
        elif old != new:
            raise ValueError(f"view: {shape} elements of {tensor.dtype.name} do not make whole "
                             f"{dtype.name} elements along the last dimension; give shape=")
    if _numel(shape) * dtype.bits != tensor.numel() * tensor.dtype.bits:
        raise ValueError(f"view: {list(shape)} of {dtype.name} is {_numel(shape) * dtype.bits} bits, the "
                         f"tensor holds {tensor.numel() * tensor.dtype.bits}")
    return Tensor(dtype, shape, tensor.storage)
