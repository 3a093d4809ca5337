"""``tilus.Script``: the base class of every kernel.

A subclass writes ``__init__`` (compile-time setup) and ``__call__`` (the kernel). At
class creation we take the subclass's ``__call__`` aside as the kernel function; calling
an instance then goes through :meth:`Script.__call__`, which transpiles once per set of
compile-time (JIT) argument values, caches the program, and runs it: in the CPU
interpreter when the tensors live on the CPU, on the GPU when they live there.
"""

from __future__ import annotations

import abc
import enum
import re
import threading
from typing import Dict, Optional

from tilus.lang.cuda_helpers import CudaHelpers
from tilus import _C, host_run, option
from tilus.arguments import Signature, prepare_runtime_args
from tilus.autotune import TunedScript, tuned_instance_or_none
from tilus.candidate import kernel_name
from tilus.compiled import CompiledKernel, launch_device, runs_on_cpu
from tilus.dump import dump_compiled
from tilus.lang import errors
from tilus.lang.instructions import InstructionMixin
from tilus.lang.transpiler import Transpiler
from tilus.runtime import launcher

_stats_lock = threading.Lock()
_gpu_lock = threading.Lock()
STATS = {"transpiles": 0, "interpreter_runs": 0}


def _count(name: str):
    with _stats_lock:
        STATS[name] = STATS.get(name, 0) + 1


# The most shared memory any target lets one block have (227 KB opt-in on sm_90 and sm_100).
MAX_SHARED_MEMORY_PER_BLOCK = 232448


class Attrs:
    """Launch attributes; set inside ``__call__`` as ``self.attrs.blocks/warps``."""

    blocks = None
    warps = None


