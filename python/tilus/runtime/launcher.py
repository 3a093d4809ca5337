"""From a transpiled program to a launched GPU kernel.

A program is built by the build entry the autotuner shares (``_C.build_kernel``,
csrc/runtime/build.h: CUDA C++ generated with the codegen choices of tilus.option,
compiled by NVRTC for the GPU in use through the compile cache, memory then disk),
loaded, and launched on the current torch stream with its arguments packed by the typed
packer both launch paths use (csrc/runtime/kernel_args.h). The aligned build assumes every
pointer argument is 16-byte aligned and every vector extent parameter (a view's last
extent or stride) a multiple of 16 elements, so tile rows move as 16-byte vectors. A call
whose arguments do not all meet that (alignment_of: one bit per parameter that does not)
takes a partly aligned build keyed by those parameters, in which only the views that use
them move element by element: an lm head's activations keep their 16-byte rows beside a
weight 50257 columns wide.

Any device: a launch goes to the tensors' device (``cuda:1`` while device 0 is current,
or the reverse) on that device's current torch stream. Each (variant, device) pair has
its own loaded module, built for that device's architecture (the compile cache shares
the binary between identical GPUs), and the device's context is current only for the
launch (``_C.runtime.DeviceScope``): the caller's current device never changes.

With ``tilus.option.debug.bounds_check`` on, launches build and use a third kind of
variant, compiled with the check (its own source, so its own compile cache entry), pass
the tensors' sizes and read the error record after the launch (runtime/bounds.py). The
native launch path steps aside while the option is on, so every checked launch comes
through :meth:`GpuKernel.launch`.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Dict, Optional

from tilus import _C, option
from tilus.arguments import int_range
from tilus.lang.errors import NativeError
from tilus.lang.types import row_of
from tilus.logging import get_logger
from tilus.runtime import bounds

_rt = _C.runtime
_LOG = get_logger("tilus.launch")

def _stream(device_index: int) -> int:
    try:
        import torch

        return torch.cuda.current_stream(device_index).cuda_stream
    except Exception:
        return 0


UNALIGNED = -1  # the build that assumes nothing of any argument (GpuKernel.variant(False))
# Partly aligned builds a kernel keeps per device: past them, a call that misses the aligned
# build's assumption for another combination of parameters takes the build that assumes
# nothing, which serves every call, instead of compiling one more (a workload that varies
# which of many tensors are misaligned would otherwise compile each combination).
MAX_PARTLY_ALIGNED = 8


def alignment_key(aligned) -> int:
    """A variant's alignment key: True -> 0 (the aligned build), False -> UNALIGNED, an int:
    the bits of the parameters the build does not assume aligned (alignment_of)."""
    if isinstance(aligned, bool):
        return 0 if aligned else UNALIGNED
    return int(aligned)


def _variant_key(alignment: int, device: int, checked: bool) -> tuple:
    """GpuKernel.variants' key of a build (bounds-checked builds are variants of their own)."""
    return (alignment, device, "bounds") if checked else (alignment, device)


