"""Tilus 0.2's ``tilus.target``: what GPU kernels are built for. ``get_current_target()``
describes the current CUDA device (``nvgpu/sm_90a`` on an H100, whose architecture-
specific features tilus uses there); the named targets (``nvgpu_sm80``, ``nvgpu_sm90a``,
...) and ``Target.supports`` answer what a program may rely on. tilus itself always
builds for the device a kernel runs on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple


@dataclass(frozen=True)
class TargetProperties:
    compute_capability: Tuple[int, int] = (0, 0)
    feature_suffix: Optional[str] = None  # None, "a" (this architecture only) or "f" (its family)
    shared_memory_per_block: int = 0      # bytes a block may use (opt-in limit); 0: unknown


@dataclass(frozen=True)
class Target:
    kind: str  # "nvgpu", or "gpgpu" for any GPU
    arch: str  # "sm_90a", ...
    properties: TargetProperties = TargetProperties()

    def __str__(self):
        return f"{self.kind}/{self.arch}"

    def is_nvgpu(self) -> bool:
        return self.kind == "nvgpu"

    def is_amdgpu(self) -> bool:
        return False  # tilus targets NVIDIA GPUs only

    def supports(self, target: "Target") -> bool:
        """Whether every GPU this target describes can run code built for ``target``: a
        plain target needs at least its compute capability; an ``a`` target that exact
        architecture (with its ``a`` features); an ``f`` target the same major version,
        at least its minor, with ``a`` or ``f`` features."""
        if target.kind == "gpgpu":
            return True
        if self.kind != target.kind:
            return False
        have, need = self.properties.compute_capability, target.properties.compute_capability
        suffix, mine = target.properties.feature_suffix, self.properties.feature_suffix
        if suffix is None:
            return have >= need
        if suffix == "a":
            return have == need and mine == "a"
        return have[0] == need[0] and have[1] >= need[1] and mine in ("a", "f")


def _nvgpu(major: int, minor: int, suffix: Optional[str] = None) -> Target:
    return Target("nvgpu", f"sm_{major}{minor}{suffix or ''}", TargetProperties((major, minor), suffix))


gpgpu_any = Target("gpgpu", "any")
nvgpu_any = Target("nvgpu", "any")
nvgpu_sm80, nvgpu_sm86, nvgpu_sm89 = _nvgpu(8, 0), _nvgpu(8, 6), _nvgpu(8, 9)
nvgpu_sm90, nvgpu_sm90a = _nvgpu(9, 0), _nvgpu(9, 0, "a")
nvgpu_sm100, nvgpu_sm100a, nvgpu_sm100f = _nvgpu(10, 0), _nvgpu(10, 0, "a"), _nvgpu(10, 0, "f")
nvgpu_sm120, nvgpu_sm120a = _nvgpu(12, 0), _nvgpu(12, 0, "a")


def device_target(major: int, minor: int, shared_memory_per_block: int = 0) -> Target:
    """The target of a device of compute capability major.minor: with the ``a`` features
    from 9.0 on (sm_90a, sm_100a, ...; what tilus builds for on it)."""
    suffix = "a" if major >= 9 else None
    return Target("nvgpu", f"sm_{major}{minor}{suffix or ''}",
                  TargetProperties((major, minor), suffix, shared_memory_per_block))


def get_current_target() -> Target:
    """The current CUDA device as a target: its compute capability with the ``a`` features
    (sm_90a, sm_100a, ...; what tilus builds for on it) and its opt-in shared memory per
    block. A RuntimeError without a CUDA GPU."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("get_current_target: no CUDA GPU is available (CPU tensors run in "
                           "tilus's interpreter, which has no target)")
    device = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(device)
    return device_target(*torch.cuda.get_device_capability(device),
                         int(getattr(props, "shared_memory_per_block_optin", 0) or 0))
