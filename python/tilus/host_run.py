"""tilus.option.interpret: a call with CUDA tensors runs in the CPU interpreter.

Each CUDA tensor argument is copied to the host, the call runs as a CPU call would (the
interpreter, its checks, the CPU choice of an autotuned script), and each host copy the
kernel changed is copied back into its CUDA tensor. Arguments that are views of one
allocation become separate host copies: a kernel that relies on two arguments aliasing
sees them apart here.
"""

from __future__ import annotations

from typing import Callable, List, Tuple


def _is_cuda_tensor(value) -> bool:
    return getattr(value, "is_cuda", False) is True and hasattr(value, "copy_")


def has_cuda_tensor(args, kwargs) -> bool:
    return any(_is_cuda_tensor(v) for v in args) or any(_is_cuda_tensor(v) for v in kwargs.values())


def run_on_host(call: Callable, args: tuple, kwargs: dict):
    """call(*args, **kwargs) with every CUDA tensor replaced by a host copy; the copies
    the call changed are written back."""
    import torch

    copies: List[Tuple[object, object, object]] = []  # (device tensor, host copy, snapshot)

    def to_host(value):
        if not _is_cuda_tensor(value):
            return value
        host = value.to("cpu")  # keeps the strides of a dense tensor
        copies.append((value, host, host.clone()))
        return host

    host_args = tuple(to_host(v) for v in args)
    host_kwargs = {k: to_host(v) for k, v in kwargs.items()}
    result = call(*host_args, **host_kwargs)
    for device_tensor, host, snapshot in copies:
        if not torch.equal(host, snapshot):
            device_tensor.copy_(host)
    return result
