"""Every mistake names where it is: script errors give file, line and source text;
bad host calls raise TypeError/ValueError naming the parameter, before anything runs."""

import pathlib

import numpy as np
import pytest
import torch

import tilus
from tilus import float16, float32, int32

THIS_FILE = str(pathlib.Path(__file__).resolve())
SOURCE = pathlib.Path(__file__).read_text().splitlines()


def line_of(marker: str) -> int:
    """1-based line number of the unique source line containing `marker`."""
    hits = [i + 1 for i, line in enumerate(SOURCE) if "# " + marker in line]
    assert len(hits) == 1, hits
    return hits[0]


def assert_located(err, marker: str):
    e = err.value
    assert isinstance(e, tilus.ScriptError)
    assert pathlib.Path(e.file).resolve() == pathlib.Path(THIS_FILE)
    assert e.line == line_of(marker), (e.line, str(e))
    message = str(e)
    assert f'line {e.line}' in message
    assert marker in message  # the source text is shown


class UnknownInstruction(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        g = self.global_view(a_ptr, dtype=float32, shape=[n])
        self.load_globl(g, offsets=[0], shape=[4])  # MARK-unknown


def test_unknown_instruction():
    with pytest.raises(AttributeError) as err:
        UnknownInstruction()(4, torch.zeros(4))
    assert_located(err, "MARK-unknown")
    assert "load_globl" in str(err.value)
    assert "did you mean 'load_global'" in str(err.value)


class NoSuchInstruction(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        self.frobnicate()  # MARK-nosuch


def test_an_unknown_name_unlike_any_instruction():
    with pytest.raises(AttributeError) as err:
        NoSuchInstruction()(4, torch.zeros(4))
    assert_located(err, "MARK-nosuch")
    assert "'frobnicate' (unknown instruction?)" in str(err.value)


class TensorMethodTypo(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        g = self.global_view(a_ptr, dtype=float32, shape=[n])
        self.load_global(g, offsets=[0], shape=[4]).transpos()  # MARK-transpos


def test_a_mistyped_tensor_method_names_the_closest():
    with pytest.raises(AttributeError) as err:
        TensorMethodTypo()(4, torch.zeros(4))
    assert_located(err, "MARK-transpos")
    assert "has no attribute 'transpos' (did you mean 'transpose'?)" in str(err.value)


class BlackwellTensorMemory(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        self.tcgen05.alloc(dtype=float32, shape=[128, 32])  # MARK-tcgen05


class BlackwellLaunchControl(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        self.clc.try_cancel()  # MARK-clc


@pytest.mark.parametrize("script,marker,group", [(BlackwellTensorMemory, "MARK-tcgen05", "tcgen05"),
                                                 (BlackwellLaunchControl, "MARK-clc", "clc")])
def test_tilus02_blackwell_instructions_are_refused_by_name(script, marker, group):
    """Tilus 0.2 scripts for Blackwell (self.tcgen05, self.clc) stop at their first use
    with the reason, not a bare unknown attribute."""
    with pytest.raises(AttributeError) as err:
        script()(4, torch.zeros(4))
    assert_located(err, marker)
    assert f"self.{group}" in str(err.value) and "sm_100" in str(err.value)


class WrongArgumentType(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        g = self.global_view(a_ptr, dtype=float32, shape=[n])
        self.load_global(g, offsets=[0], shape=[n])  # MARK-wrongtype


def test_wrong_argument_type():
    with pytest.raises(TypeError) as err:
        WrongArgumentType()(4, torch.zeros(4))
    assert_located(err, "MARK-wrongtype")
    assert "compile-time" in str(err.value)


class DotMismatch(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float16):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        a = self.register_tensor(dtype=float16, shape=[16, 32], init=0.0)
        b = self.register_tensor(dtype=float16, shape=[16, 8], init=0.0)
        c = self.register_tensor(dtype=float32, shape=[16, 8], init=0.0)
        self.dot(a, b, c, out=c)  # MARK-dot


def test_dot_of_mismatched_shapes():
    with pytest.raises(ValueError) as err:
        DotMismatch()(4, torch.zeros(4, dtype=torch.float16))
    assert_located(err, "MARK-dot")
    assert "[16, 32]" in str(err.value) and "[16, 8]" in str(err.value)


class StoreWrongDtype(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float16):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        g = self.global_view(a_ptr, dtype=float16, shape=[n])
        x = self.register_tensor(dtype=float32, shape=[4], init=1.0)
        self.store_global(g, x, offsets=[0])  # MARK-store


def test_storing_float32_through_float16_view():
    with pytest.raises(TypeError) as err:
        StoreWrongDtype()(4, torch.zeros(4, dtype=torch.float16))
    assert_located(err, "MARK-store")
    assert "float32" in str(err.value) and "float16" in str(err.value)


class TooManyWarps(tilus.Script):
    def __call__(self, n: int32):
        self.attrs.blocks = 1
        self.attrs.warps = 33  # MARK-warps


def test_warps_out_of_range():
    with pytest.raises(ValueError) as err:
        TooManyWarps().compile(4)
    assert_located(err, "MARK-warps")
    assert "[1, 32]" in str(err.value)


class Unannotated(tilus.Script):
    def __call__(self, n: int32, a_ptr):  # MARK-unannotated
        self.attrs.blocks = 1
        self.attrs.warps = 1


def test_unannotated_parameter():
    with pytest.raises(TypeError) as err:
        Unannotated()(4, torch.zeros(4))
    assert_located(err, "MARK-unannotated")
    assert "'a_ptr'" in str(err.value)


class UseAfterBlock(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        g = self.global_view(a_ptr, dtype=float32, shape=[n])
        for i in range(n):
            x = self.load_global(g, offsets=[i], shape=[4])
        self.store_global(g, x, offsets=[0])  # MARK-scope


def test_tensor_used_after_its_loop():
    with pytest.raises(NameError) as err:
        UseAfterBlock()(4, torch.zeros(4))
    assert_located(err, "MARK-scope")


class Good(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float16, b_ptr: ~float16):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        ga = self.global_view(a_ptr, dtype=float16, shape=[n])
        gb = self.global_view(b_ptr, dtype=float16, shape=[n])
        self.store_global(gb, self.load_global(ga, offsets=[0], shape=[8]), offsets=[0])


def _tensors():
    a = torch.arange(8, dtype=torch.float16)
    b = torch.full((8,), 7.0, dtype=torch.float16)
    return a, b


def test_wrong_argument_count():
    a, b = _tensors()
    with pytest.raises(TypeError, match=r"takes 3 arguments \(n, a_ptr, b_ptr\) but 2 were given: "
                                        r"missing 'b_ptr'$"):
        Good()(8, a)
    with pytest.raises(TypeError, match=r"but 4 were given$"):
        Good()(8, a, b, b)
    with pytest.raises(TypeError, match=r"got 1: missing 'a_ptr', 'b_ptr'$"):
        Good().compiled(8, a, b)(8)
    assert torch.all(b == 7)


def test_tensor_dtype_mismatch_names_the_parameter():
    a, b = _tensors()
    with pytest.raises(TypeError, match=r"'b_ptr' has dtype torch.float32 .* ~float16"):
        Good()(8, a, b.float())


def test_non_contiguous_tensor_names_the_parameter():
    a, _ = _tensors()
    b = torch.zeros(8, 2, dtype=torch.float16)[:, 0]
    with pytest.raises(ValueError, match=r"'b_ptr' is not contiguous"):
        Good()(8, a, b)
    assert torch.all(b == 0)  # nothing was written


def test_tensors_on_different_devices():
    a, _ = _tensors()
    b = torch.empty(8, dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match=r"different devices: 'a_ptr' on cpu, 'b_ptr' on meta"):
        Good()(8, a, b)


def test_scalar_of_wrong_type_names_the_parameter():
    a, b = _tensors()
    with pytest.raises(TypeError, match=r"'n' is int32, got float"):
        Good()(8.0, a, b)
    with pytest.raises(ValueError, match=r"'n' = 4294967296 does not fit in int32"):
        Good()(2**32, a, b)


class AssignLoopVariable(tilus.Script):
    def __call__(self, n: int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        for i in range(n):
            i = i + 2  # MARK-loopvar


def test_assigning_a_runtime_loop_variable():
    with pytest.raises(SyntaxError) as err:
        AssignLoopVariable().compile(4)
    assert_located(err, "MARK-loopvar")


class NoSuperInit(tilus.Script):
    def __init__(self):
        self.block = 8  # forgot super().__init__()

    def __call__(self, n: int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1


def test_missing_super_init_is_named():
    with pytest.raises(TypeError, match=r"NoSuperInit.__init__ must call super\(\).__init__\(\)"):
        NoSuperInit()(4)


class JitSize(tilus.Script):
    def __call__(self, n: int, a_ptr: ~float16, b_ptr: ~float16):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        ga = self.global_view(a_ptr, dtype=float16, shape=[n])
        gb = self.global_view(b_ptr, dtype=float16, shape=[n])
        self.store_global(gb, self.load_global(ga, offsets=[0], shape=[8]), offsets=[0])


def test_keyword_arguments_and_jit_types():
    a, b = _tensors()
    JitSize()(8, b_ptr=b, a_ptr=a)
    assert torch.equal(a, b)
    with pytest.raises(TypeError, match=r"'n' is a compile-time int, got float"):
        JitSize()(8.0, a, b)
    with pytest.raises(TypeError, match=r"got multiple values for argument 'a_ptr'"):
        JitSize()(8, a, b, a_ptr=a)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'c_ptr'"):
        JitSize()(8, a, c_ptr=b)


def test_source_names_a_bad_arch_and_lists_the_accepted_ones():
    a, b = _tensors()
    for arch in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120"):
        assert "__global__" in Good().source(8, a, b, arch=arch)
    for arch in ("sm_bogus", "sm_75", "sm_86a", "sm90a", "compute_90a", ""):
        with pytest.raises(ValueError) as err:
            Good().source(8, a, b, arch=arch)
        message = str(err.value)
        assert message.startswith(f"Good.source(): arch={arch!r} is not an architecture")
        assert "'sm_<major><minor>' of compute capability 8.0 or newer" in message
        assert "'sm_90a'" in message and "None for the current GPU's" in message
    with pytest.raises(TypeError, match=r"Good.source\(\): arch=90 is not an architecture"):
        Good().source(8, a, b, arch=90)


def test_the_error_shows_a_caret_under_the_failing_expression():
    with pytest.raises(AttributeError) as err:
        UnknownInstruction()(4, torch.zeros(4))
    source, caret = str(err.value).splitlines()[-2:]
    assert source.strip().startswith("self.load_globl(")
    assert caret[caret.index("^"):] == "^" * len("self.load_globl")
    assert source[caret.index("^"):].startswith("self.load_globl")


class Scale(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float32, b_ptr: ~float32, factor: float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        ga = self.global_view(a_ptr, dtype=float32, shape=[n])
        gb = self.global_view(b_ptr, dtype=float32, shape=[n])
        self.store_global(gb, self.load_global(ga, offsets=[0], shape=[8]) * factor, offsets=[0])


def test_a_float_too_large_for_float32_names_the_parameter():
    a, b = torch.ones(8), torch.zeros(8)
    with pytest.raises(ValueError, match=r"'factor' = 1e\+300 does not fit in float32"):
        Scale()(8, a, b, 1e300)
    with pytest.raises(ValueError, match=r"'factor' = -3.5e\+38 does not fit in float32"):
        Scale()(8, a, b, -3.5e38)
    with pytest.raises(ValueError, match=r"'factor' = 10{400} does not fit in float32"):
        Scale()(8, a, b, 10**400)
    assert torch.all(b == 0)
    Scale()(8, a, b, 3.4028234e38)  # the largest float32 still fits
    Scale()(8, a, b, float("inf"))  # an infinity given is an infinity meant
    assert torch.all(b == float("inf"))
    handle = Scale().compiled(8, a, b, 1.0)
    with pytest.raises(ValueError, match=r"'factor' = 1e\+39 does not fit in float32"):
        handle(8, a, b, 1e39)


class Half(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float16, factor: float16):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        ga = self.global_view(a_ptr, dtype=float16, shape=[n])
        self.store_global(ga, self.load_global(ga, offsets=[0], shape=[8]) * factor, offsets=[0])


def test_a_float_too_large_for_float16_names_the_parameter():
    a = torch.ones(8, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"'factor' = 70000.0 does not fit in float16"):
        Half()(8, a, 70000.0)
    Half()(8, a, 65504.0)


def _read_only(n=8, value=0.0):
    array = np.full(n, value, np.float32)
    array.setflags(write=False)
    return array


class DLPackOnly:
    """An object offering only the DLPack protocol (as JAX arrays do)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_a_read_only_output_is_refused_naming_the_parameter():
    a = np.ones(8, np.float32)
    for out in (_read_only(), np.frombuffer(bytes(32), dtype=np.float32),
                DLPackOnly(_read_only())):
        with pytest.raises(ValueError, match=r"argument 'b_ptr' is read-only, but the kernel "
                                             r"writes through it"):
            Scale()(8, a, out, 2.0)
    assert not _read_only().any()


def test_a_read_only_input_that_is_only_read_is_accepted():
    b = np.zeros(8, np.float32)
    Scale()(8, _read_only(value=3.0), b, 2.0)
    np.testing.assert_array_equal(b, 6.0)
    Scale()(8, DLPackOnly(_read_only(value=1.0)), b, 2.0)
    np.testing.assert_array_equal(b, 2.0)


def test_a_torch_tensor_over_a_bytes_object_is_refused_as_an_output():
    import warnings

    immutable = bytes(32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that the buffer is not writable
        out = torch.frombuffer(immutable, dtype=torch.float32)
        writable = torch.frombuffer(bytearray(32), dtype=torch.float32)
    a = torch.ones(8)
    with pytest.raises(ValueError, match=r"argument 'b_ptr' is read-only, but the kernel "
                                         r"writes through it"):
        Scale()(8, a, out, 2.0)
    assert immutable == bytes(32)  # nothing was written into the bytes object
    Scale()(8, out, writable, 2.0)  # as an input it is only read; a bytearray is writable
    assert torch.equal(writable, torch.zeros(8))
    Scale()(8, a, writable, 3.0)
    assert torch.equal(writable, torch.full((8,), 3.0))
