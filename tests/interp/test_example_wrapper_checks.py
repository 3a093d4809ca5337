"""The examples' torch-facing wrappers refuse what their kernels would misread or write
past, naming the parameter, before anything runs: a wrong `out` (shape, dtype, strides,
device) and operands on different devices (a `meta` tensor stands for another device on
a machine without a GPU). Nothing is written to `out` when refused."""

import pytest
import torch


def _poisoned(shape, dtype=torch.float16):
    return torch.full(shape, 7.0, dtype=dtype)


def _wrong_outs(shape, dtype):
    rows, *rest = shape
    return {"shape": _poisoned((rows + 1, *rest), dtype), "dtype": _poisoned(shape, torch.float32),
            "strides": _poisoned(tuple(reversed(shape)), dtype).permute(*reversed(range(len(shape))))}


def _refused(call, out, match):
    with pytest.raises(ValueError, match=match):
        call()
    assert (out == 7.0).all()  # nothing written


@pytest.mark.parametrize("name", ["flash_attention", "flash_attention_hopper"])
@pytest.mark.parametrize("bad", ["shape", "dtype", "strides"])
def test_flash_attention_refuses_a_wrong_out(example, name, bad):
    fa = example(name)
    q, k, v = torch.randn(1, 64, 2, 64).half(), torch.randn(1, 64, 1, 64).half(), torch.randn(1, 64, 1, 64).half()
    out = _wrong_outs((1, 64, 2, 64), torch.float16)[bad]
    _refused(lambda: fa.flash_attention(q, k, v, out=out), out,
             r"flash_attention: out must be a contiguous torch.float16 \[1, 64, 2, 64\] tensor on cpu")


def test_flash_attention_refuses_operands_on_two_devices(example):
    fa = example("flash_attention")
    q, k = torch.randn(1, 64, 2, 64).half(), torch.randn(1, 64, 1, 64).half()
    with pytest.raises(ValueError, match="q, k, v must be on one device, got q on cpu, k on cpu, v on meta"):
        fa.flash_attention(q, k, torch.empty(1, 64, 1, 64, dtype=torch.float16, device="meta"))


@pytest.mark.parametrize("bad", ["shape", "dtype", "strides"])
def test_decode_attention_refuses_a_wrong_out(example, bad):
    da = example("decode_attention")
    q, k, v = torch.randn(2, 4, 64).half(), torch.randn(2, 100, 2, 64).half(), torch.randn(2, 100, 2, 64).half()
    lengths = torch.tensor([100, 37], dtype=torch.int32)
    out = _wrong_outs((2, 4, 64), torch.float16)[bad]
    _refused(lambda: da.decode_attention(q, k, v, lengths, out=out), out,
             r"decode_attention: out must be a contiguous torch.float16 \[2, 4, 64\] tensor on cpu")
    with pytest.raises(ValueError, match="lengths on meta"):
        da.decode_attention(q, k, v, torch.empty(2, dtype=torch.int32, device="meta"))


@pytest.mark.parametrize("bad", ["shape", "dtype", "strides"])
def test_warp_specialized_matmul_refuses_a_wrong_out(example, bad):
    mm = example("matmul_warp_specialized")
    a, b = torch.randn(24, 64).half(), torch.randn(40, 64).half()
    out = _wrong_outs((24, 40), torch.float16)[bad]
    _refused(lambda: mm.matmul(a, b, out=out), out,
             r"matmul: out must be a contiguous torch.float16 \[24, 40\] tensor on cpu")
    with pytest.raises(ValueError, match="a and b must be on one device, got a on cpu, b on meta"):
        mm.matmul(a, torch.empty(40, 64, dtype=torch.float16, device="meta"))
