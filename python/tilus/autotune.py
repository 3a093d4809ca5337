"""``@tilus.autotune``: hyper-parameter search spaces of a Script.

Stacked decorators form the Cartesian product of their value lists, in reading order
(the top decorator varies slowest). Instantiating the class without the tuned arguments
returns a :class:`TunedScript`, which picks a configuration per tuning key on the first
call with that key (tilus/tuning/) and afterwards only looks the winner up. Passing a
tuned argument explicitly fixes it.

On the GPU every configuration is built in parallel and timed; the winner is stored on
disk. On the CPU interpreter no timing happens: the first configuration, in product
order, that compiles for the arguments (and fits a GPU's shared memory) is used. docs/autotune.md has the whole story.
"""

from __future__ import annotations

import inspect
import itertools
import linecache
import sys
import threading
from typing import Callable, Dict, Iterable, List, Sequence, Tuple

from tilus import _C, host_run, option
from tilus.logging import get_logger
from tilus.arguments import prepare_runtime_args
from tilus.lang import errors
from tilus.lang.errors import ScriptError
from tilus.tuning import check, tuner
from tilus.tuning.identity import script_identity
from tilus.tuning.key import KeyMaker
from tilus.tuning.tuner import NoValidConfigError

# Counters of the tuning machinery (tests and benchmarks read them): "tunings" (keys
# tuned by building and timing), "store_hits" (keys answered by the disk store),
# "configs_built", "configs_timed".
STATS = tuner.STATS

__all__ = ["autotune", "autotune_key", "TunedScript", "NoValidConfigError", "STATS"]


class SearchSpace:
    def __init__(self):
        self.axes: List[Tuple[Tuple[str, ...], List[tuple]]] = []

    def names(self) -> List[str]:
        return [n for names, _ in self.axes for n in names]

    def configs(self, fixed: Dict[str, object]) -> List[Dict[str, object]]:
        """Every configuration, in product order, restricted to those that agree with
        the explicitly given values."""
        out = []
        for combo in itertools.product(*[values for _, values in self.axes]):
            config = {}
            for (names, _), values in zip(self.axes, combo):
                config.update(zip(names, values))
            if all(config.get(k, v) == v for k, v in fixed.items()):
                for k in fixed:
                    config.pop(k, None)
                if config not in out:
                    out.append(config)
        return out


def autotune(arg_names: str, arg_values: Sequence):
    """Declare a search space: ``@tilus.autotune("block_k", [16, 32])`` or
    ``@tilus.autotune("block_m, block_n", [(128, 128), (64, 128)])``."""
    if not isinstance(arg_names, str):
        raise _located(TypeError, "autotune: the first argument is a comma-separated string "
                                  "of names")
    names = tuple(n.strip() for n in arg_names.split(","))
    if not all(n.isidentifier() for n in names):
        raise _located(ValueError, f"autotune: bad parameter names {arg_names!r}")
    if len(set(names)) != len(names):
        raise _located(ValueError, f"autotune: {arg_names!r} names a parameter twice")
    # A string is iterable, but "12" as the values of block_n means [12] or ["12"], never
    # the two configurations '1' and '2'.
    if isinstance(arg_values, (str, bytes)) or not isinstance(arg_values, Iterable):
        raise _located(TypeError, f"autotune({arg_names!r}): the values of {_named(names)} "
                                  f"must be a list or tuple, got {type(arg_values).__name__} "
                                  f"{arg_values!r}")
    values = list(arg_values)
    if not values:
        raise _located(ValueError, f"autotune({arg_names!r}): the list of values is empty")
    rows = []
    for v in values:
        if len(names) > 1 and (not isinstance(v, (tuple, list)) or len(v) != len(names)):
            raise _located(ValueError, f"autotune({arg_names!r}): each value must be a tuple "
                                       f"of {len(names)} items, got {v!r}")
        rows.append(tuple(v) if len(names) > 1 else (v,))

    def decorate(cls):
        if not _is_script_class(cls):
            raise TypeError("@tilus.autotune decorates a tilus.Script subclass")
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        takes_any = any(p.kind == p.VAR_KEYWORD for p in params)
        init_params = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        for n in names:
            if n not in init_params and not takes_any:
                raise ValueError(f"autotune: {cls.__name__}.__init__ has no parameter '{n}' "
                                 f"(it takes {', '.join(init_params) or 'nothing'})")
        space = SearchSpace()
        inherited = cls.__dict__.get("_tilus_tune_space")
        if inherited is not None:
            space.axes = list(inherited.axes)
        for n in names:
            if n in space.names():
                raise ValueError(f"autotune: parameter '{n}' of {cls.__name__} is tuned twice")
        # Decorators apply bottom-up; inserting in front keeps reading order.
        space.axes.insert(0, (names, rows))
        cls._tilus_tune_space = space
        return cls

    return decorate


