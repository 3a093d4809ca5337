"""Scripts with global accesses outside their tensors, for tilus.option.debug.bounds_check:
the codegen tests compile their checked CUDA, the GPU tests run it, the interpreter tests
see the interpreter stop at the same accesses. Each bug is one marked line; LINES maps
a name to it so the tests can check the error names the right line."""

import inspect

import tilus
from tilus import float32, int32
from tilus.utils import cdiv


class StorePastEnd(tilus.Script):
    """y = x + 1 over rows x cols, but the output view has one row too many (the script
    passes `rows + 1`): the last row's stores fall outside y."""

    def __init__(self, block_m=16, block_n=32, warps=4):
        super().__init__()
        self.block_m, self.block_n, self.warps = block_m, block_n, warps

    def __call__(self, rows: int32, cols: int32, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = [cdiv(rows + 1, self.block_m), cdiv(cols, self.block_n)]
        self.attrs.warps = self.warps
        gx = self.global_view(x_ptr, dtype=float32, shape=[rows, cols])
        gy = self.global_view(y_ptr, dtype=float32, shape=[rows + 1, cols])
        offsets = [self.blockIdx.x * self.block_m, self.blockIdx.y * self.block_n]
        x = self.load_global(gx, offsets=offsets, shape=[self.block_m, self.block_n])
        self.store_global(gy, x + 1.0, offsets=offsets)  # BUG: store_past_end


class LoadBadOffset(tilus.Script):
    """y[i] = x[i + shift]: the input view starts `shift` elements into x but keeps x's
    length, so its last `shift` elements lie past x's end."""

    def __init__(self, block=128, warps=4):
        super().__init__()
        self.block, self.warps = block, warps

    def __call__(self, n: int32, shift: int32, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = [cdiv(n, self.block)]
        self.attrs.warps = self.warps
        whole = self.global_view(x_ptr, dtype=float32, shape=[n])
        gx = self.global_view(~whole[shift], dtype=float32, shape=[n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])
        start = self.blockIdx.x * self.block
        x = self.load_global(gx, offsets=[start], shape=[self.block])  # BUG: load_bad_offset
        self.store_global(gy, x, offsets=[start])


class ScatterPastEnd(tilus.Script):
    """hist[idx[i]] += 1 with the histogram view declared `extra` bins longer than the
    tensor passed: indices in those bins fall outside it."""

    def __init__(self, block=128, warps=4):
        super().__init__()
        self.block, self.warps = block, warps

    def __call__(self, n: int32, bins: int32, extra: int32, idx_ptr: ~int32, hist_ptr: ~int32):
        self.attrs.blocks = [cdiv(n, self.block)]
        self.attrs.warps = self.warps
        gi = self.global_view(idx_ptr, dtype=int32, shape=[n])
        gh = self.global_view(hist_ptr, dtype=int32, shape=[bins + extra])
        idx = self.load_global(gi, offsets=[self.blockIdx.x * self.block], shape=[self.block])
        ones = self.register_tensor(dtype=int32, shape=[self.block], init=1)
        self.atomic.global_scatter_add(gh, dim=0, indices=idx, values=ones)  # BUG: scatter_past_end


class ElementPastEnd(tilus.Script):
    """y[i] = x[i] * x[pick]: the scalar element x[pick] is read with `pick` past x's end,
    through a view declared with `n + 8` elements (the tile load uses a correct one, so
    the element read is the only access outside x)."""

    def __init__(self, block=64, warps=2):
        super().__init__()
        self.block, self.warps = block, warps

    def __call__(self, n: int32, pick: int32, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = [cdiv(n, self.block)]
        self.attrs.warps = self.warps
        gp = self.global_view(x_ptr, dtype=float32, shape=[n + 8])
        gx = self.global_view(x_ptr, dtype=float32, shape=[n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])
        scale = gp[pick].item()  # BUG: element_past_end
        x = self.load_global(gx, offsets=[self.blockIdx.x * self.block], shape=[self.block])
        self.store_global(gy, x * scale, offsets=[self.blockIdx.x * self.block])


class CopyAsyncPastEnd(tilus.Script):
    """y = x through shared memory with copy_async, the input view `extra` rows too long."""

    def __init__(self, block_m=16, block_n=64, warps=4):
        super().__init__()
        self.block_m, self.block_n, self.warps = block_m, block_n, warps

    def __call__(self, rows: int32, extra: int32, x_ptr: ~float32, y_ptr: ~float32):
        bm, bn = self.block_m, self.block_n
        self.attrs.blocks = [cdiv(rows + extra, bm)]
        self.attrs.warps = self.warps
        gx = self.global_view(x_ptr, dtype=float32, shape=[rows + extra, bn])
        gy = self.global_view(y_ptr, dtype=float32, shape=[rows + extra, bn])
        s = self.shared_tensor(dtype=float32, shape=[bm, bn])
        start = self.blockIdx.x * bm
        self.copy_async(src=gx, dst=s, offsets=[start, 0])  # BUG: copy_async_past_end
        self.copy_async_commit_group()
        self.copy_async_wait_group(0)
        self.sync()
        x = self.load_shared(s)
        self.free_shared(s)
        self.store_global(gy, x, offsets=[self.blockIdx.x * bm, 0])


def _bug_lines():
    out = {}
    for cls in (StorePastEnd, LoadBadOffset, ScatterPastEnd, ElementPastEnd, CopyAsyncPastEnd):
        lines, start = inspect.getsourcelines(cls.__call__ if "__call__" in cls.__dict__
                                              else cls._tilus_kernel_fn)
        for k, text in enumerate(lines):
            if "# BUG: " in text:
                out[text.split("# BUG: ")[1].strip()] = start + k
    return out


LINES = _bug_lines()
FILE = __file__
