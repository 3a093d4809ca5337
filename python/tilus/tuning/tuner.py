"""Choosing the configuration of one tuning key.

On the GPU (tensor arguments on a CUDA device)::

    disk store hit?  -> reuse the stored winner (nothing is compiled or timed)
    else, holding the store's lock for this key:
        transpile every configuration          (Python, ~1 ms each)
        generate + compile all in parallel     (C++ threads, GIL released)
        drop what does not fit the GPU; skip what fails to build
        time the rest on scratch copies        (CUDA events, L2 flushed, median)
        store the winner

On the CPU interpreter nothing is timed: the first configuration, in product order,
that constructs, transpiles and fits a GPU's shared memory is used (see docs/autotune.md).
"""

from __future__ import annotations

import json
import os
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Dict, Optional

from tilus import _C, option
from tilus.arguments import prepare_runtime_args
from tilus.candidate import kernel_name
from tilus.lang.errors import ScriptError
from tilus.runtime.launcher import alignment_of
from tilus.tuning import identity, ranks, spread
from tilus.tuning.bench import GpuBench
from tilus.tuning.build import (Failure, GpuTarget, build_candidates, common_error,
                                describe_failures, transpile_all)
from tilus.tuning.key import label as make_label
from tilus.tuning.progress import Progress
from tilus.tuning.store import DamagedEntry, TuningStore

_stats_lock = threading.Lock()
# rank_adoptions: keys whose winner this rank took from rank 0 (tuning/ranks.py)
STATS = {"tunings": 0, "store_hits": 0, "configs_built": 0, "configs_timed": 0,
         "rank_adoptions": 0}


def count(name: str, n: int = 1):
    with _stats_lock:
        STATS[name] = STATS.get(name, 0) + n


class NoValidConfigError(ValueError):
    """No configuration of an autotuned script can run for the given arguments."""


@dataclass
class Decision:
    """The outcome of choosing a configuration for one key."""

    index: int
    how: str                        # "tuned", "stored", or "first-that-compiles" (CPU)
    time_ms: Optional[float] = None
    timings: Dict[int, float] = field(default_factory=dict)
    failures: Dict[int, Failure] = field(default_factory=dict)


# Tests replace the GPU with a fake: (target, make_bench(...)) used for every tuning,
# CPU tensors included. None in normal use.
test_backend = None


def choose(tuned, sig, values: list, jit_key: tuple, key_desc: dict, device: int) -> Decision:
    """The configuration for one tuning key (`key_desc`: KeyMaker.describe)."""
    if test_backend is None and device < 0:
        return first_that_compiles(tuned, sig, values)
    if test_backend is not None:
        target, make_bench = test_backend
    else:
        target, make_bench = GpuTarget.of_device(device), GpuBench
    gpu = {"name": target.name, "arch": target.arch}
    store = TuningStore(_store_root(tuned))
    label = make_label(kernel_name(tuned.cls), jit_key)
    path = store.path(identity.gpu_dir_name(gpu), identity.entry_name(label, key_desc))
    expected = {"key": key_desc, "gpu": gpu}

    def validate(entry: dict) -> Decision:
        return _decision_from_entry(tuned, entry, expected)

    def create():
        decision = _search(tuned, sig, values, jit_key, target, make_bench, label)
        return _entry_from_decision(tuned, decision, expected), decision

    def choose_alone() -> Decision:
        decision, stored = store.get_or_create(path, validate, create)
        if stored:
            count("store_hits")
        return decision

    channel = ranks.current_channel()
    if channel is None:
        return choose_alone()

    def lookup() -> Optional[Decision]:
        found = store.read(path, validate) if path is not None else None
        if found is not None:
            count("store_hits")
        return found

    def search() -> Decision:
        return _search(tuned, sig, values, jit_key, target, make_bench, label,
                       raise_if_none=False)

    def combine(everyone: Dict[int, Dict[int, float]]) -> Decision:
        best = ranks.best_total(everyone)
        if best is None:
            raise NoValidConfigError(f"no configuration of {tuned.cls.__name__} could be "
                                     f"timed on every one of the {len(everyone)} ranks for "
                                     f"[{label}]")
        index, total = best
        totals = {}
        for timings in everyone.values():
            for i, t in timings.items():
                totals[i] = totals.get(i, 0.0) + t
        return Decision(index, "tuned", total, totals)

    def store_combined(decision: Decision):
        if path is not None:
            with store.lock(path) as locked:
                if locked:
                    store.write(path, _entry_from_decision(tuned, decision, expected))

    def received(index: int, how: str) -> Decision:
        if not 0 <= index < len(tuned.configs):
            raise ranks.RankAgreementError(f"tilus: rank 0 chose configuration #{index} of "
                                           f"{tuned.cls.__name__}, which has only "
                                           f"{len(tuned.configs)}: do all ranks run the same "
                                           "script?")
        count("rank_adoptions")
        return Decision(index, how)

    key = f"{tuned.space_id()}/{identity.entry_name(label, key_desc)}"
    what = f"{tuned.cls.__name__} [{label}] (key {json.dumps(key_desc, sort_keys=True)})"
    return ranks.agree(channel, key, what, lookup, choose_alone, search, combine,
                       store_combined, received)


