"""TunedScript.check_configs: every configuration run on one call's arguments, each from
the same starting state, compared with the first that ran (tilus/tuning/check.py)."""

import pytest
import torch

import tilus
from tilus import float32, int32
from tilus.utils import cdiv


@tilus.autotune("block", [32, 64])
@tilus.autotune("walk", ["grid", "persistent", "persistent_early_exit"])
class Double(tilus.Script):
    """y = 2x in blocks of `block`; "persistent" walks the blocks with a grid of 2, and
    "persistent_early_exit" stops after the first round: it writes only 2 blocks, fast and
    wrong, the configuration a tuner would keep."""

    def __init__(self, block, walk):
        super().__init__()
        if walk == "grid" and block == 64:
            raise ValueError("walk='grid' takes 32-element blocks only")
        self.block, self.walk = block, walk

    def __call__(self, n: int32, x_ptr: ~float32, y_ptr: ~float32):
        blocks = cdiv(n, self.block)
        self.attrs.blocks = [blocks if self.walk == "grid" else 2]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])
        if self.walk == "grid":
            start = self.blockIdx.x * self.block
            self.store_global(gy, self.load_global(gx, offsets=[start], shape=[self.block]) * 2.0, offsets=[start])
        else:
            stop = 2 if self.walk == "persistent_early_exit" else blocks
            for b in range(self.blockIdx.x, stop, 2):
                start = b * self.block
                self.store_global(gy, self.load_global(gx, offsets=[start], shape=[self.block]) * 2.0,
                                  offsets=[start])


def test_a_configuration_that_skips_work_is_reported():
    x = torch.randn(300)
    y = torch.full((300,), float("nan"))
    reports = Double().check_configs(300, x, y)
    status = {(r["config"]["block"], r["config"]["walk"]): r["status"] for r in reports}
    assert status == {(32, "grid"): "reference", (32, "persistent"): "ok", (32, "persistent_early_exit"): "mismatch",
                      (64, "grid"): "refused", (64, "persistent"): "ok", (64, "persistent_early_exit"): "mismatch"}
    wrong = [r for r in reports if r["status"] == "mismatch"]
    assert all("'y_ptr'" in r["message"] and r["max_diff"] == float("inf") for r in wrong), wrong
    refused = next(r for r in reports if r["status"] == "refused")
    assert refused["message"] == "walk='grid' takes 32-element blocks only"
    # the arguments hold what they held before: nothing was tuned or left written
    assert torch.isnan(y).all()


def test_differences_within_the_tolerance_pass():
    x = torch.randn(64)
    y = torch.zeros(64)
    reports = Double(walk="persistent").check_configs(64, x, y, rtol=0.0, atol=0.0)
    assert [r["status"] for r in reports] == ["reference", "ok"]
    assert all(r["max_diff"] == 0.0 for r in reports)


def test_a_configuration_that_raises_is_reported_and_the_others_still_run(monkeypatch):
    tuned = Double(block=32)
    original = tuned.instance

    def instance(index):
        kernel = original(index)
        if tuned.configs[index]["walk"] == "persistent":
            def broken(*args):
                raise RuntimeError("cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED\nmore detail")
            return broken
        return kernel
    monkeypatch.setattr(tuned, "instance", instance)
    x, y = torch.randn(100), torch.zeros(100)
    reports = tuned.check_configs(100, x, y)
    assert [r["status"] for r in reports] == ["reference", "failed", "mismatch"]
    assert reports[1]["message"] == "RuntimeError: cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED"


@pytest.mark.parametrize("cols", [200, 700])
def test_the_softmax_example_has_no_configuration_that_skips_rows(example, cols):
    sm = example("softmax")
    x = (torch.randn(11, cols) * 4).half()
    y = torch.full_like(x, float("nan"))
    long_rows = cols > 256
    reports = sm.Softmax(tilus.float16, 256, long_rows=long_rows).check_configs(11, cols, 3, x, y)
    ran = [r for r in reports if r["status"] in ("reference", "ok", "mismatch")]
    assert len(ran) >= 18 and all(r["status"] != "mismatch" for r in ran), [r for r in ran if r["status"] == "mismatch"]


def test_tune_check_raises_when_a_new_key_finds_configurations_that_disagree():
    from tilus.tuning.check import ConfigurationMismatchError

    x, y = torch.randn(300), torch.full((300,), float("nan"))
    tilus.option.debug.tune_check(True)
    try:
        with pytest.raises(ConfigurationMismatchError) as info:
            Double()(300, x, y)
        message = str(info.value)
        assert message.startswith("Double: 2 of 6 configurations disagree with config 0 {'block': 32, 'walk': 'grid'}")
        assert "'walk': 'persistent_early_exit'}: differs from the reference in 'y_ptr' by up to inf" in message
        assert torch.isnan(y).all()  # nothing ran on the user's tensors
        # agreeing configurations pass, and the call runs
        Double(walk="persistent")(300, x, y)
        torch.testing.assert_close(y, 2 * x)
    finally:
        tilus.option.debug.tune_check(None)
    assert not tilus.option.debug.get_tune_check()
