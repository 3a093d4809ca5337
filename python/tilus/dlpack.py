"""Reading a ``__dlpack__`` object's memory description (JAX, CuPy, any DLPack
producer) without importing a framework: the capsule holds a ``DLManagedTensorVersioned``
(DLPack 1.x, asked for first: it carries a read-only flag) or a ``DLManagedTensor``
(v0.x), whose fields we read with ctypes. The capsule is not consumed: its
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


# DLManagedTensorVersioned: version (2 x uint32), manager_ctx, deleter, flags, DLTensor.
_VERSIONED_FLAGS_OFFSET = 24
_VERSIONED_TENSOR_OFFSET = 32
_FLAG_READ_ONLY = 1


def _capsule(obj, device_type):
    kwargs = {"stream": None} if device_type == _KDL_CUDA else {}
    try:
        return obj.__dlpack__(max_version=(1, 0), **kwargs), True
    except TypeError:  # a producer of the v0.x protocol
        return obj.__dlpack__(**kwargs), False


def describe(obj) -> Tuple[int, int, Optional[str], str, bool, bool]:
    """(address, nbytes, dtype name or None, device "cpu"/"cuda:N", contiguous, read-only)."""
    try:
        device_type = obj.__dlpack_device__()[0]
    except AttributeError:
        device_type = None
    capsule, versioned = _capsule(obj, device_type)
    readonly = False
    if versioned and _is_capsule(capsule, b"dltensor_versioned"):
        base = _get_pointer(capsule, b"dltensor_versioned")
        readonly = bool(ctypes.c_uint64.from_address(base + _VERSIONED_FLAGS_OFFSET).value
                        & _FLAG_READ_ONLY)
        t = _DLTensor.from_address(base + _VERSIONED_TENSOR_OFFSET)
    else:
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
    return (t.data or 0) + t.byte_offset, nbytes, dtype, device, contiguous, readonly


_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _is_capsule(capsule, name: bytes) -> bool:
    return bool(_is_valid(capsule, name))
