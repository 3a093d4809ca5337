"""Tuning keys (bucketing, custom keys) and the names results are stored under."""

import subprocess
import sys

import numpy as np
import pytest

from tilus.tuning import identity
from tilus.tuning.key import KeyMaker, bucket, device_of, label

from .kernels import Scale


@pytest.mark.parametrize("value,expected", [(1, 1), (2, 2), (3, 3), (5, 6), (7, 8), (1000, 1024), (3000, 3072),
                                            (3500, 4096), (4096, 4096), (4097, 6144), (6145, 8192),
                                            (12288, 12288), (14336, 16384), (0, 0), (-5, -5),
                                            (np.int64(33), 48), (True, True), (2.5, 2.5)])
def test_bucket(value, expected):
    assert bucket(value) == expected


def test_matmul_keys_bucket_m_and_keep_jit_values(example):
    tuned = example("matmul_v5_splitk").MatmulV5()
    sig, maker = tuned._sig, tuned._key_maker
    a = np.zeros(1, np.float16)

    def key(m, n, k):
        return maker((m, n, k, a, a, a))

    assert key(3500, 4096, 4096) == key(4096, 4096, 4096)
    assert key(3000, 4096, 4096) == key(3072, 4096, 4096) != key(4096, 4096, 4096)
    assert key(1, 4096, 4096) != key(4096, 4096, 4096)
    assert key(4096, 4096, 4096) != key(4096, 4096, 14336)  # k is a JIT value
    assert key(4096, 4096, 14336) == ((4096, 14336), (4096,), -1)
    assert key(np.int64(3500), 4096, np.int32(14336)) == key(4096, 4096, 14336)
    values = [3500, 4096, np.int64(14336), a, a, a]
    assert maker.describe(maker(values), sig.jit_key(values)) == \
        {"jit": {"n_size": 4096, "k_size": 14336}, "runtime": {"m_size": 4096}}
    assert label("matmul_v5", (4096, 14336)) == "matmul_v5-4096-14336"


def test_device_of_foreign_tensors():
    torch = pytest.importorskip("torch")
    assert device_of(torch.zeros(1)) == -1
    assert device_of(np.zeros(1)) == -1

    class FakeCupy:
        __cuda_array_interface__ = {}

        class device:
            id = 3

    assert device_of(FakeCupy()) == 3


def test_custom_key_replaces_the_runtime_part():
    tuned = Scale(1.0)
    maker = KeyMaker(tuned._sig, lambda n, x: ("small" if n < 64 else "big"))
    x = np.zeros(4, np.float32)
    assert maker((10, x)) == ((), "small", -1)
    assert maker.describe(maker((100, x)), ()) == {"jit": {}, "runtime": {"custom": "'big'"}}


def test_script_identity_depends_on_what_changes_the_winner(example):
    v5 = example("matmul_v5_splitk").MatmulV5
    full, narrowed = v5(), v5(num_warps=4)
    assert full.space_id() != narrowed.space_id()  # another config space
    assert Scale(1.0).space_id() != Scale(2.0).space_id()  # other constructor arguments
    assert Scale(1.0).space_id() == Scale(1.0).space_id()
    assert full.space_id().startswith("matmul_v5-")


def test_script_identity_depends_on_the_code_generator_options(example):
    import tilus

    v5 = example("matmul_v5_splitk").MatmulV5
    plain = v5().space_id()
    try:
        tilus.option.static_rings(True)
        rings = v5().space_id()
        tilus.option.codegen(wgmma=False)
        rings_no_wgmma = v5().space_id()
    finally:
        tilus.option.static_rings(None)
        tilus.option.reset_codegen()
    assert len({plain, rings, rings_no_wgmma}) == 3
    assert v5().space_id() == plain


def test_script_identity_is_the_same_in_another_process(example):
    here = example("matmul_v5_splitk").MatmulV5().space_id()
    code = ("import sys; sys.path.insert(0, 'tests'); from conftest import load_example; "
            "print(load_example('matmul_v5_splitk').MatmulV5().space_id())")
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, cwd=str(__import__("pathlib").Path(__file__).parents[2]))
    assert there.stdout.strip() == here


def test_closure_values_enter_the_identity():
    from tests.gpu.kernels import make_matmul
    from tilus import bfloat16, float16, float32

    import tilus

    ids = set()
    for dtype in (float16, bfloat16):
        cls = tilus.autotune("warps", [4, 8])(make_matmul(dtype, float32, dtype))
        ids.add(cls().space_id())
    assert len(ids) == 2


def test_stable_repr_and_entry_names():
    class Opaque:
        pass

    assert identity.stable_repr({"a": (1, 2.5, "x", None)}) == "{'a': (1, 2.5, 'x', None)}"
    assert "0x" not in identity.stable_repr(Opaque())
    name = identity.entry_name("matmul_v5-4096-14336", {"jit": {}, "runtime": {"m_size": 4096}})
    assert name.startswith("matmul_v5-4096-14336-m_size4096-") and name.endswith(".json")
    other = identity.entry_name("matmul_v5-4096-14336", {"jit": {}, "runtime": {"m_size": 1}})
    assert other != name
    weird = identity.entry_name("k", {"jit": {}, "runtime": {"custom": "('a/b', 1)" * 40}})
    assert "/" not in weird and len(weird) < 120
    assert identity.gpu_dir_name({"name": "NVIDIA H100 80GB HBM3", "arch": "sm_90a"}) == \
        "NVIDIA_H100_80GB_HBM3-sm_90a"
