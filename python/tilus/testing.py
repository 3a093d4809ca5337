"""Tilus 0.2's ``tilus.testing``: pytest decorators that skip a test the current GPU cannot
run, so test files written for Tilus 0.2 run unchanged::

    @tilus.testing.requires.nvgpu_sm90
    def test_tma_copy(): ...

``nvgpu_sm80`` / ``nvgpu_sm90`` / ``nvgpu_sm100`` need a GPU of at least that compute
capability; ``nvgpu_sm100a`` the 10.0 architecture itself (the ``a`` features do not carry
over to later ones): the rules of ``tilus.target.Target.supports``. Without a CUDA GPU the
test is skipped, with the reason.
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

from tilus import target
from tilus.target import Target, device_target


def _capability() -> Optional[Tuple[int, int]]:
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_capability()
    except Exception:  # a torch without CUDA support, or a broken driver
        pass
    return None


def _requires(required: Target) -> Callable[[Callable], Callable]:
    def decorator(test: Callable) -> Callable:
        import pytest

        have = _capability()
        if have is None:
            return pytest.mark.skip(reason=f"needs a {required.arch} GPU; no CUDA GPU is available")(test)
        if not device_target(*have).supports(required):
            return pytest.mark.skip(reason=f"needs a {required.arch} GPU; this one is sm_{have[0]}{have[1]}")(test)
        return test

    return decorator


class requires:
    """The decorators, one per architecture Tilus 0.2 names; a test runs where the current
    device's target supports it (tilus.target.Target.supports)."""

    nvgpu_sm80 = staticmethod(_requires(target.nvgpu_sm80))
    nvgpu_sm90 = staticmethod(_requires(target.nvgpu_sm90))
    nvgpu_sm100 = staticmethod(_requires(target.nvgpu_sm100))
    nvgpu_sm100a = staticmethod(_requires(target.nvgpu_sm100a))
