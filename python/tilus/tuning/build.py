"""Building every configuration of a tuning: transpile in Python, then generate CUDA and
compile with NVRTC for all of them at once on native threads (``_C.autotune.build_all``,
GIL released). Programs that cannot run on the GPU are dropped before compiling."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from tilus import _C, option
from tilus.lang.errors import ScriptError, script_error
from tilus.runtime.launcher import alignment_key, build_args
from tilus.tuning.identity import slug
from tilus.tuning.progress import Progress


@dataclass
class Failure:
    """Why one configuration was not a candidate."""

    stage: str    # "init", "script" (transpile), "unfit", "codegen", "compile", "launch"
    message: str
    # The exception itself, for "init" (the user's __init__ raised), "script" and
    # "codegen" (a ScriptError); see common_error.
    error: Optional[BaseException] = field(default=None, compare=False)

    @property
    def reason(self) -> str:
        """The failure as one heading: stage, message and, for script errors, the line."""
        where = ""
        if isinstance(self.error, ScriptError) and self.error.line:
            where = f" ({os.path.basename(self.error.file)}:{self.error.line})"
        text = self.error.message if isinstance(self.error, ScriptError) else self.message
        return f"[{self.stage}] {text.strip()}{where}"

    # Failures the user should hear about when others worked: the script asked for
    # something that broke, not for something this GPU simply cannot hold.
    @property
    def unexpected(self) -> bool:
        return self.stage in ("codegen", "compile", "launch")


@dataclass
class Candidate:
    index: int                   # into TunedScript.configs
    config: dict
    instance: object             # the Script instance of this configuration (tilus.candidate.Candidate)
    compiled: object             # its specialisation for the tuning's arguments (.Specialization)
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


def transpile_all(tuned, values: list) -> Tuple[List[Candidate], Dict[int, Failure]]:
    """One Candidate per configuration that constructs and transpiles for these
    (positional) arguments."""
    candidates, failures = [], {}
    for i in range(len(tuned.configs)):
        try:
            instance = tuned.instance(i)
        except Exception as e:  # the user's __init__ rejected this configuration
            failures[i] = Failure("init", f"{type(e).__name__}: {e}", e)
            continue
        try:
            compiled = instance.compile(*values)  # the candidate interface (tilus/candidate.py)
        except ScriptError as e:
            failures[i] = Failure("script", e.message, e)
            continue
        candidates.append(Candidate(i, tuned.configs[i], instance, compiled))
    return candidates, failures


def common_error(failures: Dict[int, Failure], count: int) -> Optional[BaseException]:
    """The one error that all `count` configurations failed with, or None.

    An error that does not depend on the configuration (an unknown instruction, a type
    error on a line no tuned value reaches) is a mistake in the script: it is raised as
    itself, once, instead of being listed for every configuration. Configurations that
    the user's ``__init__`` rejected do not count against this when all the others
    failed alike later (no configuration could have run)."""
    if not count or len(failures) != count:
        return None
    later = [f for f in failures.values() if f.stage != "init"] or list(failures.values())
    first = later[0]
    if first.error is None:
        return None
    for f in later[1:]:
        if f.stage != first.stage or not _same_error(f.error, first.error):
            return None
    return first.error


def _same_error(a: Optional[BaseException], b: BaseException) -> bool:
    if isinstance(a, ScriptError) and isinstance(b, ScriptError):
        return a.same_error(b)
    return a is not None and type(a) is type(b) and str(a) == str(b)


def describe_failures(configs: List[dict], failures: Dict[int, Failure], shown: int = 6) -> str:
    """The failures grouped by reason, in product order of each group's first
    configuration; each group lists (up to `shown` of) its configurations."""
    groups: Dict[str, List[int]] = {}
    for i in sorted(failures):
        groups.setdefault(failures[i].reason, []).append(i)
    lines = []
    for reason, indices in groups.items():
        n = len(indices)
        heading = reason.replace("\n", "\n      ")
        lines.append(f"  {heading}\n    {n} configuration{'s' if n != 1 else ''}: "
                     + ", ".join(str(configs[i]) for i in indices[:shown])
                     + (f", ... and {n - shown} more" if n > shown else ""))
    return "\n".join(lines)


def build_candidates(candidates: List[Candidate], target: GpuTarget, aligned,
                     label: str) -> Tuple[List[Candidate], Dict[int, Failure]]:
    """Compile every candidate in parallel; returns those that built, and failures.
    `aligned` is the build variant (as GpuKernel.variant takes it: True, False, or the
    bits of runtime/launcher.py alignment_of): one for all, or a list, one per candidate
    (candidates may differ in their vector extent parameters)."""
    flags = list(aligned) if isinstance(aligned, (list, tuple)) else [aligned] * len(candidates)
    keys = [alignment_key(f) for f in flags]
    choices = option.get_codegen()  # as runtime/launcher.py reads them, so the keys agree
    results = [None] * len(candidates)
    with Progress(f"[Building] {label}", len(candidates)) as bar:
        done = 0
        for key in sorted(set(keys)):
            group = [k for k, f in enumerate(keys) if f == key]
            offset = done
            pointers_aligned, extra = build_args(key)
            group_results = _C.autotune.build_all(
                [candidates[k].compiled.program for k in group], pointers_aligned, target.arch,
                threads=option.get_build_threads(), smem_limit=target.smem_limit,
                max_threads=target.max_threads, progress=lambda n: bar.advance_to(offset + n),
                **choices.binding_args(), **extra)
            for k, r in zip(group, group_results):
                results[k] = r
            done += len(group)
    for message in _C.runtime.compile_cache().take_warnings():  # as runtime/launcher.py does
        warnings.warn(f"tilus cache: {message}", RuntimeWarning, stacklevel=2)
    built, failures = [], {}
    for candidate, (payload, meta) in zip(candidates, results):
        candidate.meta = meta
        if meta["status"] == "ok":
            # its launches check the device's limit against this plan instead of making it again
            candidate.compiled.note_shared_memory(target.arch, meta["dynamic_smem"])
            built.append(candidate)
        else:
            error = None
            if meta.get("script_error"):
                kind, message, file, line, column, text = meta["script_error"]
                error = script_error(kind, message, file, line, text,
                                     f"{type(candidate.instance).__name__}.__call__", column)
            failures[candidate.index] = Failure(meta["status"], payload, error)
    _dump(candidates, failures, label)
    return built, failures


def _dump(candidates: List[Candidate], failures: Dict[int, Failure], label: str):
    """With tilus.option.dump(dir): <dir>/<label>/<index>.ir and .cu for every program,
    and configs.txt saying which configuration each index is and how its build went."""
    root = option.get_dump_dir()
    if not root:
        return
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
