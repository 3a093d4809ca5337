"""Timing candidates on the GPU without touching the user's data.

Every argument that some candidate may write (``_C.autotune.written_params``, a
conservative analysis of the IR) is replaced by a scratch copy made once per tuning,
holding the same bytes and the same address alignment; arguments no candidate writes
are passed as they are. A bench on another device than the tensors' (tuning spread over
GPUs, spread.py) copies every tensor argument instead, so that device reads only its
own memory. Candidates therefore read the real inputs and write only
scratch memory, and after tuning the user's tensors hold exactly one run: the
winner's, on the real arguments. Each candidate is timed by
``_C.autotune.time_runs``: warm-up runs, then CUDA-event-timed runs on the launch
stream, each after flushing L2 as many times as it takes the host to launch it
(csrc/autotune/timing.h: the GPU must not wait for the host inside a timed run); its
time is the median.
"""

from __future__ import annotations

import dataclasses
from typing import List

from tilus import _C
from tilus.arguments import prepare_runtime_args
from tilus.option import TuningOptions

# The flush must also outlast the host's work to launch one candidate (a Python launch
# is tens of microseconds), or the GPU idles inside the timed region: 256 MiB takes
# ~0.1 ms to overwrite on an H100 (as Triton's do_bench).
_FLUSH_MIN_BYTES = 256 << 20


def launch_stream(device: int) -> int:
    """The stream launches go to; this must match runtime/launcher.py's choice (torch's
    current stream of the device, else the legacy default stream)."""
    try:
        import torch

        return torch.cuda.current_stream(device).cuda_stream
    except Exception:
        return 0


def _scratch(device: int, nbytes: int, like_address: int = 0):
    """A ScratchBuffer; when the GPU is full, torch's cached free blocks are released and
    the allocation tried once more."""
    try:
        return _C.autotune.ScratchBuffer(device, nbytes, like_address)
    except RuntimeError:
        if not _release_torch_cache():
            raise
        return _C.autotune.ScratchBuffer(device, nbytes, like_address)


def _release_torch_cache() -> bool:
    try:
        import torch

        torch.cuda.empty_cache()
        return True
    except Exception:
        return False


class GpuBench:
    def __init__(self, device: int, sig, values: list, owner: str, candidates: List,
                 options: TuningOptions):
        self.options = options
        self.device = device
        runtime_args, self.tensors = prepare_runtime_args(sig, values, owner)
        written = [False] * len(runtime_args)
        for c in candidates:
            for j, flag in enumerate(_C.autotune.written_params(c.compiled.program)):
                written[j] = written[j] or flag
        # The device's context is current while this bench lives (its thread's), and the
        # previous one again after close(): tuning leaves the current device alone.
        self._scope = _C.runtime.DeviceScope(device)
        self._scope.__enter__()
        self.stream = launch_stream(device)
        self._buffers = []
        self.args = list(runtime_args)
        self.scratch_params = []
        tensors = iter(self.tensors)
        for j, i in enumerate(sig.runtime_indices):
            if not sig.params[i].type.is_pointer:
                continue
            tensor = next(tensors)
            elsewhere = tensor.device != f"cuda:{device}"
            if written[j] or elsewhere:
                if tensor.nbytes < 0:
                    raise ValueError(f"autotuning: argument '{tensor.param}' is an integer address whose "
                                     "allocation the driver could not size, and candidates write it (or run "
                                     "on another GPU); pass the tensor itself")
                copy = _scratch(device, tensor.nbytes, tensor.address)
                copy.copy_from(tensor.address, self.stream)
                self._buffers.append(copy)
                self.args[j] = copy.address
                self.scratch_params.append(sig.params[i].name)
                if elsewhere:
                    self.tensors = [dataclasses.replace(t, address=copy.address,
                                                        device=f"cuda:{device}")
                                    if t is tensor else t for t in self.tensors]
        self._flush = None
        if options.flush_l2:
            l2 = _C.runtime.device_info(device)["l2_cache_bytes"]
            self._flush = _scratch(device, max(2 * l2, _FLUSH_MIN_BYTES))

    def measure(self, candidate, prune_ms: float = 0.0) -> float:
        """Median milliseconds of one candidate; raises whatever its launch raises."""
        compiled, args, tensors = candidate.compiled, self.args, self.tensors

        def run():
            compiled.run_gpu(args, tensors)

        flush = self._flush
        timing = _C.autotune.time_runs(run, self.stream, self.options.warmup,
                                       self.options.repeat,
                                       flush.address if flush else 0, flush.bytes if flush else 0,
                                       prune_ms)
        return _C.autotune.median(timing.times)

    def close(self):
        """Waits for the candidates' work, then frees the scratch memory."""
        try:
            _C.runtime.synchronize(self.stream)
        finally:
            self._buffers.clear()
            self._flush = None
            self._scope.__exit__(None, None, None)
