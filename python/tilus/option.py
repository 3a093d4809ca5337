"""Process-wide options: caches, build threads, dumps, tuning and progress bars.

Each option is read from its environment variable whenever it is needed, unless it was
set here, which then wins for the rest of the process::

    tilus.option.cache_dir("/scratch/tilus")   # TILUS_CACHE_DIR (unset: ~/.cache/tilus,
                                               # empty: memory only)
    tilus.option.build_threads(8)              # TILUS_BUILD_THREADS (default: usable cores)
    tilus.option.dump("/tmp/tilus_dump")       # TILUS_DUMP_DIR (default: no dump)
    tilus.option.tuning(warmup=3, repeat=20)   # TILUS_TUNE_WARMUP, TILUS_TUNE_REPEAT,
                                               # TILUS_TUNE_FLUSH_L2, TILUS_TUNE_PRUNE,
                                               # TILUS_TUNE_SPREAD (all identical GPUs)
    tilus.option.distributed_tuning("all")     # TILUS_DIST_TUNING (rank0 | all | off),
                                               # TILUS_DIST_TUNING_TIMEOUT (seconds, 900)
    tilus.option.progress(False)               # TILUS_PROGRESS (default 1: show bars)
    tilus.option.check_view_bounds(True)       # TILUS_CHECK_VIEW_BOUNDS (default 0)
    tilus.option.codegen(wgmma=False)          # TILUS_WGMMA (0: mma.sync only),
                                               # TILUS_UNROLL_BUDGET (default 64),
                                               # TILUS_COPY_TMA (0: copy_async stays
                                               # cp.async on sm_90a), TILUS_FOLD_SCALES
                                               # (0: small-float conversions keep their
                                               # rebias; the same results)
    tilus.option.static_rings(True)            # TILUS_STATIC_RINGS (default 0): pipelined
                                               # loops unrolled by their ring of stages
    tilus.option.interpret(True)               # TILUS_INTERPRET (default 0): GPU tensors
                                               # too run in the CPU interpreter
    tilus.option.debug.race_check(True)        # TILUS_RACE_CHECK (default 1): the
                                               # interpreter reports data races
    tilus.option.debug.uninit_check(True)      # TILUS_UNINIT_CHECK (default 1): and reads
                                               # of uninitialised shared/register elements
    tilus.option.debug.bounds_check(True)      # TILUS_DEBUG_BOUNDS_CHECK (default 0): GPU
                                               # kernels check every global access
    tilus.option.debug.omit("mma")             # TILUS_DEBUG_OMIT (mma | loads; default
                                               # none): GPU kernels built without their
                                               # products or their loads, for timing parts
    tilus.option.debug.hang_check(5.0)         # TILUS_DEBUG_HANG_CHECK (seconds; default
                                               # off): mbarrier waits that give up, print
                                               # their script line and fail the launch
    tilus.option.debug.tune_check(True)        # TILUS_DEBUG_TUNE_CHECK (default 0): a new
                                               # tuning key runs every configuration and
                                               # raises if some disagree


    tilus.option.verify(True)                  # TILUS_VERIFY (default: the build's choice,
                                               # off in installed wheels; on under pytest)

Passing None resets an option to its environment variable / default.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Optional

from tilus import _C

class _Choices(dict):
    """Option name -> value given through this module; every change counts a generation,
    so that what keeps state built under the options (script instances) can tell cheaply
    whether they changed (an environment variable read again costs microseconds)."""

    def __setitem__(self, key, value):
        changed()
        super().__setitem__(key, value)

    def __delitem__(self, key):
        changed()
        super().__delitem__(key)

    def pop(self, key, *default):
        changed()
        return super().pop(key, *default)


_generation = [0]  # changes of the options set through this module


def changed() -> None:
    """Count a change of the options (setters that keep their value in the runtime call it)."""
    _generation[0] += 1


def generation() -> int:
    """How many times options were set through this module: equal numbers, same options."""
    return _generation[0]


_set = _Choices()


def _env(name: str) -> Optional[str]:
    value = os.environ.get(name)
    return value if value else None


def _env_number(name: str, kind, minimum):
    text = _env(name)
    if text is None:
        return None
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"${name}={text!r} is not a valid {kind.__name__}") from None
    if value < minimum:
        raise ValueError(f"${name}={text!r} must be at least {minimum}")
    return value


# ---------------------------------------------------------------------------- cache dir
def cache_dir(path: Optional[str]) -> None:
    """Root of the disk caches (compiled binaries in ``cubin/``, tuning results in
    ``tuning/``). ``""`` keeps everything in memory; None means $TILUS_CACHE_DIR (which
    may be empty too), else ~/.cache/tilus."""
    _C.runtime.compile_cache().set_cache_dir(None if path is None else os.fspath(path))
    changed()


def get_cache_dir() -> str:
    """The cache root in use ("" = memory only). The compile cache holds the truth, so
    the tuning store always lives beside the binaries it refers to."""
    return _C.runtime.compile_cache().cache_dir()


# ---------------------------------------------------------------------------- threads
def build_threads(n: Optional[int]) -> None:
    """Threads that generate and compile autotuning configurations in parallel."""
    if n is not None and (not isinstance(n, int) or n < 1):
        raise ValueError(f"build_threads: expected a positive int, got {n!r}")
    _set["build_threads"] = n


def get_build_threads() -> int:
    """The number of build threads in use: :func:`build_threads`, else
    $TILUS_BUILD_THREADS, else the usable CPU cores.
    """
    n = _set.get("build_threads")
    if n is None:
        n = _env_number("TILUS_BUILD_THREADS", int, 1)
    if n is None:
        try:
            n = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            n = os.cpu_count() or 1
    return n


# ---------------------------------------------------------------------------- dump
def dump(path: Optional[str]) -> None:
    """Write the IR and the CUDA source of every program tilus builds under ``path``."""
    _set["dump"] = None if path is None else os.fspath(path)


def get_dump_dir() -> Optional[str]:
    """The dump directory in use (:func:`dump`, else $TILUS_DUMP_DIR), or None."""
    path = _set.get("dump")
    return path if path is not None else _env("TILUS_DUMP_DIR")


# ---------------------------------------------------------------------------- tuning
@dataclass(frozen=True)
class TuningOptions:
    """How autotuning times candidates (see :func:`tuning`)."""
    warmup: int = 2         # untimed runs of each candidate first
    repeat: int = 10        # timed runs; the median is the candidate's time
    flush_l2: bool = True   # overwrite a buffer larger than L2 before each timed run
    # Stop timing a candidate after its first two timed runs when both are more than
    # `prune` times slower than the best median so far; 0 times every run of every one.
    prune: float = 1.5
    # Time candidates on every visible GPU identical to the key's at once
    # (tilus/tuning/spread.py); off by default: other work on those GPUs biases timings.
    spread: bool = False


def tuning(warmup: Optional[int] = None, repeat: Optional[int] = None,
           flush_l2: Optional[bool] = None, prune: Optional[float] = None,
           spread: Optional[bool] = None) -> None:
    """How candidates are timed; arguments left None keep their current value.
    ``spread=True`` times a key's candidates on all identical visible GPUs in parallel
    ($TILUS_TUNE_SPREAD)."""
    for name, value, kind, minimum in (("warmup", warmup, int, 0), ("repeat", repeat, int, 1),
                                       ("prune", prune, (int, float), 0)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, kind)
                                  or value < minimum):
            raise ValueError(f"tuning: {name} must be a number >= {minimum}, got {value!r}")
    if spread is not None and not isinstance(spread, bool):
        raise TypeError(f"tuning: spread must be a bool, got {spread!r}")
    for name, value in (("warmup", warmup), ("repeat", repeat), ("flush_l2", flush_l2),
                        ("prune", prune), ("spread", spread)):
        if value is not None:
            _set["tuning." + name] = value


def reset_tuning() -> None:
    """Forget the values given to :func:`tuning`; the environment and defaults
    apply again.
    """
    for name in ("warmup", "repeat", "flush_l2", "prune", "spread"):
        _set.pop("tuning." + name, None)


def get_tuning() -> TuningOptions:
    """The tuning options in force: values set by :func:`tuning`, else the
    environment, else the defaults of :class:`TuningOptions`.
    """
    defaults = TuningOptions()

    def pick(name, env, kind, minimum):
        value = _set.get("tuning." + name)
        if value is None:
            value = _env_number(env, kind, minimum)
        return getattr(defaults, name) if value is None else value

    flush = _set.get("tuning.flush_l2")
    if flush is None:
        text = _env("TILUS_TUNE_FLUSH_L2")
        flush = defaults.flush_l2 if text is None else text not in ("0", "false", "no")
    spread = _set.get("tuning.spread")
    if spread is None:
        spread = _env("TILUS_TUNE_SPREAD") not in (None, "0", "false", "no")
    return TuningOptions(warmup=pick("warmup", "TILUS_TUNE_WARMUP", int, 0),
                         repeat=pick("repeat", "TILUS_TUNE_REPEAT", int, 1),
                         flush_l2=bool(flush),
                         prune=float(pick("prune", "TILUS_TUNE_PRUNE", float, 0)),
                         spread=bool(spread))


# ---------------------------------------------------------------------------- ranks
@dataclass(frozen=True)
class DistributedTuning:
    """How ranks of a torch.distributed job agree on tuned configurations
    (python/tilus/tuning/ranks.py; see :func:`distributed_tuning`)."""
    mode: str = "rank0"      # "rank0", "all" or "off"
    timeout_s: float = 900.0  # how long a rank waits for the others' choice


_DIST_MODES = ("rank0", "all", "off")


def distributed_tuning(mode: Optional[str] = None, timeout_s: Optional[float] = None) -> None:
    """When torch.distributed is initialised with several ranks: ``"rank0"`` (default)
    rank 0 tunes each key and the others launch its winner; ``"all"`` every rank times
    every configuration and all launch the best total; ``"off"`` every rank tunes for
    itself. ``timeout_s``: how long a rank waits for the others before raising an error
    naming the kernel and key. Arguments left None keep their current value
    ($TILUS_DIST_TUNING, $TILUS_DIST_TUNING_TIMEOUT)."""
    if mode is not None and mode not in _DIST_MODES:
        raise ValueError(f"distributed_tuning: mode must be one of {_DIST_MODES}, got {mode!r}")
    if timeout_s is not None and (isinstance(timeout_s, bool)
                                  or not isinstance(timeout_s, (int, float)) or timeout_s <= 0):
        raise ValueError(f"distributed_tuning: timeout_s must be a number > 0, got {timeout_s!r}")
    if mode is not None:
        _set["dist.mode"] = mode
    if timeout_s is not None:
        _set["dist.timeout_s"] = float(timeout_s)


def reset_distributed_tuning() -> None:
    """Forget values given to :func:`distributed_tuning`: the environment decides again."""
    _set.pop("dist.mode", None)
    _set.pop("dist.timeout_s", None)


def get_distributed_tuning() -> DistributedTuning:
    """The rank agreement in force (:func:`distributed_tuning`, else the environment,
    else the defaults of :class:`DistributedTuning`)."""
    defaults = DistributedTuning()
    mode = _set.get("dist.mode") or _env("TILUS_DIST_TUNING") or defaults.mode
    if mode not in _DIST_MODES:
        raise ValueError(f"$TILUS_DIST_TUNING={mode!r} must be one of {_DIST_MODES}")
    timeout = _set.get("dist.timeout_s")
    if timeout is None:
        timeout = _env_number("TILUS_DIST_TUNING_TIMEOUT", float, 0.001)
    return DistributedTuning(mode, defaults.timeout_s if timeout is None else float(timeout))


# ---------------------------------------------------------------------------- codegen
@dataclass(frozen=True)
class CodegenChoices:
    """What the code generator is told (csrc/codegen/codegen.h CodegenOptions); the
    launcher and the autotuner's build read these once per build and pass them in as the
    bindings' keyword arguments (:meth:`binding_args`; csrc/bindings/bindings.h
    codegen_options_from reads them by these names)."""

    wgmma: bool = True       # lower qualifying dots to wgmma where the arch has it (sm_90a)
    unroll_budget: int = 64  # operations an unrolled loop body may reach; 0: follow every hint
    copy_tma: bool = True    # on sm_90a, copy_async as TMA copies where every copy of the kernel can
    fold_scales: bool = True  # small-float conversions hand their rebias to the scales (same results)
    omit: str = ""           # tilus.option.debug.omit: "", "mma" or "loads"
    hang_check_ns: int = 0   # tilus.option.debug.hang_check, in nanoseconds (0: off)
    bounds_check: bool = False   # tilus.option.debug.bounds_check
    ptxas_optimize: bool = True  # False: tilus.option.debug.disable_ptxas_opt

    def binding_args(self) -> dict:
        """The keyword arguments of _C.generate_cuda, _C.build_kernel and
        _C.autotune.build_all that give the code generator these choices."""
        return dataclasses.asdict(self)


def codegen(wgmma: Optional[bool] = None, unroll_budget: Optional[int] = None,
            copy_tma: Optional[bool] = None, fold_scales: Optional[bool] = None) -> None:
    """Code generator choices; arguments left None keep their current value."""
    for name, value in (("wgmma", wgmma), ("copy_tma", copy_tma), ("fold_scales", fold_scales)):
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"codegen: {name} must be a bool, got {value!r}")
    if unroll_budget is not None and (isinstance(unroll_budget, bool)
                                      or not isinstance(unroll_budget, int) or unroll_budget < 0):
        raise ValueError(f"codegen: unroll_budget must be an int >= 0, got {unroll_budget!r}")
    for name, value in (("wgmma", wgmma), ("unroll_budget", unroll_budget), ("copy_tma", copy_tma),
                        ("fold_scales", fold_scales)):
        if value is not None:
            _set["codegen." + name] = value


def reset_codegen() -> None:
    """Forget choices set with :func:`codegen`: the environment decides again."""
    for name in ("wgmma", "unroll_budget", "copy_tma", "fold_scales"):
        _set.pop("codegen." + name, None)


def get_codegen() -> CodegenChoices:
    """The code generator choices a build uses now: those set with :func:`codegen`, else
    $TILUS_WGMMA (``0``: mma.sync instead of wgmma on sm_90a), $TILUS_UNROLL_BUDGET and
    $TILUS_COPY_TMA (``0``: copy_async stays cp.async on sm_90a) and $TILUS_FOLD_SCALES
    (``0``: small-float conversions keep their rebias multiplication)."""
    def switch(name, variable):  # on unless the variable is "0"
        value = _set.get("codegen." + name)
        return _env(variable) != "0" if value is None else value

    defaults = CodegenChoices()
    budget = _set.get("codegen.unroll_budget")
    if budget is None:
        budget = _env_number("TILUS_UNROLL_BUDGET", int, 0)
    omit = _set.get("debug.omit")
    if omit is None:
        omit = _env("TILUS_DEBUG_OMIT") or ""
        if omit not in OMIT_PARTS:
            raise ValueError(f"TILUS_DEBUG_OMIT must be one of {', '.join(p for p in OMIT_PARTS if p)} or "
                             f"empty, got {omit!r}")
    seconds = _set.get("debug.hang_check")
    if seconds is None:
        seconds = _env_number("TILUS_DEBUG_HANG_CHECK", float, 0.0) or 0.0
    return CodegenChoices(wgmma=switch("wgmma", "TILUS_WGMMA"),
                          unroll_budget=defaults.unroll_budget if budget is None else budget,
                          copy_tma=switch("copy_tma", "TILUS_COPY_TMA"),
                          fold_scales=switch("fold_scales", "TILUS_FOLD_SCALES"), omit=omit,
                          hang_check_ns=int(seconds * 1e9), bounds_check=debug.get_bounds_check(),
                          ptxas_optimize=not debug.get_disable_ptxas_opt())


OMIT_PARTS = ("", "mma", "loads")  # what tilus.option.debug.omit may leave out


# ---------------------------------------------------------------------------- static rings
def static_rings(enabled: Optional[bool]) -> None:
    """Unroll a pipelined loop by its ring of stages: a ``self.range(..., unroll=S)`` loop
    whose stage counters advance as ``v = (v + 1) % S`` (declared to a constant just
    before) is transpiled as S copies of its body per iteration, each with the counters
    as compile-time constants, so that the stages' shared addresses fold into the
    instructions (docs/script.md). Off by default until measured on a GPU."""
    if enabled is not None and not isinstance(enabled, bool):
        raise TypeError(f"static_rings: enabled must be a bool or None, got {enabled!r}")
    _set["static_rings"] = enabled


def get_static_rings() -> bool:
    """Whether pipelined loops are unrolled by their ring (:func:`static_rings`, else
    $TILUS_STATIC_RINGS, default 0)."""
    enabled = _set.get("static_rings")
    if enabled is None:
        enabled = _env_flag("TILUS_STATIC_RINGS", False)  # read as every other switch
    return bool(enabled)


# ---------------------------------------------------------------------------- progress
def progress(enabled: Optional[bool]) -> None:
    """Show the [Building] and [Tuning] progress bars (needs tqdm)."""
    _set["progress"] = enabled


def get_progress() -> bool:
    """Whether progress bars are shown (:func:`progress`, else $TILUS_PROGRESS)."""
    enabled = _set.get("progress")
    if enabled is None:
        enabled = _env("TILUS_PROGRESS") not in ("0", "false", "no")
    return bool(enabled)


# ---------------------------------------------------------------------------- view bounds
def check_view_bounds(enabled: Optional[bool]) -> None:
    """Before a GPU launch, check every global view whose extent the host can evaluate
    from the arguments (``global_view(y_ptr, shape=[n])``) against the tensor behind
    its pointer, and refuse the launch naming the parameter, the view's shape and the
    tensor's size. CPU (interpreter) launches always check. Off by default: then the
    native launch path reads one flag and does nothing more. None: $TILUS_CHECK_VIEW_BOUNDS
    (read now; the native launcher sees the value this function last set)."""
    if enabled is None:
        enabled = _env("TILUS_CHECK_VIEW_BOUNDS") not in (None, "0", "false", "no")
    _C.set_check_view_bounds(bool(enabled))


def get_check_view_bounds() -> bool:
    """Whether GPU launches check global views against their tensors first (see
    :func:`check_view_bounds`)."""
    return _C.check_view_bounds()


check_view_bounds(None)


# ---------------------------------------------------------------------------- interpret
_interpret = [False]  # read on every call of a script: a list cell, no dict lookup


def interpret(enabled: Optional[bool]) -> None:
    """Run every kernel call in the CPU interpreter, also calls with CUDA tensors: their
    contents are copied to the host, the kernel is interpreted (with its out-of-bounds,
    semaphore and deadlock checks) and the tensors it changed are copied back. A failing
    GPU program can so be debugged unchanged. Autotuned scripts take the interpreter's
    configuration choice (the first that compiles). None: $TILUS_INTERPRET (read now)."""
    if enabled is None:
        enabled = _env("TILUS_INTERPRET") not in (None, "0", "false", "no")
    if not isinstance(enabled, bool):
        raise TypeError(f"interpret: enabled must be a bool or None, got {enabled!r}")
    _interpret[0] = enabled
    _C.set_interpret_everything(enabled)


def get_interpret() -> bool:
    """Whether every call runs in the CPU interpreter (:func:`interpret`)."""
    return _interpret[0]


interpret(None)


# ---------------------------------------------------------------------------- verifier
def verify(enabled: Optional[bool]) -> None:
    """Run the IR verifier (csrc/ir/verifier.h) after the builder and after every pass:
    a pass that breaks an invariant of the IR then fails naming the script line and the
    pass, instead of producing wrong code. It costs time on every build, so it is off in
    the wheels users install; debug and developer builds (scripts/dev_build.sh) turn it
    on, and so does the test suite (tests/conftest.py). None: $TILUS_VERIFY (``0`` or
    ``1``, read now), else the build's default."""
    if enabled is None:
        text = _env("TILUS_VERIFY")
        enabled = _C.verify_build_default() if text is None else text not in ("0", "false", "no")
    _C.set_verify(bool(enabled))