class GpuVariant:
    def __init__(self, generated: dict, kernel):
        self.generated = generated
        self.kernel = kernel
        self.threads = generated["threads"]
        self.smem = generated["dynamic_smem"]
        # TMA tensor maps (csrc/runtime/tma_maps.h), passed after the workspaces: None
        # when the kernel has no TMA copies.
        self.tma = generated.get("tma_maps")


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
        # (alignment, device) -> variant; (alignment, device, "bounds") -> its checked build
        self.variants: Dict[tuple, GpuVariant] = {}
        self.param_dtypes = list(self.program.param_dtypes)
        self.pointer_slots = [i for i, t in enumerate(self.param_dtypes) if t.is_pointer]
        self.kinds = [_rt.param_kind(t) for t in self.param_dtypes]
        # One workspace per (kernel, index, size); clean ones are zeroed once and kept
        # zeroed by the kernels that use them (the requires_clean contract).
        self.workspace_keys = [f"{id(self)}:{w}" for w in range(self.program.num_workspaces)]
        self.workspace_clean = list(self.program.workspace_requires_clean)
        self._launchers = []

    def fast_launcher(self, signature, device_index: int):
        """A native launcher for later calls with the same compile-time arguments, or
        None without torch's stream function."""
        stream_fn = _torch_stream_function()
        if stream_fn is None:
            return None
        import torch

        params = []
        for position, index in enumerate(signature.runtime_indices):
            dtype = self.param_dtypes[position]
            kind = self.kinds[position]
            if kind == "ptr" and dtype.is_void:
                params.append((index, kind, None, 0, 0))  # any dtype: checked natively
            elif kind == "ptr":
                torch_name = row_of(dtype).torch
                if not torch_name or not hasattr(torch, torch_name):
                    return None  # no torch type to compare with: the Python path checks it
                params.append((index, kind, getattr(torch, torch_name), 0, 0))
            else:
                # the native path packs at most 64 bits: uint64 above 2**63 takes the slow path
                lo, hi = int_range(dtype) if (dtype.is_integer or dtype.is_bool) else (0, 0)
                hi = min(hi, 2**63 - 1)
                # the dtype slot of a boolean scalar names Python's bool: True/False pass natively
                params.append((index, kind, bool if dtype.is_bool else None, lo, hi))
        jit = [(i, signature.params[i].type) for i in signature.jit_indices]
        launcher = _C.FastLauncher(self.program, torch.Tensor, stream_fn, device_index, params, jit,
                                   self.workspace_keys, self.workspace_clean, self.program.warps * 32)
        for key, v in self.variants.items():
            # checked builds take hidden parameters: Python launches them; the native
            # launcher keys at most 64 parameters' bits
            if len(key) == 2 and 0 <= key[0] < 2**64:
                launcher.set_kernel(key[0], v.kernel, v.smem, key[1], v.tma)
        self._launchers.append(launcher)
        return launcher

    def variant(self, aligned=True, device: int = None, checked: bool = None) -> GpuVariant:
        """The variant for `device` (default: the current one), built and loaded there.
        `aligned`: True, the aligned build; False, the build that assumes nothing; an int,
        the partly aligned build for those parameters' bits (alignment_of). `checked`
        (default: tilus.option.debug.bounds_check) selects the bounds-checked build."""
        alignment = alignment_key(aligned)
        if device is None:
            device = _rt.current_device()
        if checked is None:
            checked = option.debug.get_bounds_check()
        key = _variant_key(alignment, device, checked)
        v = self.variants.get(key)
        if v is None:
            if alignment > 0 and self.partly_aligned_builds(device, checked) >= MAX_PARTLY_ALIGNED:
                v = self.variant(False, device, checked)  # the build that assumes nothing serves it
            else:
                with _rt.DeviceScope(device):
                    generated = build_variant(self.program, alignment, _rt.arch_string(), checked)
                    kernel = _rt.LoadedKernel(generated.pop("cubin"), generated["name"])
                v = GpuVariant(generated, kernel)
            if not checked and 0 <= alignment < 2**64:
                for launcher in self._launchers:
                    launcher.set_kernel(alignment, v.kernel, v.smem, device, v.tma)
            self.variants[key] = v
        return v

    def partly_aligned_builds(self, device: int, checked: bool) -> int:
        """How many partly aligned builds (not calls served by the unaligned one) `device`
        has of this kernel."""
        unaligned = self.variants.get(_variant_key(UNALIGNED, device, checked))
        return sum(1 for key, v in self.variants.items()
                   if key == _variant_key(key[0], device, checked) and key[0] > 0 and v is not unaligned)

    def launch(self, args: list, device_index: int = 0, sizes: Optional[list] = None,
               script: str = ""):
        """Launch on `device_index`. With tilus.option.debug.bounds_check on: `sizes` is
        the byte size of the tensor behind each parameter (-1: none), which the checked
        kernel compares every access with; a violation raises ScriptBoundsError naming
        `script` (the method) after the launch."""
        checked = option.debug.get_bounds_check()
        alignment = alignment_of(self.program, args)
        if alignment and _variant_key(alignment, device_index, checked) not in self.variants:
            # once per variant: the views using these parameters move element by element
            capped = self.partly_aligned_builds(device_index, checked) >= MAX_PARTLY_ALIGNED
            _LOG.info("%s: the unaligned build of %s (element by element global accesses) for this "
                      "call: %s", self.program.name,
                      f"every view ({MAX_PARTLY_ALIGNED} partly aligned builds exist)" if capped else
                      "the views that use " + ", ".join(repr(self.program.param_names[i]) for i in _bits(alignment)),
                      "; ".join(unaligned_reasons(self.program, args)))
        v = self.variant(alignment, device_index, checked)
        grid, workspace_bytes = _C.evaluate_launch_shape(self.program, args)
        stream = _stream(device_index)
        with _rt.DeviceScope(device_index):
            packed = list(zip(self.kinds, args))
            for w, nbytes in enumerate(workspace_bytes):
                packed.append(("ptr", _rt.get_workspace(f"{self.workspace_keys[w]}:{nbytes}",
                                                       nbytes, self.workspace_clean[w], stream)))
            if v.tma is not None:
                packed.extend(("opaque", blob) for blob in _encode_tma_maps(v.tma, args))
            if checked:
                sizes = list(sizes) if sizes is not None else [-1] * len(args)
                record = bounds.record_pointer(device_index, stream)
                packed.extend(bounds.hidden_args(v.generated, sizes, record))
            v.kernel.launch(tuple(grid), v.threads, v.smem, stream, packed)
            if checked:
                bounds.check_record(v.generated, record, stream, sizes, script)


