"""Compiled kernels: separate compilation from execution (CuTe DSL's ``cute.compile``).

``handle = kernel.compiled(*args)`` transpiles and, for GPU arguments, compiles and
loads the kernel now, without running it. ``handle(*args)`` then launches with the
least host work tilus can do: arguments are positional, the compile-time (JIT)
arguments are only compared with the ones the handle was built for, there is no
specialisation or tuning lookup, and from the second call on the script's native launch
path (runtime/launcher.py ``fast_launcher``) does the rest. The handle stays valid for
other tensors and runtime values (a different pointer alignment compiles the other
variant on first use).
"""

from __future__ import annotations

from tilus import _C, host_run, option
from tilus.arguments import prepare_runtime_args
from tilus.runtime import driver_available
from tilus.runtime.launcher import alignment_of


def runs_on_cpu(tensors) -> bool:
    """Whether a call with these tensor arguments runs in the CPU interpreter: its tensors
    live on the CPU, or it has none and there is no GPU."""
    if tensors:
        return tensors[0].device == "cpu"
    return not driver_available()


def launch_device(tensors) -> int:
    """The CUDA device a GPU call launches on: its tensors' (prepare_runtime_args has
    refused tensors on different devices, naming them), else the current device."""
    if tensors:
        device = tensors[0].device
        return int(device.split(":")[1]) if ":" in device else 0
    return _C.runtime.current_device()


class CompiledKernel:
    """A kernel built for one set of compile-time arguments, ready to launch; made by
    ``Script.compiled(*args)`` or ``TunedScript.compiled(*args)``. Call it with the
    kernel's arguments, positionally.
    """
    def __init__(self, script, sig, compiled, values: list):
        self.script = script
        self.sig = sig
        self.compiled = compiled  # tilus.script.CompiledScript
        self._owner = type(script).__name__
        self._count = len(sig.params)
        self._jit = [(i, values[i]) for i in sig.jit_indices]
        self._fast = script._tilus_fast or {}
        runtime_args, tensors = prepare_runtime_args(sig, values, self._owner)
        if not runs_on_cpu(tensors):
            compiled.build_gpu(launch_device(tensors), alignment_of(compiled.program, runtime_args))

    def __repr__(self):
        jit = ", ".join(f"{self.sig.params[i].name}={v!r}" for i, v in self._jit)
        return f"<compiled {self._owner}({jit})>"

    @property
    def program(self):
        """The kernel's IR program (``str()`` prints it)."""
        return self.compiled.program

    def __call__(self, *args):
        if len(args) != self._count:
            missing = self.sig.names[len(args):]
            why = f": missing {', '.join(repr(n) for n in missing)}" if missing else ""
            raise TypeError(f"{self._owner} (compiled) takes {self._count} positional "
                            f"arguments ({', '.join(self.sig.names)}), got {len(args)}{why}")
        for i, value in self._jit:
            if args[i] != value:
                raise ValueError(f"{self._owner} (compiled): compile-time argument "
                                 f"'{self.sig.params[i].name}' is {args[i]!r}, but this "
                                 f"handle was compiled for {value!r}; call .compiled() again")
        # The script's native launcher for these JIT values (made by its first GPU launch)
        # checks everything else and launches without Python; False: take the slow path.
        if option._interpret[0] and host_run.has_cuda_tensor(args, {}):
            return host_run.run_on_host(self, args, {})
        fast = self._fast.get(self.compiled.jit_key)
        if fast is not None and fast(*args):
            return
        runtime_args, tensors = prepare_runtime_args(self.sig, args, self._owner)
        if tensors and tensors[0].device == "cpu":
            self.compiled.run_interpreter(runtime_args, tensors)
        else:
            self.compiled.run_gpu(runtime_args, tensors)