def first_that_compiles(tuned, sig, values: list) -> Decision:
    """The CPU rule: the first configuration, in product order, that constructs,
    transpiles for these (positional) arguments and fits a GPU's shared memory (as the GPU
    search leaves out the candidates over the device's limit: CompiledScript.check_fits_a_gpu,
    and those whose views pass their 32-bit offsets for these sizes)."""
    failures, runtime_args = {}, None
    for i in range(len(tuned.configs)):
        try:
            instance = tuned.instance(i)
        except Exception as e:  # noqa: BLE001 - the user's __init__ rejected it (as on the GPU)
            failures[i] = Failure("init", f"{type(e).__name__}: {e}", e)
            continue
        try:
            compiled = instance.compile(*values)  # the candidate interface (tilus/candidate.py)
        except ScriptError as e:
            failures[i] = Failure("script", e.message, e)
            continue
        try:
            compiled.check_fits_a_gpu()
        except ScriptError as e:
            failures[i] = Failure("unfit", e.message)
            continue
        if runtime_args is None:
            runtime_args, _ = prepare_runtime_args(sig, values, tuned.cls.__name__)
        overflow = _offsets_unfit(compiled.program, runtime_args)
        if overflow:  # as the GPU search
            failures[i] = overflow
            continue
        return Decision(i, "first-that-compiles", failures=failures)
    _raise_none_works(tuned, failures,
                      f"no configuration of {tuned.cls.__name__} compiles for these arguments")


def _raise_none_works(tuned, failures: Dict[int, Failure], heading: str):
    """A mistake every configuration makes alike is raised as itself; otherwise
    NoValidConfigError lists the failures grouped by reason."""
    error = common_error(failures, len(tuned.configs))
    if error is not None:
        raise error
    raise NoValidConfigError(f"{heading}; all {len(tuned.configs)} configurations failed, "
                             "by reason:\n"
                             + describe_failures(tuned.configs, failures))


# ---------------------------------------------------------------------------- search
def _search(tuned, sig, values, jit_key, target: GpuTarget, make_bench, label: str,
            raise_if_none: bool = True) -> Decision:
    """Build and time every configuration here. With `raise_if_none` False (ranks that
    pool their timings), a search that could time nothing returns an empty decision."""
    count("tunings")
    candidates, failures = transpile_all(tuned, values)
    runtime_args, _ = prepare_runtime_args(sig, values, tuned.cls.__name__)
    candidates = _drop_offset_overflows(candidates, runtime_args, failures)
    aligned = [alignment_of(c.compiled.program, runtime_args) for c in candidates]
    built, build_failures = build_candidates(candidates, target, aligned, label)
    failures.update(build_failures)
    count("configs_built", len(candidates))

    timings: Dict[int, float] = {}
    if built:
        options = option.get_tuning()
        devices = spread.spread_devices(target.device, target.name, target.arch)

        def bench_on(device: int):
            return make_bench(device, sig, values, tuned.cls.__name__, built, options)

        with Progress(f"[Tuning] {label}", len(built)) as bar:
            scheduler = spread.SpreadScheduler(built, options.prune, bar.advance_to)
            scheduler.run(devices, bench_on)
        timings = scheduler.timings
        failures.update(scheduler.failures)
        count("configs_timed", len(built))
    if not timings and not raise_if_none:
        return Decision(-1, "tuned", None, {}, failures)
    if not timings:
        _raise_none_works(tuned, failures, f"no configuration of {tuned.cls.__name__} can run "
                          f"for these arguments on {target.name} ({target.arch})")
    _warn_skipped(tuned, label, failures)
    winner = min(timings, key=lambda i: (timings[i], i))
    _release_losers(tuned, winner, candidates)
    return Decision(winner, "tuned", timings[winner], timings, failures)


