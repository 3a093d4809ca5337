"""Search spaces: configuration count and order, and decoration-time errors."""

import pytest

import tilus
from tilus import float32, int32

from .kernels import Scale


def test_seed_v5_space_has_192_configs_in_product_order(example):
    configs = example("matmul_v5_splitk").MatmulV5().configs
    assert len(configs) == 192
    # The top decorator varies slowest, the bottom one fastest.
    assert configs[0] == {"num_warps": 4, "block_m": 128, "block_n": 128, "block_k": 16,
                          "num_stages": 3, "split_k_factor": 1}
    assert configs[1]["split_k_factor"] == 4 and configs[4]["num_stages"] == 4
    assert configs[12]["block_k"] == 32 and configs[24]["block_n"] == 64
    assert configs[96]["num_warps"] == 8
    assert len({tuple(c.items()) for c in configs}) == 192


def test_fixing_a_tuned_argument_narrows_the_space():
    tuned = Scale(1.0, warps=2)
    assert tuned.configs == [{"block": 32}, {"block": 64}, {"block": 65536}]
    assert isinstance(Scale(1.0, 2, 64), Scale)


def _kernel_class(init):
    namespace = {"__init__": init}

    def __call__(self, n: int32, x_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1

    namespace["__call__"] = __call__
    return type("K", (tilus.Script,), namespace)


def test_decoration_errors_name_the_parameter():
    def init(self, a, b):
        super(cls, self).__init__()

    cls = _kernel_class(init)
    with pytest.raises(ValueError, match=r"K.__init__ has no parameter 'c' \(it takes a, b\)"):
        tilus.autotune("c", [1])(cls)
    with pytest.raises(ValueError, match="parameter 'a' of K is tuned twice"):
        tilus.autotune("a", [1])(tilus.autotune("a, b", [(1, 2)])(cls))
    with pytest.raises(ValueError, match="names a parameter twice"):
        tilus.autotune("a, a", [(1, 1)])
    with pytest.raises(ValueError, match=r"each value must be a tuple of 2 items, got \(1, 2, 3\)"):
        tilus.autotune("a, b", [(1, 2), (1, 2, 3)])
    with pytest.raises(ValueError, match="each value must be a tuple of 2 items, got 5"):
        tilus.autotune("a, b", [5])
    with pytest.raises(ValueError, match="list of values is empty"):
        tilus.autotune("a", [])
    with pytest.raises(ValueError, match="bad parameter names"):
        tilus.autotune("a-b", [1])
    with pytest.raises(TypeError, match="comma-separated string"):
        tilus.autotune(["a"], [1])
    with pytest.raises(TypeError, match="decorates a tilus.Script subclass"):
        tilus.autotune("a", [1])(object)


def test_init_with_kwargs_accepts_any_name():
    def init(self, **options):
        super(cls, self).__init__()

    cls = _kernel_class(init)
    tuned = tilus.autotune("anything", [1, 2])(cls)()
    assert tuned.configs == [{"anything": 1}, {"anything": 2}]


def test_values_given_as_a_string_are_a_located_error():
    def init(self, block_n):
        super(cls, self).__init__()

    cls = _kernel_class(init)
    with pytest.raises(TypeError) as error:
        @tilus.autotune("block_n", "12")  # MARK-string-values
        class Tuned(cls):
            pass
    e = error.value
    assert isinstance(e, tilus.ScriptError) and e.file == __file__
    assert "MARK-string-values" in e.text
    assert "autotune('block_n'): the values of 'block_n' must be a list or tuple, got str " \
           "'12'" in str(e)
    assert f"line {e.line}" in str(e)
    with pytest.raises(TypeError, match=r"the values of \(a, b\) must be a list or tuple, got "
                                        r"int 5"):
        tilus.autotune("a, b", 5)
