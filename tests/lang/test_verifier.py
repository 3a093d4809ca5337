"""The IR verifier (csrc/ir/verifier.h): on under pytest, silent on every example and
seed configuration after the builder and after layout inference (both targets), and its
errors name the script file and line of the offending statement and the pass."""

import pathlib

import pytest
import torch

import tilus
from tilus import _C, float32
from tilus.lang.errors import ScriptError
from tests.codegen.test_generated_sources import _HOPPER_ONLY, _programs


def test_tests_run_with_the_verifier_on():
    assert tilus.option.get_verify()


def test_every_example_passes_after_every_pass(example):
    count = 0
    for name, kernel, args in _programs(example):
        program = kernel.compile(*args).program   # the builder already verified it
        _C.verify(program, "the builder")
        for wgmma in (False, True):
            _C.verify_layouts(program, wgmma)
        for arch in ("sm_80", "sm_90a"):          # layout inference inside codegen verifies
            if arch == "sm_80" and name.startswith(_HOPPER_ONLY):
                continue
            _C.generate_cuda(program, True, arch)
        count += 1
    assert count >= 10


class ReadsInFlight(tilus.Script):
    def __call__(self, src: ~float32, dst: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gs = self.global_view(src, dtype=float32, shape=[8])
        gd = self.global_view(dst, dtype=float32, shape=[8])
        s = self.shared_tensor(dtype=float32, shape=[8])
        self.copy_async(src=gs, dst=s, offsets=[0])
        self.copy_async_commit_group()
        self.store_global(gd, self.load_shared(s), offsets=[0])  # MARK: read in flight


class NeverCommitted(tilus.Script):
    def __call__(self, src: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gs = self.global_view(src, dtype=float32, shape=[8])
        s = self.shared_tensor(dtype=float32, shape=[8])
        self.copy_async(src=gs, dst=s, offsets=[0])  # MARK: never committed
        self.copy_async_wait_group(0)  # MARK: the wait


def _line(marker: str) -> int:
    lines = pathlib.Path(__file__).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if f"# MARK: {marker}" in text)


def test_error_names_the_script_line_and_the_pass():
    with pytest.raises(ScriptError) as err:
        ReadsInFlight()(torch.zeros(8), torch.zeros(8))
    e = err.value
    assert isinstance(e, RuntimeError)
    assert e.message.startswith("IR verifier (after the builder): load_shared accesses s while "
                                f"the copy_async at {__file__}:{_line('read in flight') - 2}")
    assert (e.file, e.line) == (__file__, _line("read in flight"))
    assert f'File "{__file__}", line {_line("read in flight")}' in str(e)


def test_uncommitted_copy_is_reported_at_the_wait():
    with pytest.raises(ScriptError) as err:
        NeverCommitted()(torch.zeros(8))
    assert err.value.line == _line("the wait")
    assert f"copy_async at {__file__}:{_line('never committed')}" in err.value.message


class ReadsInFlightUnchecked(ReadsInFlight):
    """The same script as another class: its own compile cache entry."""


def test_switch_off_builds_the_program():
    tilus.option.verify(False)
    try:
        assert not tilus.option.get_verify()
        # the interpreter runs it as written, and its uninitialised-read check (on by
        # default) catches the read of what the copy has not written yet
        with pytest.raises(ScriptError, match=r"load_shared reads element s\[0\] of shared "
                                              r"memory before anything wrote it"):
            ReadsInFlightUnchecked()(torch.zeros(8), torch.zeros(8))
        tilus.option.debug.uninit_check(False)
        ReadsInFlightUnchecked()(torch.zeros(8), torch.zeros(8))
    finally:
        tilus.option.verify(None)
        tilus.option.debug.uninit_check(None)
    assert tilus.option.get_verify()
