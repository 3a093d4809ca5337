"""The @tilus.autotune decorator: search spaces, their order and their errors."""

import pytest
import torch

import tilus
from tilus import float32, int32


def _make(*decorators):
    class Kernel(tilus.Script):
        def __init__(self, scale, a, b, c):
            super().__init__()
            self.scale, self.a, self.b, self.c = scale, a, b, c

        def __call__(self, n: int32, x_ptr: ~float32):
            self.attrs.blocks = 1
            self.attrs.warps = self.a
            g = self.global_view(x_ptr, dtype=float32, shape=[n])
            x = self.load_global(g, offsets=[0], shape=[self.b])
            self.store_global(g, x * float(self.scale), offsets=[0])

    for d in reversed(decorators):
        Kernel = d(Kernel)
    return Kernel


def test_cartesian_product_in_reading_order():
    Kernel = _make(tilus.autotune("a", [1, 2]),
                   tilus.autotune("b, c", [(8, "x"), (16, "y"), (32, "z")]))
    tuned = Kernel(scale=3)
    assert len(tuned.configs) == 6
    assert tuned.configs[0] == {"a": 1, "b": 8, "c": "x"}
    assert tuned.configs[1] == {"a": 1, "b": 16, "c": "y"}
    assert tuned.configs[3] == {"a": 2, "b": 8, "c": "x"}


def test_seed_v5_space_has_192_configs(example):
    assert len(example("matmul_v5_splitk").MatmulV5().configs) == 192


def test_explicit_tuned_arguments_fix_them():
    Kernel = _make(tilus.autotune("a", [1, 2]), tilus.autotune("b", [8, 16]),
                   tilus.autotune("c", [0]))
    assert isinstance(Kernel(3, 2, 16, 0), Kernel)  # everything given: a plain instance
    partial = Kernel(scale=3, a=2)
    assert [cfg["b"] for cfg in partial.configs] == [8, 16]
    assert all("a" not in cfg for cfg in partial.configs)


def test_a_partial_configuration_outside_the_space_names_what_is_missing():
    Kernel = _make(tilus.autotune("a, b", [(1, 8), (2, 16)]), tilus.autotune("c", [0]))
    with pytest.raises(ValueError, match=r"no configuration .* matches \{'a': 1, 'b': 16\}; give every "
                                         r"tuned parameter \(c missing\)"):
        Kernel(scale=3, a=1, b=16)
    assert isinstance(Kernel(3, 1, 16, 0), Kernel)  # all of them given: built as asked


def test_a_configuration_outside_the_space_takes_the_defaults_of_the_rest():
    class Kernel(tilus.Script):
        def __init__(self, a, b, c=7):
            super().__init__()
            self.a, self.b, self.c = a, b, c

        def __call__(self, x_ptr: ~float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1

    Kernel = tilus.autotune("a, b, c", [(1, 8, 0), (2, 16, 1)])(Kernel)
    exact = Kernel(a=1, b=16)  # outside the space, c has a default: built as asked
    assert isinstance(exact, Kernel) and (exact.a, exact.b, exact.c) == (1, 16, 7)
    tuned = Kernel(a=2, b=16)  # inside the space: c is tuned over the matching configs
    assert tuned.configs == [{"c": 1}]


def test_a_configuration_outside_the_space_through_kwargs_names_what_is_missing():
    class Kernel(tilus.Script):
        def __init__(self, a, **rest):
            super().__init__()
            self.a, self.rest = a, rest

        def __call__(self, x_ptr: ~float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1

    Kernel = tilus.autotune("a, b", [(1, 8), (2, 16)])(Kernel)
    with pytest.raises(ValueError, match=r"no configuration .* matches \{'a': 3\}; give every tuned parameter "
                                         r"\(b missing\)"):
        Kernel(a=3)


def test_cpu_runs_the_first_config_that_compiles():
    # a=64 warps is invalid, so the first valid config is a=2.
    Kernel = _make(tilus.autotune("a", [64, 2]), tilus.autotune("b", [8, 16]),
                   tilus.autotune("c", [0]))
    tuned = Kernel(scale=3)
    x = torch.arange(8, dtype=torch.float32)
    tuned(8, x)
    torch.testing.assert_close(x, torch.arange(8, dtype=torch.float32) * 3)
    assert tuned.chosen_config(8, x) == {"a": 2, "b": 8, "c": 0}


def test_all_configs_failing_lists_the_reasons():
    Kernel = _make(tilus.autotune("a", [0, 64]), tilus.autotune("b", [8]), tilus.autotune("c", [0]))
    with pytest.raises(ValueError, match=r"no configuration") as err:
        Kernel(scale=1)(8, torch.zeros(8))
    assert "{'a': 0, 'b': 8, 'c': 0}" in str(err.value)
    assert "[1, 32]" in str(err.value)


def test_naming_a_parameter_twice():
    with pytest.raises(ValueError, match="tuned twice"):
        _make(tilus.autotune("a", [1]), tilus.autotune("a", [2]))
    with pytest.raises(ValueError, match="names a parameter twice"):
        tilus.autotune("a, a", [(1, 1)])


def test_naming_an_unknown_parameter():
    with pytest.raises(ValueError, match=r"has no parameter 'block_q'"):
        _make(tilus.autotune("block_q", [1]))


def test_value_tuple_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"tuple of 2 items"):
        tilus.autotune("a, b", [(1, 2), (3,)])