def _drop_offset_overflows(candidates, runtime_args: list, failures: Dict[int, Failure]):
    """Configurations whose global views would span more than their 32-bit element
    offsets reach for these arguments (every launch of them is refused): unfit, as one
    that needs too much shared memory, not built, not timed."""
    kept = []
    for c in candidates:
        overflow = _offsets_unfit(c.compiled.program, runtime_args)
        if overflow:
            failures[c.index] = overflow
        else:
            kept.append(c)
    return kept


def _offsets_unfit(program, runtime_args: list) -> Optional[Failure]:
    """An "unfit" failure when `program`'s views pass their 32-bit offsets for these
    arguments (every launch would be refused), else None."""
    message = _C.view_offset_overflow(program, runtime_args)
    return Failure("unfit", message) if message else None


def _release_losers(tuned, winner: int, candidates):
    """Forget the losing instances, so their loaded GPU modules can be freed."""
    for c in candidates:
        if c.index != winner:
            tuned.forget_instance(c.index)


def _warn_skipped(tuned, label: str, failures: Dict[int, Failure]):
    """One warning for configurations that failed to build or launch (not for those
    that merely do not fit this GPU)."""
    bad = {i: f for i, f in failures.items() if f.unexpected}
    if not bad:
        return
    by_stage: Dict[str, int] = {}
    for f in bad.values():
        by_stage[f.stage] = by_stage.get(f.stage, 0) + 1
    what = {"codegen": "could not be generated", "compile": "failed to compile",
            "launch": "failed to launch"}
    summary = ", ".join(f"{n} {what[s]}" for s, n in sorted(by_stage.items()))
    shown = sorted(bad)[:5]
    details = "\n".join(f"  {tuned.configs[i]}: {_first_line(bad[i].message)}" for i in shown)
    more = f"\n  ... and {len(bad) - len(shown)} more" if len(bad) > len(shown) else ""
    warnings.warn(f"tilus: {tuned.cls.__name__} [{label}]: skipped {len(bad)} of "
                  f"{len(tuned.configs)} configurations ({summary}):\n{details}{more}",
                  RuntimeWarning, stacklevel=5)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


# ---------------------------------------------------------------------------- store entries
def _store_root(tuned) -> Optional[str]:
    cache = option.get_cache_dir()
    return os.path.join(cache, "tuning", tuned.space_id()) if cache else None


def _entry_from_decision(tuned, decision: Decision, expected: dict) -> dict:
    return {
        "tilus": _C.__version__,
        "script": f"{tuned.cls.__module__}.{tuned.cls.__qualname__}",
        "key": expected["key"],
        "gpu": expected["gpu"],
        "config_index": decision.index,
        "config": identity.stable_repr(tuned.configs[decision.index]),
        "time_ms": decision.time_ms,
        "timings_ms": {str(i): t for i, t in sorted(decision.timings.items())},
        "skipped": {str(i): f"[{f.stage}] {_first_line(f.message)}"
                    for i, f in sorted(decision.failures.items())},
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def _decision_from_entry(tuned, entry: dict, expected: dict) -> Decision:
    for name in ("key", "gpu"):
        if json.dumps(entry.get(name), sort_keys=True) != json.dumps(expected[name],
                                                                    sort_keys=True):
            raise DamagedEntry(f"it belongs to another {name}")
    index = entry.get("config_index")
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(tuned.configs):
        raise DamagedEntry(f"config_index {index!r} is out of range")
    if entry.get("config") != identity.stable_repr(tuned.configs[index]):
        raise DamagedEntry(f"config {entry.get('config')!r} does not match configuration "
                           f"#{index}")
    time_ms = entry.get("time_ms")
    return Decision(index, "stored", time_ms if isinstance(time_ms, (int, float)) else None)
