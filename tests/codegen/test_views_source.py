"""The CUDA generated for the register shape changes compiles (NVRTC, sm_80 and sm_90a);
a derivable reshape / transpose / squeeze / repeat is a register copy with no shared
memory traffic, and one that cuts a layout mode exchanges through shared memory."""

import os

import pytest
import torch

from tests.interp.test_views import CASES, Apply, DecodeStep, DotT, ViewBits
from tilus import _C, int32
from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc

rt = _C.runtime

require_nvrtc()


_source = kernel_source


def _body(src):
    return src[src.index("__global__"):]


def _uses_shared_memory(body):
    # the kernel always declares the dynamic shared buffer; any other mention uses it
    return body.count("tl_smem") > 1 or "__syncthreads" in body


def _apply(shape, fn, want, warps=4, dtype=None):
    x = torch.zeros(*shape)
    out = torch.zeros(want(x).shape)
    kwargs = {} if dtype is None else {"dtype": dtype}
    return Apply(list(shape), fn, list(out.shape), warps=warps, **kwargs), (x, out)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_shape_changes_compile(arch, case):
    shape, fn, want = CASES[case]
    kernel, args = _apply(shape, fn, want)
    _source(kernel, args, arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_views_and_the_02_style_program_compile(arch):
    _source(ViewBits(37, "bits"), (torch.zeros(37, dtype=torch.float16), torch.zeros(37, dtype=torch.int16),
                                   torch.zeros(1, dtype=torch.uint8)), arch)
    src = _source(ViewBits(128, "bytes"), (torch.zeros(128, dtype=torch.float16), torch.zeros(1, dtype=torch.int16),
                                           torch.zeros(256, dtype=torch.uint8)), arch)
    assert "view: the same bits" in src
    d = 12
    args = [torch.zeros(d, d), torch.zeros(d), torch.zeros(d), torch.zeros(d), torch.zeros(d),
            torch.zeros(d, d), torch.zeros(3, d)]
    _source(DecodeStep(d, 3), args, arch)


FREE = [
    ((64, 32), lambda s, t: s.transpose(t), lambda x: x.t()),
    ((64, 32), lambda s, t: s.reshape(t, [8, 8, 32]), lambda x: x.reshape(8, 8, 32)),
    ((64, 32), lambda s, t: s.reshape(t, [2048]), lambda x: x.reshape(2048)),
    ((64, 32), lambda s, t: s.reshape(t, [32, 64]), lambda x: x.reshape(32, 64)),
    ((1, 64), lambda s, t: s.squeeze(t, dim=0), lambda x: x.squeeze(0)),
    ((64, 32), lambda s, t: s.unsqueeze(t, dim=1), lambda x: x.unsqueeze(1)),
    ((16, 32), lambda s, t: s.repeat(t, [2, 1]), lambda x: x.repeat(2, 1)),
    ((16, 32), lambda s, t: s.repeat_interleave(t, [1, 2]), lambda x: x.repeat_interleave(2, 1)),
    ((8, 16, 32), lambda s, t: s.permute(t, [2, 0, 1]), lambda x: x.permute(2, 0, 1)),
]


@pytest.mark.parametrize("shape,fn,want", FREE)
def test_a_derivable_shape_change_moves_no_data_through_shared_memory(shape, fn, want):
    kernel, args = _apply(shape, fn, want)
    body = _body(_source(kernel, args))
    assert not _uses_shared_memory(body)


def test_a_view_as_another_type_of_the_same_size_is_a_register_copy():
    kernel, args = _apply((64, 32), lambda s, t: s.view(s.view(t, dtype=int32) + 1, dtype=t.dtype),
                          lambda x: x)
    body = _body(_source(kernel, args))
    assert "memcpy(" in body and not _uses_shared_memory(body)


def test_a_reshape_cutting_a_mode_exchanges_through_shared_memory():
    # [6, 10] over one warp: 6 rows of threads; [4, 15] cuts that mode.
    kernel, args = _apply((6, 10), lambda s, t: s.reshape(t, [4, 15]), lambda x: x.reshape(4, 15), warps=1)
    body = _body(_source(kernel, args))
    assert "exchange through shared memory" in body and _uses_shared_memory(body)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_transposed_dot_operand_compiles(arch):
    _source(DotT(), (torch.zeros(32, 16, dtype=torch.float16), torch.zeros(32, 16, dtype=torch.float16),
                     torch.zeros(32, 32)), arch)
