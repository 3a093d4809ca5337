"""Kernel signatures and host arguments.

A parameter annotated ``int``, ``float`` or ``bool`` is a compile-time (JIT) constant;
one annotated with a tilus type (``int32``, ``~float16``, ...) is a runtime value. Host
arguments are checked here, before anything runs, and errors name the parameter.
"""

from __future__ import annotations

import inspect
import math
import numbers
import os
import struct
import sys
import typing
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

from tilus.lang import errors
from tilus.lang.types import TABLE, DataType, from_foreign, void_p

JIT_TYPES = (int, float, bool)


@dataclass
class Param:
    name: str
    jit: bool
    type: Any  # a Python type for JIT params, a tilus DataType for runtime ones


@dataclass
class TensorArg:
    """A host-visible tensor argument."""

    param: str
    address: int
    nbytes: int  # -1: not known (an integer address)
    dtype: Optional[DataType]
    device: str  # "cpu" or "cuda:N"
    # False for memory its owner marks read-only (a read-only numpy array, an array over
    # a `bytes` object, a DLPack tensor flagged read-only); torch has no such mark.
    writeable: bool = True


class Signature:
    def __init__(self, fn, owner: str):
        self.fn = fn
        self.owner = owner
        try:
            hints = typing.get_type_hints(fn)
        except Exception:
            hints = None
        params = list(inspect.signature(fn).parameters.values())[1:]
        self.params: List[Param] = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise self._error(f"{owner}.__call__ cannot take *{p.name}; list every parameter")
            annotation = p.annotation
            if annotation is inspect.Parameter.empty:
                raise self._error(f"parameter '{p.name}' of {owner}.__call__ has no annotation: "
                                  "annotate it int/float/bool (compile-time constant) or with a "
                                  "tilus type such as int32 or ~float16 (runtime value)")
            if hints is not None and p.name in hints:
                annotation = hints[p.name]
            elif isinstance(annotation, str):
                annotation = self._resolve(annotation, p.name)
            if annotation in JIT_TYPES:
                self.params.append(Param(p.name, True, annotation))
            elif isinstance(annotation, DataType):
                self.params.append(Param(p.name, False, annotation))
            else:
                raise self._error(f"parameter '{p.name}' of {owner}.__call__ is annotated "
                                  f"{annotation!r}; use int/float/bool or a tilus type")
        self.names = [p.name for p in self.params]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.jit_indices = [i for i, p in enumerate(self.params) if p.jit]
        self.runtime_indices = [i for i, p in enumerate(self.params) if not p.jit]

    def _resolve(self, text: str, name: str):
        # `from __future__ import annotations` makes annotations strings: evaluate them
        # where the function was defined; `~float16` evaluates through DataType.__invert__.
        try:
            return eval(text, self.fn.__globals__)  # noqa: S307 - the user's own annotation
        except Exception as e:
            raise self._error(f"cannot evaluate the annotation '{text}' of parameter '{name}': "
                              f"{e}") from None

    def def_site(self) -> tuple:
        """(file, line, text) of the kernel's ``def __call__``: where errors about the
        kernel as a whole point; empty when its source cannot be read."""
        try:
            file = inspect.getsourcefile(self.fn) or ""
            lines, line = inspect.getsourcelines(self.fn)
            return file, line, lines[0]
        except (OSError, TypeError):
            return "", 0, ""

    def _error(self, message: str) -> errors.ScriptError:
        return errors.ScriptTypeError(message, *self.def_site(), f"{self.owner}.__call__")

    def bind(self, args: tuple, kwargs: dict) -> list:
        """Positional argument list, or TypeError naming what is wrong."""
        n = len(self.params)
        if not kwargs:
            if len(args) != n:
                raise TypeError(self._count_message(len(args)))
            return list(args)
        values = list(args) + [_MISSING] * (n - len(args))
        if len(args) > n:
            raise TypeError(self._count_message(len(args) + len(kwargs)))
        for k, v in kwargs.items():
            i = self.index.get(k)
            if i is None:
                raise TypeError(f"{self.owner}() got an unexpected keyword argument '{k}'")
            if values[i] is not _MISSING:
                raise TypeError(f"{self.owner}() got multiple values for argument '{k}'")
            values[i] = v
        missing = [self.names[i] for i, v in enumerate(values) if v is _MISSING]
        if missing:
            raise TypeError(f"{self.owner}() missing argument(s): {', '.join(missing)}")
        return values

    def _count_message(self, got: int) -> str:
        missing = self.names[got:]
        why = f": missing {', '.join(repr(n) for n in missing)}" if missing else ""
        return (f"{self.owner}() takes {len(self.params)} arguments "
                f"({', '.join(self.names)}) but {got} were given{why}")

    def jit_key(self, values: list) -> tuple:
        key = []
        for i in self.jit_indices:
            p, v = self.params[i], values[i]
            if p.type is int:
                if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                    raise TypeError(f"{self.owner}(): argument '{p.name}' is a compile-time int, "
                                    f"got {type(v).__name__}")
                v = int(v)
            elif p.type is float:
                if not isinstance(v, numbers.Real) or isinstance(v, bool):
                    raise TypeError(f"{self.owner}(): argument '{p.name}' is a compile-time "
                                    f"float, got {type(v).__name__}")
                v = float(v)
            else:
                if not isinstance(v, (bool, numbers.Integral)):
                    raise TypeError(f"{self.owner}(): argument '{p.name}' is a compile-time "
                                    f"bool, got {type(v).__name__}")
                v = bool(v)
            key.append(v)
        return tuple(key)


