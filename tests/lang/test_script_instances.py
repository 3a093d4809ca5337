"""Calling a script class with arguments it was called with before gives the same object,
as Tilus 0.2's InstantiatedScriptCache does: its programs make the script inside every call
of their wrapper (`FlashAttention(dtype=f16, ...)(q, k, v, o)`), and a fresh instance
transpiled again on every call (measured on an H200: Tilus 0.2's attention examples ran
at 1-28 TFLOP/s, the host's milliseconds per call)."""

import numpy as np
import torch

import tilus
import tilus.script
from tilus import float32, int32


class Scaled(tilus.Script):
    def __init__(self, factor, block=64):
        super().__init__()
        self.factor, self.block = factor, block

    def __call__(self, n: int32, x: ~float32):
        self.attrs.blocks = [(n + self.block - 1) // self.block]
        self.attrs.warps = 2
        g = self.global_view(x, dtype=float32, shape=[n])
        r = self.load_global(g, offsets=[self.blockIdx.x * self.block], shape=[self.block])
        self.store_global(g, r * self.factor, offsets=[self.blockIdx.x * self.block])


@tilus.autotune("block", [32, 64])
class TunedScaled(Scaled):
    pass


def _transpiles():
    return tilus.script.STATS["transpiles"]


def test_the_same_arguments_give_the_same_instance_and_one_transpile():
    before = _transpiles()
    for _ in range(3):
        x = torch.arange(100, dtype=torch.float32)
        Scaled(2.0)(100, x)  # as a Tilus 0.2 wrapper function does on every call
        torch.testing.assert_close(x, torch.arange(100, dtype=torch.float32) * 2)
    assert _transpiles() == before + 1
    assert Scaled(2.0) is Scaled(2.0)
    assert Scaled(2.0, block=64) is Scaled(2.0, block=64)


def test_a_tuned_script_keeps_its_winner_across_instantiations():
    x = torch.arange(100, dtype=torch.float32)
    TunedScaled(3.0)(100, x)
    before = _transpiles()
    tuned = TunedScaled(3.0)
    assert tuned is TunedScaled(3.0) and isinstance(tuned, tilus.InstantiatedScript)
    tuned(100, x)
    assert _transpiles() == before
    torch.testing.assert_close(x, torch.arange(100, dtype=torch.float32) * 9)


def test_other_arguments_give_other_instances():
    assert Scaled(2.0) is not Scaled(3.0)
    assert Scaled(2.0) is not Scaled(2.0, block=32)
    assert Scaled(2.0, 64) is not Scaled(2.0, block=64)  # spelled otherwise: Tilus 0.2 keys them apart too
    # equal in Python, not the same kernel: 1 == 1.0 == True
    assert len({id(Scaled(1)), id(Scaled(1.0)), id(Scaled(True))}) == 3
    assert Scaled([1, 2]) is Scaled([1, 2]) and Scaled([1, 2]) is not Scaled((1, 2))
    assert Scaled({"a": 1}) is Scaled({"a": 1}) and Scaled({"a": 1}) is not Scaled({"a": 2})


def test_arguments_other_than_plain_values_give_a_new_instance_each_time():
    """An array (unhashable), a tensor or an object (hashable by identity) are not kept:
    the instance would keep them alive for the whole process."""
    import gc
    import weakref

    a = np.ones(3)
    assert Scaled(a) is not Scaled(a)
    t = torch.ones(3)
    assert Scaled(t) is not Scaled(t)

    class Config:
        pass

    config = Config()
    assert Scaled(config) is not Scaled(config)
    alive = weakref.ref(config)
    del config
    gc.collect()
    assert alive() is None
    # dtypes and classes are plain enough
    assert Scaled(float32) is Scaled(float32) and Scaled(torch.float16) is Scaled(torch.float16)
    assert Scaled(Config) is Scaled(Config)


def test_a_changed_build_option_gives_a_new_instance():
    """Instances keep what they built under the options of their first builds."""
    first = Scaled(2.0)
    tilus.option.codegen(copy_tma=False)
    try:
        other = Scaled(2.0)
        assert other is not first and other is Scaled(2.0)
    finally:
        tilus.option.reset_codegen()
    # set back: made anew again (tilus.option counts changes, it does not compare values)
    again = Scaled(2.0)
    assert again is not other and again is Scaled(2.0)


def test_clear_instances_forgets_them():
    first = Scaled(5.0)
    tilus.script.clear_instances()
    assert Scaled(5.0) is not first


def test_a_script_may_also_be_an_abstract_base_class():
    """Keeping instances takes a metaclass; it derives from ABCMeta, so a script class that
    also derives from abc.ABC (a metaclass of its own) can still be written."""
    import abc

    class Base(Scaled, abc.ABC):
        @abc.abstractmethod
        def factor_name(self): ...

    class Concrete(Base):
        def factor_name(self):
            return "factor"

    assert Concrete(2.0) is Concrete(2.0)
    x = torch.ones(10)
    Concrete(2.0)(10, x)
    torch.testing.assert_close(x, torch.full((10,), 2.0))
