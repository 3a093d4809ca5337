"""Running every configuration of a tuned script on one call's arguments and comparing
their results: ``TunedScript.check_configs``.

The tuner keeps the fastest configuration. A configuration that skips part of the work
(a loop bound off by one, a persistent walk that stops early) is fast, so it is the one
that gets chosen, and a test of the tuned call only sees it on the shapes that choose it.
This runs each configuration in turn from the same argument state, compares every tensor
argument afterwards with the first configuration that ran, and reports the ones that
differ, on the GPU as in the interpreter (the same launches as any call).
"""

from __future__ import annotations

from typing import List

# How far a configuration's results may stand from the reference's: atol + rtol * the
# reference's largest magnitude (check_configs' defaults and tune_check's bounds).
RTOL = ATOL = 1e-2


class ConfigurationMismatchError(RuntimeError):
    """Raised under ``tilus.option.debug.tune_check`` when configurations of an autotuned
    script disagree on a call's results."""


def _tensors(args) -> List[int]:
    """Positions of the torch tensors among the arguments."""
    import torch

    return [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]


def _difference(got, want) -> float:
    """The largest absolute difference (NaN equal to NaN and an infinity to itself; inf
    where only one side is NaN or infinite); the caller applies rtol and atol."""
    import torch

    if got.dtype.is_floating_point:
        g, w = got.double(), want.double()
        both_nan = torch.isnan(g) & torch.isnan(w)
        same_inf = torch.isinf(g) & (g == w)
        diff = torch.where(both_nan | same_inf, torch.zeros_like(g), (g - w).abs())
        diff = torch.nan_to_num(diff, nan=float("inf"))
        return float(diff.max()) if diff.numel() else 0.0
    return 0.0 if torch.equal(got, want) else float((got.long() - want.long()).abs().max())


def check_configurations(tuned, args: tuple, rtol: float = RTOL, atol: float = ATOL) -> List[dict]:
    """One report per configuration of `tuned`: {"index", "config", "status", "max_diff",
    "message"}, status "reference" (the first that ran: what the others are compared
    with), "ok", "mismatch", "refused" (its constructor refused the configuration) or
    "failed" (building or launching raised). The tensor arguments hold their state from
    before the check when it returns."""
    import torch

    positions = _tensors(args)
    saved = {i: args[i].clone() for i in positions}

    def restore():
        for i in positions:
            args[i].copy_(saved[i])

    reports, reference, bounds = [], None, {}
    try:
        for index, config in enumerate(tuned.configs):
            report = {"index": index, "config": dict(config), "status": "ok", "max_diff": 0.0, "message": ""}
            reports.append(report)
            try:
                kernel = tuned.instance(index)
            except ValueError as e:  # the script's constructor refused this configuration
                report.update(status="refused", message=str(e).splitlines()[0])
                continue
            restore()
            try:
                kernel(*args)
                if any(args[i].is_cuda for i in positions):
                    torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 -- reported, the others still run
                report.update(status="failed", message=f"{type(e).__name__}: {str(e).splitlines()[0]}")
                continue
            after = {i: args[i].clone() for i in positions}
            if reference is None:
                reference = after
                bounds = {i: atol + rtol * (float(t.double().abs().nan_to_num(0.0).max()) if t.numel() else 0.0)
                          for i, t in reference.items()}
                report["status"] = "reference"
                continue
            differing = []
            for i in positions:
                diff = _difference(after[i], reference[i])
                report["max_diff"] = max(report["max_diff"], diff)
                if diff > bounds[i]:
                    differing.append(f"'{tuned._sig.params[i].name}' by up to {diff:.3g}")
            if differing:
                report.update(status="mismatch",
                              message="differs from the reference in " + ", ".join(differing))
    finally:
        restore()
    return reports


def raise_on_mismatch(tuned, reports: List[dict]) -> None:
    """ConfigurationMismatchError naming each configuration whose results differ from the
    reference's (``tilus.option.debug.tune_check``)."""
    wrong = [r for r in reports if r["status"] == "mismatch"]
    if not wrong:
        return
    reference = next(r for r in reports if r["status"] == "reference")
    lines = [f"  config {r['index']} {r['config']}: {r['message']}" for r in wrong]
    raise ConfigurationMismatchError(
        f"{tuned.cls.__name__}: {len(wrong)} of {len(reports)} configurations disagree with config "
        f"{reference['index']} {reference['config']} on this call (tilus.option.debug.tune_check):\n"
        + "\n".join(lines))
