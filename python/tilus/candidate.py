"""The candidate interface: what the tuner (tilus/tuning) needs of one configuration of
an autotuned script. The tuner depends on this module and on nothing in tilus.script,
so the package's imports stay a DAG (script -> autotune -> tuning -> candidate).

A candidate is a Script instance. The tuner uses only:

- ``candidate.compile(*args)``: the specialisation the arguments select (transpiled
  once, cached on the instance); ``args`` are the call's positional arguments.
- on that specialisation: ``program`` (the IR program the parallel build compiles),
  ``jit_key`` (the compile-time argument values), ``run_gpu(args, tensors)`` (launch on
  prepared runtime arguments, tilus.arguments.prepare_runtime_args) and
  ``build_gpu(device, alignment)`` (build without launching; runtime/launcher.py
  alignment_of).
- ``kernel_name(cls)`` below: the name the kernel's binaries and tuning results go by.
"""

from __future__ import annotations

from typing import Protocol


class Specialization(Protocol):
    """One compiled specialisation of a candidate (tilus.script.CompiledScript)."""

    program: object
    jit_key: tuple

    def run_gpu(self, args: list, tensors: list) -> None: ...

    def build_gpu(self, device_index: int, alignment) -> None: ...

    def check_fits_a_gpu(self) -> None: ...  # a ScriptError when no GPU has its shared memory

    def note_shared_memory(self, arch: str, nbytes: int) -> None: ...  # what a build for arch laid out


class Candidate(Protocol):
    """One configuration of an autotuned script (a tilus.Script instance)."""

    def compile(self, *args, **kwargs) -> Specialization: ...


def kernel_name(cls) -> str:
    """``MatmulV5`` -> ``matmul_v5``: the generated kernel's name and the prefix of the
    script's tuning results."""
    name = cls.__name__
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper()):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)
