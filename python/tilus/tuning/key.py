"""Tuning keys: which calls of an autotuned script share one chosen configuration.

A key has three parts:

* the JIT values (arguments annotated ``int``/``float``/``bool``): each set of them is a
  different program, so each is tuned on its own;
* the runtime part: by default every runtime integer argument rounded up to two
  significant bits, as Tilus 0.2 rounds (the next multiple of a quarter of its power of
  two: 3072, 4096, 6144, 8192, 12288, 16384, ...; ``m_size=3500`` and ``4096`` share a
  winner, ``3000`` gets 3072's, ``m_size=1`` its own).
  Runtime floats, bools and tensors do not enter it; tensor dtypes are fixed by the
  ``~dtype`` annotations, which are part of the script's identity (identity.py).
  ``@tilus.autotune_key(fn)`` replaces this part with ``fn(*args)``, called with the
  kernel's arguments in ``__call__`` order; it must return a hashable value whose
  ``repr`` is the same in every process (ints, strings, tuples of them);
* the device ordinal of the tensor arguments (-1 for CPU tensors). The disk store
  replaces it with the GPU's name and compute capability.

Computing a key is on the launch path of every call, so it does no more than read the
bucketed ints and one tensor's device.
"""

from __future__ import annotations

import numbers
from typing import Callable, Optional

from tilus import _C


def bucket(value):
    """An integer >= 1 rounded up to a multiple of 2^(bits - 2), bits its bit length: the
    next number of the form 2^j or 3 * 2^j (Tilus 0.2's tuning buckets). A pure power of
    two would put n = 12288 and 14336 in one bucket, whose tile counts on 132 SMs want
    different tiles (docs/autotune.md). Anything else unchanged."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return value
    value = int(value)
    if value < 1:
        return value
    step = 1 << max(value.bit_length() - 2, 0)
    return (value + step - 1) // step * step


def device_of(value) -> int:
    """The CUDA device ordinal of a tensor argument, -1 when it lives on the CPU."""
    get_device = getattr(value, "get_device", None)  # torch: -1 on the CPU
    if get_device is not None:
        return get_device()
    if hasattr(value, "__cuda_array_interface__"):  # CuPy, Numba
        return int(getattr(getattr(value, "device", None), "id", 0))
    return -1


def _default_device() -> int:
    from tilus.runtime import driver_available

    return int(_C.runtime.current_device()) if driver_available() else -1


class KeyMaker:
    """Builds the in-memory tuning key of a call from its positional arguments."""

    def __init__(self, sig, custom: Optional[Callable] = None):
        self.sig = sig
        self.custom = custom
        self.jit_indices = list(sig.jit_indices)
        self.int_indices = [i for i in sig.runtime_indices
                            if sig.params[i].type.is_integer and not sig.params[i].type.is_bool]
        pointers = [i for i in sig.runtime_indices if sig.params[i].type.is_pointer]
        self.first_pointer = pointers[0] if pointers else None

    def __call__(self, args) -> tuple:
        """`args` holds every argument, positionally. JIT values enter as given (the
        launch that follows checks their types)."""
        jit = tuple([args[i] for i in self.jit_indices])
        if self.custom is not None:
            runtime = self.custom(*args)
        else:
            runtime = tuple([bucket(args[i]) for i in self.int_indices])
        if self.first_pointer is not None:
            device = device_of(args[self.first_pointer])
        else:
            device = _default_device()
        return (jit, runtime, device)

    def describe(self, key: tuple, jit_key: tuple) -> dict:
        """The key without its device, as JSON-able data (what the disk store keeps);
        `jit_key` is the JIT values as the signature converted them."""
        _, runtime, _ = key
        sig = self.sig
        jit = {sig.params[i].name: v for i, v in zip(self.jit_indices, jit_key)}
        if self.custom is not None:
            part = {"custom": repr(runtime)}
        else:
            part = {sig.params[i].name: int(v) for i, v in zip(self.int_indices, runtime)}
        return {"jit": jit, "runtime": part}

    @staticmethod
    def device(key: tuple) -> int:
        return key[2]


def label(kernel_name: str, jit_key: tuple) -> str:
    """What progress bars call a tuning: ``matmul_v5-4096-14336``."""
    return "-".join([kernel_name] + [str(v) for v in jit_key])
