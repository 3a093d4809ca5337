"""From a transpiled program to a launched GPU kernel.

A program is generated to CUDA C++ (``_C.generate_cuda``), compiled by NVRTC for the GPU
in use through the compile cache (memory, then disk), loaded, and launched on the
current torch stream. Two variants may exist per program: one that assumes every
pointer argument is 16-byte aligned (vector loads, cp.async of 16 bytes) and one that
does not; each call picks by checking the actual addresses.
"""

from __future__ import annotations

import warnings
from typing import Dict, Optional

from tilus import _C
from tilus.lang.types import TABLE, row_of

_rt = _C.runtime


def _scalar_kind(row) -> Optional[str]:
    """How a scalar argument of a type-table row is packed into the kernel's parameters:
    integers and bool widened to 32 or 64 bits, 16-bit floats as their bit pattern
    ("half:<name>", packed in Python), float32/float64 as themselves; None: unsupported."""
    if row.family == "float":
        if row.bits == 16:
            return "half:" + row.name
        return {32: "f32", 64: "f64"}.get(row.bits)
    if row.bits > 64:
        return None
    return ("u" if row.family == "int" and not row.signed else "i") + ("32" if row.bits <= 32 else "64")


_SCALAR_KINDS = {row.name: _scalar_kind(row) for row in TABLE}


def _stream(device_index: int) -> int:
    try:
        import torch

        return torch.cuda.current_stream(device_index).cuda_stream
    except Exception:
        return 0


def _half_bits(value: float, dtype_name: str) -> int:
    import numpy as np

    if dtype_name == "float16":
        return int(np.array(value, dtype=np.float16).view(np.uint16))
    bits = int(np.array(value, dtype=np.float32).view(np.uint32))
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF  # round to nearest even


class GpuVariant:
    def __init__(self, generated: dict, kernel):
        self.generated = generated
        self.kernel = kernel
        self.threads = generated["threads"]
        self.smem = generated["dynamic_smem"]


def _torch_stream_function():
    try:
        import torch

        return torch._C._cuda_getCurrentRawStream
    except (ImportError, AttributeError):
        return None


class GpuKernel:
    """The GPU side of one CompiledScript."""

    def __init__(self, compiled):
        self.compiled = compiled
        self.program = compiled.program
        self.variants: Dict[bool, GpuVariant] = {}
        self.param_dtypes = list(self.program.param_dtypes)
        self.pointer_slots = [i for i, t in enumerate(self.param_dtypes) if t.is_pointer]
        self.kinds = []
        for position, t in enumerate(self.param_dtypes):
            if t.is_pointer:
                self.kinds.append("ptr")
            elif _SCALAR_KINDS[t.name] is None:
                raise TypeError(f"{self.program.name}: runtime parameter {position} is a {t.name} "
                                "scalar, which cannot be passed to a GPU kernel")
            else:
                self.kinds.append(_SCALAR_KINDS[t.name])
        # One workspace per (kernel, index, size); clean ones are zeroed once and kept
        # zeroed by the kernels that use them (the requires_clean contract).
        self.workspace_keys = [f"{id(self)}:{w}" for w in range(self.program.num_workspaces)]
        self.workspace_clean = list(self.program.workspace_requires_clean)
        self._launchers = []

    def fast_launcher(self, signature, device_index: int):
        """A native launcher for later calls with the same compile-time arguments, or
        None when this kernel's parameters need the Python path (16-bit float scalars)."""
        stream_fn = _torch_stream_function()
        if stream_fn is None or any(k.startswith("half:") for k in self.kinds):
            return None
        import torch

        from tilus.arguments import int_range

        params = []
        for position, index in enumerate(signature.runtime_indices):
            dtype = self.param_dtypes[position]
            kind = self.kinds[position]
            if kind == "ptr":
                torch_name = row_of(dtype).torch
                if not torch_name or not hasattr(torch, torch_name):
                    return None  # no torch type to compare with: the Python path checks it
                params.append((index, kind, getattr(torch, torch_name), 0, 0))
            else:
                # the native path packs at most 64 bits: uint64 above 2**63 takes the slow path
                lo, hi = int_range(dtype) if (dtype.is_integer or dtype.is_bool) else (0, 0)
                hi = min(hi, 2**63 - 1)
                params.append((index, kind, None, lo, hi))
        jit = [(i, signature.params[i].type) for i in signature.jit_indices]
        launcher = _C.FastLauncher(self.program, torch.Tensor, stream_fn, device_index, params, jit,
                                   self.workspace_keys, self.workspace_clean, self.program.warps * 32)
        for aligned, v in self.variants.items():
            launcher.set_kernel(aligned, v.kernel, v.smem)
        self._launchers.append(launcher)
        return launcher

    def variant(self, aligned: bool) -> GpuVariant:
        v = self.variants.get(aligned)
        if v is None:
            arch = _rt.arch_string()
            generated = _C.generate_cuda(self.program, aligned, arch)
            cache = _rt.compile_cache()
            cubin = cache.get_or_compile(generated["source"], generated["name"], arch, [])
            for message in cache.take_warnings():
                warnings.warn(f"tilus cache: {message}", RuntimeWarning, stacklevel=3)
            kernel = _rt.LoadedKernel(cubin, generated["name"])
            for launcher in self._launchers:
                launcher.set_kernel(aligned, kernel, generated["dynamic_smem"])
            v = self.variants[aligned] = GpuVariant(generated, kernel)
        return v

    def launch(self, args: list, device_index: int = 0):
        if _rt.current_device() != device_index:
            _rt.set_device(device_index)
        aligned = all(args[i] % 16 == 0 for i in self.pointer_slots)
        v = self.variant(aligned)
        grid, workspace_bytes = _C.evaluate_launch_shape(self.program, args)
        stream = _stream(device_index)
        packed = []
        for kind, value in zip(self.kinds, args):
            if kind.startswith("half:"):
                packed.append(("u32", _half_bits(value, kind[5:])))
            else:
                packed.append((kind, value))
        for w, nbytes in enumerate(workspace_bytes):
            packed.append(("ptr", _rt.get_workspace(f"{self.workspace_keys[w]}:{nbytes}", nbytes,
                                                   self.workspace_clean[w], stream)))
        v.kernel.launch(tuple(grid), v.threads, v.smem, stream, packed)


def build(compiled) -> GpuKernel:
    return GpuKernel(compiled)


def generate_source(compiled, pointers_aligned: bool = True, arch: Optional[str] = None) -> str:
    """The CUDA C++ of a compiled script as the launcher builds it for ``arch`` ("sm_90a",
    ...); None: the current GPU's architecture, or none (no wgmma) without a GPU."""
    if arch is None:
        arch = _rt.arch_string() if _rt.cuda_available() else ""
    return _C.generate_cuda(compiled.program, pointers_aligned, arch)["source"]
