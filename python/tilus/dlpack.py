"""Reading a ``__dlpack__`` object's memory description (JAX, CuPy, any DLPack
producer) without importing a framework: the capsule holds a ``DLManagedTensor``
(DLPack v0.x ABI) whose fields we read with ctypes. The capsule is not consumed: its
owner keeps the memory alive for as long as the caller holds the object."""

from __future__ import annotations

import ctypes
from typing import Optional, Tuple

from tilus.lang.types import TABLE

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13

# (DLDataTypeCode, bits) -> the type's name as torch prints it (what from_foreign reads).
_CODES = {(row.dlpack_code, row.bits): row.torch or row.name for row in TABLE
          if row.dlpack_code >= 0}


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
