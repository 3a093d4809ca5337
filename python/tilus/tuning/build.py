"""Building every configuration of a tuning: transpile in Python, then generate CUDA and
compile with NVRTC for all of them at once on native threads (``_C.autotune.build_all``,
GIL released). Programs that cannot run on the GPU are dropped before compiling."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from tilus import _C, option
from tilus.tuning.progress import Progress


@dataclass
class Failure:
    """Why one configuration was not a candidate."""

    stage: str    # "init", "script" (transpile), "unfit", "codegen", "compile", "launch"
    message: str

    # Failures the user should hear about when others worked: the script asked for
    # something that broke, not for something this GPU simply cannot hold.
    @property
    def unexpected(self) -> bool:
        return self.stage in ("codegen", "compile", "launch")


@dataclass
class Candidate:
    index: int                   # into TunedScript.configs
    config: dict
    instance: object             # the Script instance of this configuration
    compiled: object             # its CompiledScript for the tuning's JIT values
    # The generated kernel (name, threads, dynamic_smem, source, build times); the binary
    # itself stays in the compile cache, where the launch finds it.
    meta: Dict = field(default_factory=dict)


@dataclass
class GpuTarget:
    """What the build needs to know about the GPU."""

    device: int
    name: str
    arch: str
    smem_limit: int   # dynamic shared memory one block may use (the opt-in limit)
    max_threads: int  # threads one block may have

    @staticmethod
    def of_device(device: int) -> "GpuTarget":
        info = _C.runtime.device_info(device)
        return GpuTarget(device, info["name"], info["arch"], info["smem_per_block_optin"],
                         info["max_threads_per_block"])


def transpile_all(tuned, sig, jit_key: tuple) -> Tuple[List[Candidate], Dict[int, Failure]]:
    """One Candidate per configuration that constructs and transpiles."""
    from tilus.lang.errors import ScriptError

    candidates, failures = [], {}
    for i in range(len(tuned.configs)):
        try:
            instance = tuned.instance(i)
        except Exception as e:  # the user's __init__ rejected this configuration
            failures[i] = Failure("init", f"{type(e).__name__}: {e}")
            continue
        try:
            compiled = instance._compiled_for(sig, jit_key)
        except ScriptError as e:
            failures[i] = Failure("script", e.message)
            continue
        candidates.append(Candidate(i, tuned.configs[i], instance, compiled))
    return candidates, failures


def build_candidates(candidates: List[Candidate], target: GpuTarget, aligned: bool,
                     label: str) -> Tuple[List[Candidate], Dict[int, Failure]]:
    """Compile every candidate in parallel; returns those that built, and failures."""
    programs = [c.compiled.program for c in candidates]
    with Progress(f"[Building] {label}", len(programs)) as bar:
        results = _C.autotune.build_all(programs, aligned, target.arch,
                                        threads=option.get_build_threads(),
                                        smem_limit=target.smem_limit,
                                        max_threads=target.max_threads,
                                        progress=bar.advance_to)
    for message in _C.runtime.compile_cache().take_warnings():  # as runtime/launcher.py does
        warnings.warn(f"tilus cache: {message}", RuntimeWarning, stacklevel=2)
    built, failures = [], {}
    for candidate, (payload, meta) in zip(candidates, results):
        candidate.meta = meta
        if meta["status"] == "ok":
            built.append(candidate)
        else:
            failures[candidate.index] = Failure(meta["status"], payload)
    _dump(candidates, failures, label)
    return built, failures


def _dump(candidates: List[Candidate], failures: Dict[int, Failure], label: str):
    """With tilus.option.dump(dir): <dir>/<label>/<index>.ir and .cu for every program,
    and configs.txt saying which configuration each index is and how its build went."""
    root = option.get_dump_dir()
    if not root:
        return
    from tilus.tuning.identity import slug

    folder = os.path.join(root, slug(label))
    os.makedirs(folder, exist_ok=True)
    lines = []
    for c in candidates:
        with open(os.path.join(folder, f"{c.index:04d}.ir"), "w") as f:
            f.write(str(c.compiled.program))
        if c.meta.get("source"):
            with open(os.path.join(folder, f"{c.index:04d}.cu"), "w") as f:
                f.write(c.meta["source"])
        failure = failures.get(c.index)
        status = "ok" if failure is None else f"{failure.stage}: {failure.message}"
        lines.append(f"{c.index:04d} {c.config!r} {status}")
    with open(os.path.join(folder, "configs.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