_MISSING = object()


def _inside_bytes_object(address: int, nbytes: int) -> bool:
    """Whether `address` is the start of the contents of a Python ``bytes`` object of at
    least `nbytes` bytes. CPython keeps a bytes object's contents right after a fixed
    header (reference count, type, size, hash); the header is read through
    /proc/self/mem, which fails cleanly where `address` has no mapped memory before it."""
    if sys.implementation.name != "cpython" or not os.path.exists("/proc/self/mem"):
        return False
    header = sys.getsizeof(b"") - 1  # the header; one byte more is the terminating NUL
    word = struct.calcsize("P")
    try:
        with open("/proc/self/mem", "rb", buffering=0) as mem:
            mem.seek(address - header + word)
            raw = mem.read(2 * word)
    except (OSError, ValueError, OverflowError):
        return False
    if len(raw) != 2 * word:
        return False
    type_address, size = struct.unpack("Pq" if word == 8 else "Pi", raw)
    return type_address == id(bytes) and size >= nbytes


def _torch_over_bytes(tensor) -> bool:
    """A CPU tensor made by torch.frombuffer over an immutable ``bytes`` object: torch keeps
    no read-only mark, so tilus looks at the memory behind a storage torch did not allocate
    (one that cannot be resized)."""
    if tensor.device.type != "cpu":
        return False
    try:
        storage = tensor.untyped_storage()
        if storage.resizable():
            return False  # torch's own allocation
        return _inside_bytes_object(storage.data_ptr(), storage.nbytes())
    except (AttributeError, RuntimeError):
        return False


# CPU tensors whose addresses were passed as integers, kept (weakly) so that the next
# launch with the same memory finds them without searching the heap again.
_CPU_OWNERS: List[Any] = []
_TENSOR_TYPE_MEMO: dict = {}


def _storage_span(tensor) -> Optional[Tuple[int, int]]:
    """[start, end) of a CPU torch tensor's storage, or None (another device, no storage)."""
    try:
        if tensor.device.type != "cpu":
            return None
        storage = tensor.untyped_storage()
        start = storage.data_ptr()
        return start, start + storage.nbytes()
    except (AttributeError, RuntimeError, NotImplementedError):
        return None


def _cpu_tensor_holding(address: int):
    """A live CPU torch tensor whose storage holds the byte at `address`, or None.

    An integer address (Tilus 0.2's ``tensor.data_ptr()``) carries no extent, which the
    interpreter needs to bound the kernel's accesses: the tensor that owns the memory
    gives it (its storage's end). Tensors are Python objects the garbage collector
    tracks, so they are found among its objects; the ones found are remembered."""
    torch = sys.modules.get("torch")
    if torch is None or address <= 0:
        return None
    import weakref

    alive = []
    found = None
    for ref in _CPU_OWNERS:
        tensor = ref()
        if tensor is None:
            continue
        alive.append(ref)
        span = _storage_span(tensor)
        if found is None and span is not None and span[0] <= address < span[1]:
            found = tensor
    _CPU_OWNERS[:] = alive
    if found is not None:
        return found
    import gc

    base = torch.Tensor
    memo = _TENSOR_TYPE_MEMO
    for obj in gc.get_objects():
        tp = type(obj)
        is_tensor = memo.get(tp)
        if is_tensor is None:
            is_tensor = memo[tp] = issubclass(tp, base)
        if not is_tensor:
            continue
        span = _storage_span(obj)
        if span is not None and span[0] <= address < span[1]:
            try:
                _CPU_OWNERS.append(weakref.ref(obj))
            except TypeError:
                pass
            return obj
    return None