def get_verify() -> bool:
    """Whether the verifier runs after the builder and every pass (see :func:`verify`)."""
    return _C.verify_enabled()


verify(None)


# ---------------------------------------------------------------------------- debug checks
def _env_flag(name: str, default: bool) -> bool:
    text = _env(name)
    if text is None:
        return default
    return text not in ("0", "false", "no")


class _DebugOptions:
    """The debugging checks, ``tilus.option.debug.<name>(enabled)``::

        tilus.option.debug.race_check(True)    # TILUS_RACE_CHECK (default 1)
        tilus.option.debug.uninit_check(True)  # TILUS_UNINIT_CHECK (default 1)
        tilus.option.debug.bounds_check(True)  # TILUS_DEBUG_BOUNDS_CHECK (default 0)

    The first two are the CPU interpreter's (docs/interpreter.md, "The interpreter as a
    debugger"); bounds_check compiles GPU kernels with a check on every global access
    (the interpreter always checks them).
    None resets an option to its environment variable (read now) / default.
    """

    @staticmethod
    def _flag(name: str, env: str, default: bool, enabled: Optional[bool]) -> bool:
        if enabled is None:
            enabled = _env_flag(env, default)
        if not isinstance(enabled, bool):
            raise TypeError(f"debug.{name}: enabled must be a bool or None, got {enabled!r}")
        return enabled

    def race_check(self, enabled: Optional[bool]) -> None:
        """In the CPU interpreter, report a data race as ScriptDataRaceError: two threads
        of a block touching one shared or global element between two barriers, at least
        one writing, or two blocks touching one global element, at least one writing,
        that no release_semaphore -> lock_semaphore chain orders. Threads are the ones
        the GPU code uses (the inferred layouts). On by default (its cost is small; see
        docs/interpreter.md). None: $TILUS_RACE_CHECK."""
        races = self._flag("race_check", "TILUS_RACE_CHECK", True, enabled)
        _C.set_interp_checks(races, _C.interp_checks()[1])

    def get_race_check(self) -> bool:
        """Whether the interpreter checks for data races (:meth:`race_check`)."""
        return _C.interp_checks()[0]

    def uninit_check(self, enabled: Optional[bool]) -> None:
        """In the CPU interpreter, report as ScriptUninitializedReadError a read of a shared
        element that nothing wrote, or of a register tensor declared without init before
        anything was assigned to it. On by default. None: $TILUS_UNINIT_CHECK."""
        uninit = self._flag("uninit_check", "TILUS_UNINIT_CHECK", True, enabled)
        _C.set_interp_checks(_C.interp_checks()[0], uninit)

    def get_uninit_check(self) -> bool:
        """Whether the interpreter checks for uninitialised reads (:meth:`uninit_check`)."""
        return _C.interp_checks()[1]

    def bounds_check(self, enabled: Optional[bool]) -> None:
        """Compile GPU kernels with a check on every global-memory access (loads, stores,
        copy_async sources, atomics, scatter stores, ``g[i, j]`` element reads,
        semaphores): an access outside the tensor passed for its pointer is skipped (a
        load reads 0, nothing is written) and, after the launch, raised as
        :class:`tilus.lang.errors.ScriptBoundsError` naming the script line, the
        instruction, the tensor, the element and the block and thread. Checked kernels
        are separate builds (their own compile cache entries); launches synchronise and
        go through the Python launcher while this is on. Off by default; TMA copies are
        not checked. CPU (interpreter) runs always check. None: $TILUS_DEBUG_BOUNDS_CHECK."""
        checked = self._flag("bounds_check", "TILUS_DEBUG_BOUNDS_CHECK", False, enabled)
        _C.set_bounds_check(checked)
        changed()

    def get_bounds_check(self) -> bool:
        """Whether GPU kernels are built and launched with the bounds check
        (:meth:`bounds_check`)."""
        return _C.bounds_check()

    def disable_ptxas_opt(self, enabled: bool = True) -> None:
        """Compile GPU kernels with ptxas's optimisations off (``-O0``): slow code whose
        SASS follows the PTX, for debugging it (Tilus 0.2's option). The same source with
        another compile option: its own cache entries. None: $TILUS_DISABLE_PTXAS_OPT."""
        _set["disable_ptxas_opt"] = self._flag("disable_ptxas_opt", "TILUS_DISABLE_PTXAS_OPT", False, enabled)

    def get_disable_ptxas_opt(self) -> bool:
        """Whether GPU kernels are compiled with ptxas -O0 (:meth:`disable_ptxas_opt`)."""
        value = _set.get("disable_ptxas_opt")
        return _env_flag("TILUS_DISABLE_PTXAS_OPT", False) if value is None else value

    def tune_check(self, enabled: Optional[bool]) -> None:
        """When an autotuned script chooses a configuration for a new tuning key, run
        every configuration on that call's arguments too and raise
        :class:`tilus.tuning.check.ConfigurationMismatchError` if some disagree with the
        first that ran (``TunedScript.check_configs``, docs/autotune.md): the tuner keeps
        the fastest, and a configuration that skips work is fast. For test runs; each new
        key then costs one run of every configuration. None: $TILUS_DEBUG_TUNE_CHECK
        (default off)."""
        _set["debug.tune_check"] = self._flag("tune_check", "TILUS_DEBUG_TUNE_CHECK", False, enabled)

    def get_tune_check(self) -> bool:
        """Whether new tuning keys check every configuration (:meth:`tune_check`)."""
        value = _set.get("debug.tune_check")
        return _env_flag("TILUS_DEBUG_TUNE_CHECK", False) if value is None else value

    def omit(self, part: Optional[str]) -> None:
        """Build GPU kernels without one part, to time the rest: ``"mma"`` leaves out
        every product (``dot``, ``wgmma.mma``: a dot's output is its accumulator), so a
        run times the loads, the waits and everything else; ``"loads"`` leaves out every
        copy into shared memory (``copy_async``, ``tma.global_to_shared``), and the
        arrivals that expected their bytes arrive without expecting any, so every wait
        still completes: a run times the math on whatever shared memory holds. Such
        kernels compute wrong results by design -- for timing only (how much of a
        kernel's time each side takes alone, and so which one bounds it). Their own
        builds and cache entries; the CPU interpreter is unaffected. None:
        $TILUS_DEBUG_OMIT (default: nothing left out)."""
        if part is None:
            _set.pop("debug.omit", None)
            return
        if part not in OMIT_PARTS or not part:
            raise ValueError(f"debug.omit: part must be 'mma', 'loads' or None, got {part!r}")
        _set["debug.omit"] = part

    def hang_check(self, seconds: Optional[float]) -> None:
        """Build GPU kernels whose mbarrier waits (``self.mbarrier.wait`` and the waits of
        copy_async's TMA lowering) give up after `seconds`: the waiting thread prints the
        wait's script file and line, the barrier, the phase and its block and thread, and
        traps, so the launch fails with a CUDA error instead of hanging the GPU (a wait
        whose arrivals or bytes never come: a wrong transaction count the build-time check
        could not follow, a producer that skipped a stage). After the trap the CUDA context
        is unusable: the process has to start again. Checked kernels are their own builds;
        the CPU interpreter reports such deadlocks itself. A positive number of seconds, or
        0 / None ($TILUS_DEBUG_HANG_CHECK, default off)."""
        if seconds is None:
            _set.pop("debug.hang_check", None)
            return
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ValueError(f"debug.hang_check: seconds must be a number >= 0 or None, got {seconds!r}")
        _set["debug.hang_check"] = float(seconds)

    def get_hang_check(self) -> float:
        """The seconds after which GPU waits give up (:meth:`hang_check`; 0: never)."""
        return get_codegen().hang_check_ns / 1e9

    def get_omit(self) -> str:
        """What GPU builds leave out now (:meth:`omit`): "", "mma" or "loads"."""
        return get_codegen().omit

    def dump_ir(self, enable: bool = True) -> None:
        """Tilus 0.2's switch for keeping the IR (and here the CUDA source) of what is
        built: on, into ``<cache dir>/dump`` (:func:`tilus.option.dump` picks the folder);
        off, nothing is kept."""
        if not isinstance(enable, bool):
            raise TypeError(f"debug.dump_ir: enable must be a bool, got {enable!r}")
        dump(os.path.join(get_cache_dir(), "dump") if enable else None)