def _encode_tma_maps(maps, args) -> list:
    """The kernel's TMA tensor maps for these runtime arguments; what the TMA unit cannot
    take (a stride or address not a multiple of 16 bytes) is a ValueError naming the
    copy's script line and the parameter."""
    try:
        return maps.encode(args)
    except NativeError as e:
        raise (TypeError if e.kind == "TypeError" else ValueError)(e.message) from None


def _unaligned_params(program, runtime_args):
    """The parameters that keep a call off the aligned build, in order: (index, True) for
    a pointer not 16-byte aligned, (index, False) for a vector extent parameter
    (csrc/transforms/vector_extents.h) that is not a multiple of 16."""
    for i, dtype in enumerate(program.param_dtypes):
        if dtype.is_pointer and runtime_args[i] % 16:
            yield i, True
    for i in program.vector_extent_params:
        if runtime_args[i] % 16:
            yield i, False


def alignment_of(program, runtime_args) -> int:
    """The build a call with these runtime arguments (parameter order, addresses for
    pointers) takes: bit i set for each parameter i that does not meet the aligned build's
    assumption (a pointer not 16-byte aligned, a vector extent parameter not a multiple of
    16); 0: the aligned build. The native launcher (csrc/bindings/launch.cc) computes the
    same bits."""
    bits = 0
    for i, _ in _unaligned_params(program, runtime_args):
        bits |= 1 << i
    return bits


def _bits(alignment: int) -> list:
    return [i for i in range(alignment.bit_length()) if alignment >> i & 1]


def takes_aligned_build(program, runtime_args) -> bool:
    """Whether a call with these runtime arguments may use the aligned build: every
    pointer 16-byte aligned and every vector extent parameter a multiple of 16."""
    return alignment_of(program, runtime_args) == 0


def unaligned_reasons(program, runtime_args) -> list:
    """Why a call with these runtime arguments takes the unaligned build (empty: it does
    not), each parameter named as the script names it."""
    names = program.param_names
    return [f"pointer argument {names[i]!r} at {runtime_args[i]:#x} is not 16-byte aligned" if pointer else
            f"{names[i]!r} = {runtime_args[i]} is the last extent or a stride of a global view and not a "
            "multiple of 16" for i, pointer in _unaligned_params(program, runtime_args)]


def build_args(aligned) -> tuple:
    """(pointers_aligned, keyword arguments) of the bindings' build entries for a variant
    (`aligned` as GpuKernel.variant takes it)."""
    alignment = alignment_key(aligned)
    if alignment == UNALIGNED:
        return False, {}
    return True, ({"unaligned_params": _bits(alignment)} if alignment else {})


def build_variant(program, aligned, arch: str, bounds_check: bool = False) -> dict:
    """Generate and compile one variant of `program` for `arch` (`aligned` as
    GpuKernel.variant takes it) through the compile cache, exactly as the autotuner's
    parallel build does (same codegen choices, same cache key): _C.generate_cuda's dict
    plus ``cubin`` and ``cache_key``. `bounds_check`: the bounds-checked build
    (tilus.option.debug.bounds_check; its source, hence its cache key, differs from the
    unchecked one's)."""
    choices = dataclasses.replace(option.get_codegen(), bounds_check=bounds_check)
    pointers_aligned, extra = build_args(aligned)
    built = _C.build_kernel(program, arch, pointers_aligned, **choices.binding_args(), **extra)
    for message in _rt.compile_cache().take_warnings():
        warnings.warn(f"tilus cache: {message}", RuntimeWarning, stacklevel=4)
    return built


def build(compiled) -> GpuKernel:
    return GpuKernel(compiled)


def generate_source(compiled, pointers_aligned=True, arch: Optional[str] = None) -> str:
    """The CUDA C++ of a compiled script as the launcher builds it for ``arch`` ("sm_90a",
    ...); None: the current GPU's architecture, or none (no wgmma) without a GPU.
    `pointers_aligned` as GpuKernel.variant's `aligned` (an int: a partly aligned build).
    With tilus.option.debug.bounds_check on, the checked build's."""
    if arch is None:
        arch = _rt.arch_string() if _rt.cuda_available() else ""
    aligned, extra = build_args(pointers_aligned)
    return _C.generate_cuda(compiled.program, aligned, arch,
                            **option.get_codegen().binding_args(), **extra)["source"]