def _raw_address(param: str, address: int) -> TensorArg:
    """An integer for a pointer parameter (``tensor.data_ptr()``, as Tilus 0.2 programs
    pass), taken on trust for its type: the address of CUDA memory (the driver gives its
    device and the bytes to the end of its allocation), or of a live CPU torch tensor's
    memory (the interpreter bounds the kernel's accesses by the end of its storage)."""
    from tilus import _C

    device = -1
    if _C.runtime.cuda_available():
        try:
            device = _C.runtime.pointer_device(address)
        except Exception:  # noqa: BLE001 - the driver's error for memory it does not know
            device = -1
    if device < 0:
        owner = _cpu_tensor_holding(address)
        if owner is not None:
            end = _storage_span(owner)[1]
            return TensorArg(param, address, end - address, None, "cpu", not _torch_over_bytes(owner))
        raise TypeError(f"argument '{param}' is the integer {address:#x}, which is not the address of "
                        "CUDA memory nor of a live CPU torch tensor's memory; an integer address "
                        "(tensor.data_ptr()) is taken while its tensor lives: keep the tensor, or pass "
                        "the tensor itself")
    try:  # to the end of its allocation: memory the kernel may touch, for the view checks
        nbytes = _C.runtime.bytes_to_allocation_end(address)
    except Exception:  # noqa: BLE001 - unknown then: the views go unchecked
        nbytes = -1
    return TensorArg(param, address, nbytes, None, f"cuda:{device}", True)