debug = _DebugOptions()
debug.race_check(None)
debug.uninit_check(None)
debug.bounds_check(None)


# ---- Tilus 0.2's spellings ---------------------------------------------------------------


def parallel_workers(n: int) -> None:
    """Tilus 0.2's name for :func:`build_threads`: how many configurations compile at once."""
    build_threads(n)


def bench_warmup(n: int) -> None:
    """Tilus 0.2's name for ``tuning(warmup=n)``: untimed runs of each candidate."""
    tuning(warmup=n)


def bench_repeat(n: int) -> None:
    """Tilus 0.2's name for ``tuning(repeat=n)``: timed runs of each candidate."""
    tuning(repeat=n)


def get_option(name: str):
    """An option's value by Tilus 0.2's name: ``cache_dir``, ``parallel_workers``,
    ``bench_warmup``, ``bench_repeat``, ``debug.dump_ir``."""
    getters = {
        "cache_dir": get_cache_dir,
        "parallel_workers": get_build_threads,
        "bench_warmup": lambda: get_tuning().warmup,
        "bench_repeat": lambda: get_tuning().repeat,
        "debug.dump_ir": lambda: get_dump_dir() is not None,
    }
    if name not in getters:
        raise KeyError(f"get_option: no option {name!r}; the options are {sorted(getters)}")
    return getters[name]()