def _is_script_class(cls) -> bool:
    # tilus.Script's native base: tilus.script imports this module, not the reverse.
    return isinstance(cls, type) and issubclass(cls, _C.ScriptBase)


def _named(names: tuple) -> str:
    return f"'{names[0]}'" if len(names) == 1 else "(" + ", ".join(names) + ")"


def _located(kind, message: str) -> ScriptError:
    """`message` located at the call of autotune() (the decorator line in the script)."""
    frame = sys._getframe(2)
    file, line = frame.f_code.co_filename, frame.f_lineno
    return errors.script_error(kind.__name__, message, file, line, linecache.getline(file, line))


# `tilus.autotune` names this function (the package re-exports it), so the counters are
# reachable as `tilus.autotune.STATS` through a function attribute.
autotune.STATS = STATS


def autotune_key(fn: Callable):
    """Choose the runtime part of the tuning key of an autotuned script::

        @tilus.autotune_key(lambda m, n, k, a, b, c: (m > 64, n, k))

    ``fn`` gets the kernel's arguments in ``__call__`` order and returns a hashable
    value with a process-independent repr; calls with equal values share one tuned
    configuration. The JIT arguments and the GPU always stay part of the key. Without
    this decorator every runtime integer argument is bucketed (tilus.tuning.key.bucket:
    rounded up to two significant bits, 3072, 4096, 6144, 8192, 12288, ...)."""
    if not callable(fn):
        raise TypeError(f"autotune_key: expected a function, got {type(fn).__name__}")

    def decorate(cls):
        if not _is_script_class(cls):
            raise TypeError("@tilus.autotune_key decorates a tilus.Script subclass")
        cls._tilus_tune_key = staticmethod(fn)
        return cls

    return decorate