class CompiledScript:
    """One specialisation of a script: its IR program and, once needed, its GPU kernel."""

    def __init__(self, script: "Script", program, jit_key: tuple):
        self.script = script
        self.program = program
        self.jit_key = jit_key
        self.gpu = None  # tilus.runtime.GpuKernel, built on the first GPU call
        self._written = None  # names of the pointer parameters the kernel may write
        self._smem_needed = {}  # arch -> shared memory bytes a block needs (check_shared_memory)

    def check_launch(self, args: list, tensors: list, views: bool):
        """Refuse, before anything runs, a launch that would write a read-only tensor,
        (when `views`) whose global views reach past their tensors, or whose views span
        more elements than their 32-bit offsets reach."""
        owner = type(self.script).__name__
        sig = type(self.script)._signature()
        names = [sig.params[i].name for i in sig.runtime_indices]  # = the program's params
        if any(not t.writeable for t in tensors):
            if self._written is None:
                flags = _C.autotune.written_params(self.program)
                self._written = {n for n, w in zip(names, flags) if w}
            for t in tensors:
                if not t.writeable and t.param in self._written:
                    raise ValueError(f"{owner}(): argument '{t.param}' is read-only, but the "
                                     "kernel writes through it")
        # always (the native launcher checks it too): 32-bit offsets would wrap on the GPU
        message = _C.view_offset_overflow(self.program, args)
        if message:
            raise ValueError(f"{owner}(): {message}")
        if views:
            sizes = {t.param: t.nbytes for t in tensors}
            message = _C.view_extent_error(self.program, args,
                                           [sizes.get(n, -1) for n in names])
            if message:
                raise ValueError(f"{owner}(): {message}")

    def run_interpreter(self, args: list, tensors: list):
        self.check_launch(args, tensors, views=True)
        self.check_fits_a_gpu()
        regions = [(t.address, t.nbytes, t.param) for t in tensors]
        _count("interpreter_runs")
        try:
            _C.interpret(self.program, args, regions)
        except errors.NativeError as e:
            raise self.located(e) from None

    def check_fits_a_gpu(self):
        """Refuse in the interpreter, too, a kernel whose shared memory no GPU offers a
        block: what the GPU build lays out for sm_90a against the largest opt-in of any
        target (227 KB: sm_90 and sm_100)."""
        self.check_shared_memory("sm_90a", MAX_SHARED_MEMORY_PER_BLOCK,
                                 f"any GPU offers a block ({MAX_SHARED_MEMORY_PER_BLOCK} on sm_90 / sm_100)")

    def check_shared_memory(self, arch: str, limit: int, offered_by: str):
        """A ScriptRuntimeError at `def __call__` when the kernel's shared memory for `arch`
        (its shared tensors at their peak, barriers and conversion scratch included, as
        codegen lays them out; freed tiles reused) exceeds `limit` bytes, which
        `offered_by` names. The plan is made once per specialisation and arch, and every
        run over the limit is refused; a program the code generator refuses is left to
        the build's own error."""
        needed = self._smem_needed.get(arch)
        if needed is None:
            try:
                needed = _C.generate_cuda(self.program, True, arch)["dynamic_smem"]
            except errors.NativeError:
                needed = 0
            self._smem_needed[arch] = needed
        if needed > limit:
            raise self.refusal(  # a RuntimeError, as the driver's launch refusal is
                f"the kernel needs {needed} bytes of shared memory per block (its shared tensors at their "
                f"peak, as the GPU build lays them out), more than {offered_by}; use smaller tiles or fewer "
                "stages, or free tiles (self.free_shared) before allocating others")

    def note_shared_memory(self, arch: str, nbytes: int):
        """The shared memory a build for `arch` laid out (the autotuner's parallel build), so
        that check_shared_memory does not plan it again."""
        self._smem_needed.setdefault(arch, nbytes)

    def refusal(self, message: str) -> errors.ScriptError:
        """A ScriptRuntimeError saying `message` at the script's `def __call__`: what
        refuses a whole kernel rather than one of its lines."""
        return errors.script_error("RuntimeError", message, *type(self.script)._signature().def_site(),
                                   f"{type(self.script).__name__}.__call__")

    def check_fits_device(self, index: int):
        """Refuse, before the build (NVRTC would compile a kernel the device can never
        launch), a kernel needing more shared memory than device `index` offers a block."""
        device = _C.runtime.device_info(index)
        self.check_shared_memory(device["arch"], device["smem_per_block_optin"],
                                 f"device {index} ({device['name']}, {device['arch']}) offers a block "
                                 f"({device['smem_per_block_optin']})")

    def run_gpu(self, args: list, tensors: list):
        self.check_launch(args, tensors, views=option.get_check_view_bounds())
        try:
            self._launch_gpu(args, tensors)
        except errors.NativeError as e:  # a build refusal: the script line, as on the CPU
            raise self.located(e) from None
        except _C.runtime.LaunchRefusedError as e:
            # the launcher's checks (grid limits, threads the kernel's registers allow):
            # the same words, at the script's def __call__
            raise self.refusal(str(e)) from None

    def located(self, e: "errors.NativeError") -> errors.ScriptError:
        """The core's error `e` as a ScriptError at the script line it names."""
        return errors.script_error(e.kind, e.message, e.file, e.line, e.text,
                                   f"{type(self.script).__name__}.__call__", e.column)

    def _launch_gpu(self, args: list, tensors: list):
        self._ensure_gpu()
        index = launch_device(tensors)
        self.check_fits_device(index)
        if option.debug.get_bounds_check():
            # The checked build compares every access with the tensors' sizes.
            sig = type(self.script)._signature()
            sizes = {t.param: t.nbytes for t in tensors}
            names = [sig.params[i].name for i in sig.runtime_indices]
            self.gpu.launch(args, index, [sizes.get(n, -1) for n in names],
                            f"{type(self.script).__name__}.__call__")
            return  # no native launcher while checking: it would skip the check
        self.gpu.launch(args, index)
        # Later calls with these compile-time values launch natively (launch.cc), on
        # whichever device their tensors are.
        fast = self.script._tilus_fast
        if self.jit_key not in fast and tensors:
            sig = type(self.script)._signature()
            fast[self.jit_key] = self.gpu.fast_launcher(sig, index)
            self.script._tilus_jit = tuple(sig.jit_indices)
            self.script._tilus_nparams = len(sig.params)

    def build_gpu(self, device_index: int, alignment):
        """Compile and load the GPU kernel variant a launch with such arguments will use
        (`alignment`: runtime/launcher.py alignment_of's bits, or a bool), without
        launching it."""
        self.check_fits_device(device_index)
        self._ensure_gpu()
        self.gpu.variant(alignment, device_index)

    def _ensure_gpu(self):
        # Tuning spread over GPUs launches one candidate from several threads.
        if self.gpu is None:
            with _gpu_lock:
                if self.gpu is None:
                    self.gpu = launcher.build(self)


_instances_lock = threading.RLock()  # re-entrant: an __init__ may instantiate another script
_INSTANCES: Dict[tuple, object] = {}


