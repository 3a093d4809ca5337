"""Reading a ``__dlpack__`` object's memory description (JAX, CuPy, any DLPack
producer) without importing a framework: the capsule holds a ``DLManagedTensor``
(DLPack v0.x ABI) whose fields we read with ctypes. The capsule is not consumed: its
owner keeps the memory alive for as long as the caller holds the object."""

from __future__ import annotations

import ctypes
from typing import Optional, Tuple

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13

_CODES = {(0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
          (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
          (2, 16): "float16", (2, 32): "float32", (2, 64): "float64", (4, 16): "bfloat16",
          (6, 8): "bool"}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def describe(obj) -> Tuple[int, int, Optional[str], str, bool]:
    """(address, nbytes, dtype name or None, device "cpu"/"cuda:N", contiguous)."""
    try:
        device_type = obj.__dlpack_device__()[0]
    except AttributeError:
        device_type = None
    capsule = obj.__dlpack__(stream=None) if device_type == _KDL_CUDA else obj.__dlpack__()
    t = _DLTensor.from_address(_get_pointer(capsule, b"dltensor"))
    shape = [t.shape[i] for i in range(t.ndim)]
    itemsize = t.dtype.bits * t.dtype.lanes // 8
    nbytes = itemsize
    for s in shape:
        nbytes *= s
    contiguous = True
    if t.strides:
        expected = 1
        for size, stride in reversed(list(zip(shape, [t.strides[i] for i in range(t.ndim)]))):
            if size != 1 and stride != expected:
                contiguous = False
            expected *= size
    dtype = _CODES.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
    kind = t.device.device_type
    device = "cpu" if kind in (_KDL_CPU, _KDL_CUDA_HOST) else f"cuda:{t.device.device_id}" if kind in (
        _KDL_CUDA, _KDL_CUDA_MANAGED) else f"dlpack-device-{kind}"
    return (t.data or 0) + t.byte_offset, nbytes, dtype, device, contiguous