def tuned_instance_or_none(cls, args: tuple, kwargs: dict):
    """A TunedScript when some tuned parameter is missing from the arguments, else None
    (the caller builds an ordinary instance)."""
    space: SearchSpace = cls._tilus_tune_space
    sig = inspect.signature(cls.__init__)
    try:
        bound = sig.bind_partial(None, *args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{cls.__name__}(): {e}") from None
    given = dict(bound.arguments)
    given.pop(next(iter(sig.parameters)))
    tuned = space.names()
    if all(n in given for n in tuned):
        return None
    fixed = {n: given.pop(n) for n in tuned if n in given}
    configs = space.configs(fixed)
    if not configs:
        missing = [n for n in tuned if n not in fixed]
        if all(n in sig.parameters and sig.parameters[n].default is not inspect.Parameter.empty
               for n in missing):  # (a name taken through **kwargs has no default)
            # the given values lie outside the space and the rest have defaults: exactly the
            # configuration asked for (a tuned parameter added later, with a default, leaves
            # the constructions that name the others as they were)
            return None
        raise ValueError(f"{cls.__name__}(): no configuration of the search space matches {fixed}; "
                         f"give every tuned parameter ({', '.join(missing)} missing) to build exactly "
                         f"that configuration, or values the search space holds")
    return TunedScript(cls, given, fixed, configs)


_log = get_logger("tilus.autotune")


class TunedScript:
    """An auto-tuned kernel: a script class, its non-tuned arguments and the configs.

    Calling it computes the tuning key (tilus/tuning/key.py), looks the key's winner up
    and calls it like any script; only the first call with a key chooses one."""

    def __init__(self, cls, given: dict, fixed: dict, configs: List[dict]):
        self.cls = cls
        self.given = given
        self.fixed = fixed
        self.configs = configs
        self._sig = cls._signature()
        self._count = len(self._sig.params)
        self._key_maker = KeyMaker(self._sig, getattr(cls, "_tilus_tune_key", None))
        self._instances: Dict[int, object] = {}
        self._winners: Dict[tuple, object] = {}   # tuning key -> Script instance
        self._chosen: Dict[tuple, Tuple[tuner.Decision, dict]] = {}  # key -> (decision, key_desc)
        self._lock = threading.RLock()
        self._space_id = None

    def __repr__(self):
        return f"<tuned {self.cls.__name__}: {len(self.configs)} configs>"

    # ------------------------------------------------------------------ the hot path
    def __call__(self, *args, **kwargs):
        if option._interpret[0] and host_run.has_cuda_tensor(args, kwargs):
            return host_run.run_on_host(self, args, kwargs)
        if kwargs or len(args) != self._count:
            args = tuple(self._sig.bind(args, kwargs))
        try:
            winner = self._winners.get(self._key_maker(args))
        except TypeError:  # an unhashable argument; _decide names the culprit
            winner = None
        if winner is None:
            winner = self._decide(args)
        return winner(*args)

    # ------------------------------------------------------------------ choosing
    def _decide(self, args: tuple):
        """The winner for these (positional) arguments, choosing it if needed."""
        sig = self._sig
        values = list(args)
        jit_key = sig.jit_key(values)  # argument errors first, naming the parameter
        prepare_runtime_args(sig, values, self.cls.__name__)
        key = self._key_maker(args)
        try:
            hash(key)
        except TypeError:
            raise TypeError(f"{self.cls.__name__}: the tuning key {key[1]!r} is not hashable "
                            "(what @tilus.autotune_key's function returns must be)") from None
        with self._lock:
            winner = self._winners.get(key)
            if winner is None:
                key_desc = self._key_maker.describe(key, jit_key)
                decision = tuner.choose(self, sig, values, jit_key, key_desc,
                                        KeyMaker.device(key))
                if option.debug.get_tune_check():
                    check.raise_on_mismatch(self, check.check_configurations(self, tuple(args)))
                winner = self.instance(decision.index)
                self._chosen[key] = (decision, key_desc)
                self._winners[key] = winner
                _log.info("%s %s: config %d %s (%s%s; %d timed, %d failed)", self.cls.__name__, key_desc,
                          decision.index, self.configs[decision.index], decision.how,
                          "" if decision.time_ms is None else f", {decision.time_ms:.4f} ms",
                          len(decision.timings), len(decision.failures))
        return winner

    def _positional(self, args, kwargs) -> tuple:
        return tuple(self._sig.bind(args, kwargs))

    def instance(self, index: int):
        """The Script instance of configuration `index` (created once)."""
        inst = self._instances.get(index)
        if inst is None:
            with self._lock:
                inst = self._instances.get(index)
                if inst is None:
                    # Skip Script.__new__: it would only find again that nothing is missing.
                    inst = _C.ScriptBase.__new__(self.cls)
                    inst.__init__(**self.given, **self.fixed, **self.configs[index])
                    self._instances[index] = inst
        return inst

    def forget_instance(self, index: int):
        """Drop configuration `index`'s instance unless it won some key."""
        with self._lock:
            inst = self._instances.get(index)
            if inst is not None and all(w is not inst for w in self._winners.values()):
                del self._instances[index]

    def space_id(self) -> str:
        """The directory name of this script's results in the tuning store."""
        if self._space_id is None:
            self._space_id = script_identity(self.cls, self._sig, self.given, self.fixed,
                                             self.configs)
        return self._space_id

    # ------------------------------------------------------------------ inspection
    def chosen_config(self, *args, **kwargs) -> dict:
        """The configuration used for these arguments (choosing it if needed; choosing
        never writes the arguments)."""
        args = self._positional(args, kwargs)
        self._decide(args)
        return dict(self.configs[self._chosen[self._key_maker(args)][0].index])

    def compiled(self, *args, **kwargs):
        """Choose the configuration for these arguments and build it without running it;
        returns the winner's :class:`tilus.compiled.CompiledKernel`."""
        args = self._positional(args, kwargs)
        return self._decide(args).compiled(*args)

    def check_configs(self, *args, rtol: float = check.RTOL, atol: float = check.ATOL, **kwargs) -> List[dict]:
        """Run every configuration on these arguments, each from the arguments' state
        before the check, and compare each one's tensor arguments afterwards with the
        first configuration that ran (tilus/tuning/check.py): one report per
        configuration, {"index", "config", "status", "max_diff", "message"}, status
        "reference", "ok", "mismatch", "refused" or "failed". A configuration that skips
        work is fast and would win the tuning; this finds it on the shapes it fails. The
        tensors hold their state from before the call afterwards; nothing is tuned."""
        return check.check_configurations(self, self._positional(args, kwargs), rtol, atol)

    def tuning_table(self) -> List[dict]:
        """One row per tuning key chosen in this process: the key, the configuration,
        its median time and how it was chosen ("tuned", "stored" = read from the disk
        store, "first-that-compiles" = the CPU rule)."""
        rows = []
        for key, (decision, key_desc) in list(self._chosen.items()):
            rows.append({"jit": key_desc["jit"], "runtime": key_desc["runtime"],
                         "device": KeyMaker.device(key),
                         "config": dict(self.configs[decision.index]),
                         "time_ms": decision.time_ms, "how": decision.how,
                         "skipped": len(decision.failures)})
        return rows