def describe_tensor(param: str, value, expected: DataType) -> TensorArg:
    """Check a tensor argument for a `~dtype` parameter and describe its memory."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return _raw_address(param, int(value))
    if isinstance(getattr(value, "dtype", None), DataType) and hasattr(value, "storage"):
        # a host tensor of tilus.tensor: its buffer, with its own (maybe sub-byte) type
        _check_dtype(param, value.dtype, value.dtype.name, expected)
        arg = describe_tensor(param, value.storage, void_p)
        return TensorArg(param, arg.address, arg.nbytes, value.dtype, arg.device, arg.writeable)
    if hasattr(value, "data_ptr") and hasattr(value, "is_contiguous"):  # torch.Tensor
        dtype = from_foreign(value.dtype)
        _check_dtype(param, dtype, value.dtype, expected)
        if not value.is_contiguous():
            raise ValueError(f"argument '{param}' is not contiguous; tilus pointer parameters "
                             "need contiguous tensors (call .contiguous())")
        return TensorArg(param, value.data_ptr(), value.numel() * value.element_size(), dtype,
                         str(value.device), not _torch_over_bytes(value))
    if hasattr(value, "__cuda_array_interface__"):  # CuPy, Numba
        cai = value.__cuda_array_interface__
        dtype = from_foreign(_typestr_name(cai["typestr"]))
        _check_dtype(param, dtype, cai["typestr"], expected)
        itemsize = int(cai["typestr"][2:])
        if cai.get("strides") is not None and not _c_contiguous(cai["shape"], cai["strides"],
                                                                itemsize):
            raise ValueError(f"argument '{param}' is not contiguous")
        nbytes = itemsize
        for s in cai["shape"]:
            nbytes *= s
        device = getattr(getattr(value, "device", None), "id", 0)
        return TensorArg(param, int(cai["data"][0]), nbytes, dtype, f"cuda:{device}",
                         not cai["data"][1])
    if hasattr(value, "__array_interface__"):  # numpy
        ai = value.__array_interface__
        dtype = from_foreign(getattr(value, "dtype", _typestr_name(ai["typestr"])))
        _check_dtype(param, dtype, getattr(value, "dtype", ai["typestr"]), expected)
        if ai.get("strides") is not None and not _c_contiguous(ai["shape"], ai["strides"],
                                                               int(ai["typestr"][2:])):
            raise ValueError(f"argument '{param}' is not contiguous; tilus pointer parameters "
                             "need contiguous arrays (numpy.ascontiguousarray)")
        return TensorArg(param, int(ai["data"][0]), int(value.nbytes), dtype, "cpu",
                         not ai["data"][1])
    if hasattr(value, "__dlpack__"):  # JAX and other DLPack producers
        from tilus import dlpack

        try:
            address, nbytes, name, device, contiguous, readonly = dlpack.describe(value)
        except BufferError as e:  # the producer cannot export it (e.g. read-only over v0.x)
            raise ValueError(f"argument '{param}' cannot be passed through DLPack: {e}") from None
        dtype = from_foreign(name) if name else None
        _check_dtype(param, dtype, name, expected)
        if not contiguous:
            raise ValueError(f"argument '{param}' is not contiguous; tilus pointer parameters "
                             "need contiguous tensors")
        return TensorArg(param, address, nbytes, dtype, device, not readonly)
    if expected.is_void:
        raise TypeError(f"argument '{param}' expects a tensor of any dtype (parameter void_p), "
                        f"got {type(value).__name__}")
    raise TypeError(f"argument '{param}' expects a tensor of {expected.pointee.name} (pointer "
                    f"parameter {expected.name}), got {type(value).__name__}")


def _check_dtype(param: str, dtype, shown, expected: DataType):
    # void_p takes memory of any dtype, even one tilus has no name for (dtype None): the
    # kernel views it with global_view(ptr, dtype=...), sized in bytes.
    if expected.is_void:
        return
    if dtype is None or dtype != expected.pointee:
        raise TypeError(f"argument '{param}' has dtype {shown} but the parameter is "
                        f"{expected.name} (a pointer to {expected.pointee.name})")


def _typestr_kind(row) -> str:
    """The array-interface kind letter of a type-table row."""
    if row.family == "bool":
        return "b"
    if row.family == "float":
        return "f"
    return "i" if row.signed else "u"


# Array-interface typestr (kind letter, itemsize) -> numpy name, for the types numpy has.
_TYPESTR_NAMES = {(_typestr_kind(row), row.bits // 8): row.numpy for row in TABLE if row.numpy}


def _typestr_name(typestr: str) -> str:
    return _TYPESTR_NAMES.get((typestr[1], int(typestr[2:])), typestr)


def _c_contiguous(shape, strides, itemsize) -> bool:
    expected = itemsize
    for size, stride in reversed(list(zip(shape, strides))):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def int_range(t: DataType):
    """The values an integer (or boolean) tilus type holds, as (lowest, highest)."""
    if t.is_bool:
        return 0, 1
    bits = t.bits
    if t.is_signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def check_scalar(param: Param, value, owner: str):
    """A runtime scalar argument, checked against its tilus type."""
    t = param.type
    if t.is_bool:
        if not isinstance(value, (bool, numbers.Integral)):
            raise TypeError(f"{owner}(): argument '{param.name}' is {t.name}, got "
                            f"{type(value).__name__}")
        return bool(value)
    if t.is_integer:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{owner}(): argument '{param.name}' is {t.name}, got "
                            f"{type(value).__name__}")
        value = int(value)
        lo, hi = int_range(t)
        if not lo <= value <= hi:
            raise ValueError(f"{owner}(): argument '{param.name}' = {value} does not fit in "
                             f"{t.name}")
        return value
    if t.is_float:
        if not isinstance(value, numbers.Real):
            raise TypeError(f"{owner}(): argument '{param.name}' is {t.name}, got "
                            f"{type(value).__name__}")
        try:
            value = float(value)
        except OverflowError:  # an int beyond float64
            raise ValueError(f"{owner}(): argument '{param.name}' = {value} does not fit in "
                             f"{t.name}") from None
        if math.isfinite(value) and not math.isfinite(_rounded(value, t.name)):
            raise ValueError(f"{owner}(): argument '{param.name}' = {value!r} does not fit in "
                             f"{t.name} (it would become infinity)")
        return value
    raise TypeError(f"{owner}(): unsupported parameter type {t.name}")


def _rounded(value: float, name: str) -> float:
    """`value` rounded to the float type `name` (to nearest even, as the launch does)."""
    if name == "float64":
        return value
    try:
        if name == "float16":
            return struct.unpack("<e", struct.pack("<e", value))[0]
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
    except OverflowError:  # beyond the format's largest value after rounding
        return math.inf
    if name == "bfloat16":
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def prepare_runtime_args(sig: Signature, values: list, owner: str) -> Tuple[list, List[TensorArg]]:
    """Runtime argument values in parameter order (addresses for pointers) and the
    tensors they came from. Raises TypeError/ValueError naming the parameter."""
    out = []
    tensors = []
    for i in sig.runtime_indices:
        p, v = sig.params[i], values[i]
        if p.type.is_pointer:
            t = describe_tensor(p.name, v, p.type)
            tensors.append(t)
            out.append(t.address)
        else:
            out.append(check_scalar(p, v, owner))
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        where = ", ".join(f"'{t.param}' on {t.device}" for t in tensors)
        raise ValueError(f"{owner}(): tensor arguments are on different devices: {where}")
    return out, tensors