# Values an instance is kept for: plain values and long-lived names (dtypes, classes,
# enum members). Anything else (a tensor, an object made per call) would keep its
# instance, and itself, alive for the whole process: such arguments give a new instance.
_VALUE_TYPES = (type(None), bool, int, float, complex, str, bytes, _C.DataType, type, enum.Enum)


def _instance_key(value):
    """`value` as part of a hashable key that tells apart what differs (1, 1.0 and True
    compare equal in Python, so scalars carry their type), or raise TypeError."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_instance_key(v) for v in value))
    if isinstance(value, dict):
        items = [(_instance_key(k), _instance_key(v)) for k, v in value.items()]
        if all(type(k) is str for k in value):  # keyword arguments: sorted by name
            return ("dict", tuple(sorted(items, key=lambda item: item[0][1])))
        return ("dict", tuple(sorted(items, key=repr)))
    if not isinstance(value, _VALUE_TYPES) and type(value).__module__ + "." + type(value).__name__ != "torch.dtype":
        raise TypeError(f"{type(value).__name__} arguments are not kept")
    hash(value)
    return (type(value), value)


def clear_instances() -> None:
    """Forget the script instances kept for their arguments (_ScriptClass): the next call
    of each script class makes a new one."""
    with _instances_lock:
        _INSTANCES.clear()


class _ScriptClass(abc.ABCMeta):  # ABCMeta: a script may still also derive from abc.ABC
    """Calling a script class with arguments it was called with before gives the same
    object, as in Tilus 0.2 (its InstantiatedScriptCache): programs written for it create
    the script in every call of their wrapper function (`FlashAttention(...)(q, k, v, o)`),
    and a fresh instance would transpile, and a fresh tuned one look its winner up, again
    on every call (milliseconds of host time). Other arguments than plain values
    (_VALUE_TYPES) give a new instance each time."""

    def __call__(cls, *args, **kwargs):
        try:
            # an instance made after an option was set (tilus.option) is a new one, which
            # builds and tunes under the new value
            key = (cls, _instance_key(args), _instance_key(kwargs), option.generation())
        except TypeError:  # arguments other than plain values: nothing to look up by
            return super().__call__(*args, **kwargs)
        instance = _INSTANCES.get(key)
        if instance is None:
            with _instances_lock:
                instance = _INSTANCES.get(key)
                if instance is None:
                    instance = super().__call__(*args, **kwargs)
                    _INSTANCES[key] = instance
        return instance


class Script(_C.ScriptBase, InstructionMixin, metaclass=_ScriptClass):
    """Base class of tilus kernels; see the module docstring."""

    _tilus_kernel_fn = None
    _tilus_signature: Optional[Signature] = None
    # Tilus 0.2's layout helpers, self.cuda.resolve_dot_config(...) (lang/cuda_helpers.py)
    cuda = CudaHelpers()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        kernel = cls.__dict__.get("__call__")
        if kernel is not None:
            # Keep the user's __call__ as the kernel source; calls go to Script.__call__.
            cls._tilus_kernel_fn = kernel
            cls._tilus_signature = None
            delattr(cls, "__call__")

    def __new__(cls, *args, **kwargs):
        space = getattr(cls, "_tilus_tune_space", None)
        if space:
            tuned = tuned_instance_or_none(cls, args, kwargs)
            if tuned is not None:
                return tuned  # not a cls instance, so __init__ is not called again
        return super().__new__(cls)

    def __init__(self):
        self.attrs = Attrs()
        self._tilus_compiled: Dict[tuple, CompiledScript] = {}
        # JIT values -> native launcher (or None); read by _C.ScriptBase.__call__
        self._tilus_fast: Dict[tuple, object] = {}
        self._tilus_lock = threading.Lock()

    # ------------------------------------------------------------------ compilation
    @classmethod
    def _signature(cls) -> Signature:
        sig = cls._tilus_signature
        if sig is None:
            if cls._tilus_kernel_fn is None:
                raise TypeError(f"{cls.__name__} defines no __call__ kernel")
            sig = cls._tilus_signature = Signature(cls._tilus_kernel_fn, cls.__name__)
        return sig

    def _ensure_init(self):
        if not hasattr(self, "_tilus_compiled"):
            raise TypeError(f"{type(self).__name__}.__init__ must call super().__init__()")

    def compile(self, *args, **kwargs) -> CompiledScript:
        """Transpile (once) the specialisation these arguments select."""
        sig = self._signature()
        values = sig.bind(args, kwargs)
        return self._compiled_for(sig, sig.jit_key(values))

    def _compiled_for(self, sig: Signature, key: tuple) -> CompiledScript:
        self._ensure_init()
        compiled = self._tilus_compiled.get(key)
        if compiled is None:
            with self._tilus_lock:
                compiled = self._tilus_compiled.get(key)
                if compiled is None:
                    compiled = CompiledScript(self, self._transpile(sig, key), key)
                    self._tilus_compiled[key] = compiled
                    if option.get_dump_dir():
                        dump_compiled(compiled, option.get_dump_dir())
        return compiled

    def _transpile(self, sig: Signature, key: tuple):
        params = []
        jit_iter = iter(key)
        for p in sig.params:
            params.append((p.name, "jit", next(jit_iter)) if p.jit else (p.name, "runtime", p.type))
        _count("transpiles")
        transpiler = Transpiler(self, type(self)._tilus_kernel_fn, kernel_name(type(self)))
        return transpiler.transpile(params)

    def ir(self, *args, **kwargs) -> str:
        """The IR of the specialisation these arguments select, as text."""
        return str(self.compile(*args, **kwargs).program)

    def source(self, *args, arch=None, **kwargs) -> str:
        """The CUDA C++ source generated for the specialisation these arguments select,
        for ``arch`` ("sm_80", "sm_90a", ...; default: the current GPU's, or a generic
        one without a GPU)."""
        if arch is not None:
            _check_arch(arch, f"{type(self).__name__}.source()")
        return launcher.generate_source(self.compile(*args, **kwargs), arch=arch)

    def compiled(self, *args, **kwargs):
        """Build the kernel for these arguments without running it. The returned
        :class:`tilus.compiled.CompiledKernel` launches with positional arguments like
        these, skipping argument binding and specialisation lookup."""
        sig = self._signature()
        values = sig.bind(args, kwargs)
        jit_key = sig.jit_key(values)
        return CompiledKernel(self, sig, self._compiled_for(sig, jit_key), values)

    # ------------------------------------------------------------------ launch
    # Calling a script runs _C.ScriptBase's C __call__ (csrc/bindings/script_base.cc): a call
    # whose compile-time values have a native launcher launches without a Python frame;
    # everything else comes here.
    def _call(self, args, kwargs):
        if option._interpret[0] and host_run.has_cuda_tensor(args, kwargs):
            return host_run.run_on_host(lambda *a, **k: self._call(a, k), args, kwargs)
        sig = self._signature()
        values = sig.bind(args, kwargs)
        return self._launch(sig, values, sig.jit_key(values))

    def _launch(self, sig: Signature, values: list, jit_key: tuple):
        """Run the specialisation `jit_key` on bound argument `values`."""
        compiled = self._compiled_for(sig, jit_key)
        runtime_args, tensors = prepare_runtime_args(sig, values, type(self).__name__)
        if runs_on_cpu(tensors):
            compiled.run_interpreter(runtime_args, tensors)
        else:
            compiled.run_gpu(runtime_args, tensors)


_ARCH = re.compile(r"sm_(\d{2,3})(a?)")


def _check_arch(arch, where: str):
    """NVRTC -arch values tilus generates code for (what runtime arch_string() gives a GPU
    of compute capability 8.0 or newer, and the plain forms of those)."""
    match = _ARCH.fullmatch(arch) if isinstance(arch, str) else None
    if match:
        major = int(match.group(1)[:-1])
        if major >= 8 and (not match.group(2) or major >= 9):
            return
    kind = ValueError if isinstance(arch, str) else TypeError
    raise kind(f"{where}: arch={arch!r} is not an architecture tilus generates code for. "
               "Accepted: 'sm_<major><minor>' of compute capability 8.0 or newer ('sm_80', "
               "'sm_86', 'sm_87', 'sm_89', 'sm_90', 'sm_100', 'sm_120', ...); with the "
               "suffix 'a' from 9.0 on for the architecture-specific instructions ('sm_90a' "
               "lowers dots to wgmma, 'sm_100a', ...); or None for the current GPU's")



class InstantiatedScript(abc.ABC):
    """Tilus 0.2's name for what calling a Script class gives, ``MatmulV5()``: an instance
    of the script, or of its tuned form when the class is autotuned. For isinstance checks
    and annotations; both kinds are called with the kernel's arguments."""


InstantiatedScript.register(Script)
InstantiatedScript.register(TunedScript)
