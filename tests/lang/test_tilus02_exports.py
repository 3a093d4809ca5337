"""The names Tilus 0.2 programs import from tilus (issue 12, item 1): short dtype names,
the tensor and layout class names, and tilus.utils helpers."""

import pytest
import torch

import tilus
from tilus import GlobalTensor, RegisterTensor, SharedTensor, f32, i32

# Tilus 0.2's short spellings and the types they name (from its documentation).
SHORT = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
         "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
         "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}


@pytest.mark.parametrize("short,name", sorted(SHORT.items()))
def test_short_dtype_names(short, name):
    assert getattr(tilus, short) == getattr(tilus, name)
    assert getattr(tilus, short).name == name
    assert short in tilus.__all__
    namespace = {}
    exec(f"from tilus import {short}", namespace)  # the import a Tilus 0.2 script writes
    assert namespace[short] == getattr(tilus, name)


def test_layout_and_tensor_class_names():
    assert tilus.RegisterLayout is tilus.layout.RegisterLayout
    assert tilus.SharedLayout is tilus.layout.SharedLayout
    assert isinstance(tilus.layout.spatial(4, 8), tilus.RegisterLayout)
    assert not isinstance(3, RegisterTensor) and not isinstance("x", GlobalTensor)


class ScopeChecks(tilus.Script):
    """Adds 1 only when every isinstance check on the three tile kinds holds."""

    def __call__(self, n: i32, a: ~f32, b: ~f32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        g = self.global_view(a, shape=[n], dtype=f32)
        x = self.load_global(g, offsets=[0], shape=[32])
        s = self.shared_tensor(dtype=f32, shape=[32])
        if (isinstance(x, RegisterTensor) and isinstance(s, SharedTensor)
                and isinstance(g, GlobalTensor) and not isinstance(x, SharedTensor)
                and not isinstance(s, RegisterTensor) and not isinstance(g, RegisterTensor)):
            x = x + 1.0
        self.free_shared(s)
        self.store_global(self.global_view(b, shape=[n], dtype=f32), x, offsets=[0])


def test_isinstance_tells_the_tile_kinds_apart_in_a_script():
    a = torch.randn(32)
    b = torch.full((32,), float("nan"))
    ScopeChecks()(32, a, b)
    assert torch.equal(b, a + 1)


def test_utils():
    assert tilus.utils.gcd(12, 18) == 6 and tilus.utils.gcd(7, 0) == 7
    assert tilus.utils.cdiv(10, 4) == 3
    assert tilus.utils.dtype_to_torch(tilus.bf16) is torch.bfloat16
    assert tilus.utils.dtype_to_torch(tilus.u16) is torch.uint16
    assert tilus.utils.dtype_to_torch(tilus.boolean) is torch.bool
    assert callable(tilus.utils.benchmark_func)


def test_the_rest_of_tilus_02_utils():
    u = tilus.utils
    assert u.lcm(4, 6) == 12 and u.lcm(7, 0) == 0
    assert u.prod([2, 3, 4]) == 24 and u.prod([]) == 1
    assert u.idiv(12, 4) == 3
    with pytest.raises(ValueError, match="not a multiple"):
        u.idiv(13, 4)
    assert u.is_power_of_two(64) and not u.is_power_of_two(48) and not u.is_power_of_two(0)
    assert u.floor_log2(1) == 0 and u.floor_log2(100) == 6 and u.floor_log2(128) == 7
    assert u.nbytes_from_nbits(13) == 2 and u.nbytes_from_nbits(16) == 2
    assert u.same_list([1, 2], (1, 2)) and not u.same_list([1, 2], [1, 2, 3])
    assert u.dtype_from_torch(torch.bfloat16) == tilus.bfloat16
    with pytest.raises(ValueError, match="no type"):
        u.dtype_from_torch(torch.complex64)


def test_tilus_02_option_spellings(tmp_path):
    o = tilus.option
    cache = o.get_cache_dir()
    try:
        o.parallel_workers(3)
        o.bench_warmup(4)
        o.bench_repeat(7)
        assert (o.get_option("parallel_workers"), o.get_option("bench_warmup"), o.get_option("bench_repeat")) \
            == (3, 4, 7) == (o.get_build_threads(), o.get_tuning().warmup, o.get_tuning().repeat)
        o.cache_dir(str(tmp_path))
        assert o.get_option("cache_dir") == str(tmp_path)
        o.debug.dump_ir(True)
        assert o.get_option("debug.dump_ir") and o.get_dump_dir() == str(tmp_path / "dump")
        o.debug.dump_ir(False)
        assert not o.get_option("debug.dump_ir")
        (tmp_path / "kernel.cubin").write_bytes(b"x")
        tilus.utils.clear_cache()
        assert not tmp_path.exists()
        with pytest.raises(KeyError, match="no option"):
            o.get_option("nonsense")
    finally:  # back to the environment's / the defaults
        o.build_threads(None)
        o.reset_tuning()
        o.dump(None)
        o.cache_dir(cache)


def test_tilus_logging_reports_autotuning_decisions():
    import io
    import logging

    @tilus.autotune("warps", [1, 2])
    class Twice(tilus.Script):
        def __init__(self, warps):
            super().__init__()
            self.warps = warps

        def __call__(self, n: tilus.int32, x: ~tilus.float32, y: ~tilus.float32):
            self.attrs.blocks = 1
            self.attrs.warps = self.warps
            g = self.global_view(x, dtype=tilus.float32, shape=[n])
            self.store_global(self.global_view(y, dtype=tilus.float32, shape=[n]),
                              self.load_global(g, offsets=[0], shape=[64]) * 2.0, offsets=[0])

    logger = logging.getLogger("tilus")
    tilus.logging.init_logging("INFO")
    stream = io.StringIO()
    handler = logger.handlers[0]
    old_stream = handler.setStream(stream)
    try:
        y = torch.zeros(64)
        Twice()(64, torch.ones(64), y)
        assert torch.equal(y, torch.full((64,), 2.0))
        assert "tilus.autotune - INFO - Twice" in stream.getvalue() and "config 0 {'warps': 1}" in stream.getvalue()
        tilus.logging.set_logging_level("WARNING")
        Twice()(32, torch.ones(64), y)
        assert stream.getvalue().count("INFO") == 1
        assert tilus.logging.get_logger("tilus.autotune") is logging.getLogger("tilus.autotune")
        with pytest.raises(ValueError, match="must be 'tilus'"):
            tilus.logging.get_logger("other")
        with pytest.raises(ValueError, match="unknown level"):
            tilus.logging.set_logging_level("LOUD")
    finally:
        handler.setStream(old_stream)
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        logger.propagate = True


@pytest.mark.parametrize("capability,runs", [
    (None, {"nvgpu_sm80": False, "nvgpu_sm90": False, "nvgpu_sm100": False, "nvgpu_sm100a": False}),
    ((8, 0), {"nvgpu_sm80": True, "nvgpu_sm90": False, "nvgpu_sm100": False, "nvgpu_sm100a": False}),
    ((9, 0), {"nvgpu_sm80": True, "nvgpu_sm90": True, "nvgpu_sm100": False, "nvgpu_sm100a": False}),
    ((10, 0), {"nvgpu_sm80": True, "nvgpu_sm90": True, "nvgpu_sm100": True, "nvgpu_sm100a": True}),
    ((12, 0), {"nvgpu_sm80": True, "nvgpu_sm90": True, "nvgpu_sm100": True, "nvgpu_sm100a": False}),
])
def test_tilus_testing_requires_skips_what_the_gpu_cannot_run(monkeypatch, capability, runs):
    import tilus.testing

    monkeypatch.setattr(tilus.testing, "_capability", lambda: capability)
    for name, expected in runs.items():
        def case():
            pass

        decorated = getattr(tilus.testing.requires, name)(case)
        skipped = any(m.name == "skip" for m in getattr(decorated, "pytestmark", []))
        assert skipped != expected, (name, capability)


def test_targets_and_what_they_support():
    from tilus import target

    assert str(target.nvgpu_sm90a) == "nvgpu/sm_90a"
    assert target.nvgpu_sm90a.supports(target.nvgpu_sm80) and target.nvgpu_sm90a.supports(target.nvgpu_sm90)
    assert not target.nvgpu_sm90.supports(target.nvgpu_sm90a)  # the a features need sm_90a itself
    assert not target.nvgpu_sm80.supports(target.nvgpu_sm90)
    assert target.nvgpu_sm100a.supports(target.nvgpu_sm100f) and not target.nvgpu_sm100.supports(target.nvgpu_sm100f)
    assert not target.nvgpu_sm120a.supports(target.nvgpu_sm100a)
    assert all(t.supports(target.gpgpu_any) for t in (target.nvgpu_sm80, target.nvgpu_sm120a))
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA GPU"):
            tilus.get_current_target()
    else:
        current = tilus.get_current_target()
        major, minor = torch.cuda.get_device_capability()
        assert current.properties.compute_capability == (major, minor)
        assert current.supports(target.nvgpu_sm80) == (major >= 8)


class _Plain(tilus.Script):
    def __call__(self, n: i32):
        self.attrs.blocks = 1
        self.attrs.warps = 1


@tilus.autotune("warps", [1, 2])
class _Tuned(tilus.Script):
    def __init__(self, warps):
        super().__init__()
        self.warps = warps

    def __call__(self, n: i32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps


def test_instantiated_script_covers_plain_and_tuned_scripts():
    assert isinstance(_Plain(), tilus.InstantiatedScript)
    assert isinstance(_Tuned(), tilus.InstantiatedScript)
    assert not isinstance(object(), tilus.InstantiatedScript)
