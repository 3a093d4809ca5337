"""Layer norm and RMS norm, forward, over the last dimension of a 2-D tensor.

    layer_norm: y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias
    rms_norm:   y = x / sqrt(mean(x * x) + eps) * weight

Like examples/softmax.py, each block owns `block_m` rows; a row that fits one
`block_m x block_n` register tile (what the wrappers arrange, up to 16384 columns) is
read once and written once, with the variance computed from the deviations held in
registers (no E[x^2] - E[x]^2 cancellation). Longer rows loop: one pass per statistic,
then one to write. float32 arithmetic for fp16/bf16/fp32 inputs.

    python examples/norms.py            # CPU tensors: the tilus interpreter, small sizes
    python examples/norms.py --cuda     # GPU: checks against torch, then times it
"""

import os
import sys

import torch

import tilus
from tilus import bfloat16, float16, float32, int32
from tilus.utils import benchmark_func, cdiv, check_tensor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from softmax import UnalignedRows, row_slices  # noqa: E402  (the same slicing, the same walk of unaligned rows)


def _check_tile(block_m, block_n, warps, shifted):
    if block_m * block_n > 16384 or block_m * block_n < 32 * warps:
        raise ValueError("tile too large for registers, or too small for the threads")
    if shifted and block_m != 1:
        raise ValueError("shifted: one row a block (block_m 1)")


class ShiftedRow(UnalignedRows):
    """A norm's row that is not 16-byte aligned (`shifted`, the wrappers' `shifted=True`
    for rows not a multiple of 16; one tile, or several of 16 KB for longer rows), walked
    from its first element on a 16-byte boundary as examples/softmax.py does: x read and
    y written in 16-byte vectors, the per-column parameters from the same columns, read
    realigned (slower than the aligned walk on the H100: the wrappers' _script)."""

    def shifted_columns(self, g, n_size: int32, head: int32):
        """A per-column parameter's [n_size] view g as the columns of shifted_views:
        from column `head` on, and the `head` before it."""
        rest = self.global_view(~g[head], dtype=self.dtype, shape=[1, n_size - head], strides=[0, 1])
        before = self.global_view(~g[0], dtype=self.dtype, shape=[1, head], strides=[0, 1])
        return rest, before

    def shifted_tiles(self, rest, before):
        """The tiles of a row in two parts (shifted_views or shifted_columns), as float32."""
        return self.tile_at(rest, 0), self.head_tile(before)

    def tile_at(self, view, col: int32):
        """The [1, block_n] tile of a row part (shifted_views or shifted_columns) at `col`,
        as float32."""
        return self.load_global(view, offsets=[0, col], shape=[1, self.block_n]).to(float32)

    def head_tile(self, before):
        """The head part of a row (fewer elements than a 16-byte vector; the columns past
        it read 0), as a float32 [1, vector] tile."""
        return self.load_global(before, offsets=[0, 0], shape=[1, 128 // self.dtype.nbits]).to(float32)

    def masked(self, x, x_head, length: int32, head: int32):
        """x (`length` columns) and x_head (`head` columns) with the columns past them 0."""
        cols = self.register_tensor(dtype=int32, shape=[1, self.block_n], init=lambda i, j: j)
        return self.where(cols < length, x, 0.0), self.head_masked(x_head, head)

    def head_masked(self, t, head: int32):
        """A [1, vector] tile of a row's head part with the columns past `head` 0."""
        head_cols = self.register_tensor(dtype=int32, shape=[1, 128 // self.dtype.nbits], init=lambda i, j: j)
        return self.where(head_cols < head, t, 0.0)


@tilus.autotune("warps", [4, 8, 16])
@tilus.autotune("block_m", [1, 2, 4])
class LayerNorm(ShiftedRow, tilus.Script):
    def __init__(self, dtype, block_n: int, block_m: int, warps: int, shifted: bool = False):
        """`shifted`: rows of one tile walked from their 16-byte boundary (ShiftedRow)."""
        super().__init__()
        _check_tile(block_m, block_n, warps, shifted)
        self.dtype, self.block_n, self.block_m, self.warps = dtype, block_n, block_m, warps
        self.shifted = shifted

    def __call__(self, m_size: int32, n_size: int32, x_ptr: tilus.void_p, w_ptr: tilus.void_p,
                 b_ptr: tilus.void_p, y_ptr: tilus.void_p, eps: float32):
        bm, bn = self.block_m, self.block_n
        self.attrs.blocks = [cdiv(m_size, bm)]
        self.attrs.warps = self.warps
        row = self.blockIdx.x * bm
        gx = self.global_view(x_ptr, dtype=self.dtype, shape=[m_size, n_size])
        gy = self.global_view(y_ptr, dtype=self.dtype, shape=[m_size, n_size])
        gw = self.global_view(w_ptr, dtype=self.dtype, shape=[n_size])
        gb = self.global_view(b_ptr, dtype=self.dtype, shape=[n_size])
        cols = self.register_tensor(dtype=int32, shape=[bm, bn], init=lambda i, j: j)

        if n_size <= bn:
            if self.shifted:  # (a Python bool: one of the two is compiled in)
                self.shifted_layer_norm(gx, gy, gw, gb, m_size, n_size, row, eps)
            else:
                x = self.load_global(gx, offsets=[row, 0], shape=[bm, bn]).to(float32)
                # issued beside x's load, so that their latency is not paid after the reductions
                w = self.load_global(gw, offsets=[0], shape=[bn])
                b = self.load_global(gb, offsets=[0], shape=[bn])
                mean = self.sum(x, dim=1, keepdim=True) / n_size
                d = self.where(cols < n_size, x - mean, 0.0)
                rstd = self.rsqrt(self.sum(d * d, dim=1, keepdim=True) / n_size + eps)
                self.store_global(gy, (d * rstd * w.to(float32) + b.to(float32)).to(self.dtype), offsets=[row, 0])
        elif self.shifted:
            self.shifted_long_layer_norm(gx, gy, gw, gb, m_size, n_size, row, eps)
        else:
            total = self.register_tensor(dtype=float32, shape=[bm, 1], init=0.0)
            for col in range(0, n_size, bn):
                x = self.load_global(gx, offsets=[row, col], shape=[bm, bn]).to(float32)
                total = total + self.sum(x, dim=1, keepdim=True)
            mean = total / n_size
            squares = self.register_tensor(dtype=float32, shape=[bm, 1], init=0.0)
            for col in range(0, n_size, bn):
                x = self.load_global(gx, offsets=[row, col], shape=[bm, bn]).to(float32)
                d = self.where(cols + col < n_size, x - mean, 0.0)
                squares = squares + self.sum(d * d, dim=1, keepdim=True)
            rstd = self.rsqrt(squares / n_size + eps)
            for col in range(0, n_size, bn):
                x = self.load_global(gx, offsets=[row, col], shape=[bm, bn]).to(float32)
                w = self.load_global(gw, offsets=[col], shape=[bn]).to(float32)
                b = self.load_global(gb, offsets=[col], shape=[bn]).to(float32)
                self.store_global(gy, ((x - mean) * rstd * w + b).to(self.dtype), offsets=[row, col])

    def shifted_layer_norm(self, gx, gy, gw, gb, m_size: int32, n_size: int32, row: int32, eps: float32):
        """Row `row` of one tile, walked from its 16-byte boundary (ShiftedRow)."""
        xs, xh, head = self.shifted_views(gx, m_size, n_size, row)
        ys, yh, head = self.shifted_views(gy, m_size, n_size, row)
        x, x_head = self.shifted_tiles(xs, xh)
        ws, wh = self.shifted_columns(gw, n_size, head)
        bs, bh = self.shifted_columns(gb, n_size, head)
        w, w_head = self.shifted_tiles(ws, wh)
        b, b_head = self.shifted_tiles(bs, bh)
        mean = (self.sum(x, dim=1, keepdim=True) + self.sum(x_head, dim=1, keepdim=True)) / n_size
        d, d_head = self.masked(x - mean, x_head - mean, n_size - head, head)
        squares = self.sum(d * d, dim=1, keepdim=True) + self.sum(d_head * d_head, dim=1, keepdim=True)
        rstd = self.rsqrt(squares / n_size + eps)
        self.store_global(ys, (d * rstd * w + b).to(self.dtype), offsets=[0, 0])
        self.store_global(yh, (d_head * rstd * w_head + b_head).to(self.dtype), offsets=[0, 0])

    def shifted_long_layer_norm(self, gx, gy, gw, gb, m_size: int32, n_size: int32, row: int32, eps: float32):
        """Row `row` longer than a tile, walked from its 16-byte boundary (ShiftedRow) as
        the aligned long rows are: a pass for the mean, one for the variance, one to
        write; the head, read once, kept in registers."""
        bn = self.block_n
        xs, xh, head = self.shifted_views(gx, m_size, n_size, row)
        ys, yh, head = self.shifted_views(gy, m_size, n_size, row)
        ws, wh = self.shifted_columns(gw, n_size, head)
        bs, bh = self.shifted_columns(gb, n_size, head)
        length = n_size - head
        cols = self.register_tensor(dtype=int32, shape=[1, bn], init=lambda i, j: j)
        x_head = self.head_tile(xh)
        total = self.sum(x_head, dim=1, keepdim=True)  # (columns past the head read 0)
        for col in range(0, length, bn):
            total = total + self.sum(self.tile_at(xs, col), dim=1, keepdim=True)
        mean = total / n_size
        d_head = self.head_masked(x_head - mean, head)
        squares = self.sum(d_head * d_head, dim=1, keepdim=True)
        for col in range(0, length, bn):
            d = self.where(cols + col < length, self.tile_at(xs, col) - mean, 0.0)
            squares = squares + self.sum(d * d, dim=1, keepdim=True)
        rstd = self.rsqrt(squares / n_size + eps)
        for col in range(0, length, bn):
            y = (self.tile_at(xs, col) - mean) * rstd * self.tile_at(ws, col) + self.tile_at(bs, col)
            self.store_global(ys, y.to(self.dtype), offsets=[0, col])
        w_head = self.head_tile(wh)
        b_head = self.head_tile(bh)
        self.store_global(yh, (d_head * rstd * w_head + b_head).to(self.dtype), offsets=[0, 0])


@tilus.autotune("warps", [4, 8, 16])
@tilus.autotune("block_m", [1, 2, 4])
class RMSNorm(ShiftedRow, tilus.Script):
    def __init__(self, dtype, block_n: int, block_m: int, warps: int, shifted: bool = False):
        """`shifted`: rows of one tile walked from their 16-byte boundary (ShiftedRow)."""
        super().__init__()
        _check_tile(block_m, block_n, warps, shifted)
        self.dtype, self.block_n, self.block_m, self.warps = dtype, block_n, block_m, warps
        self.shifted = shifted

    def __call__(self, m_size: int32, n_size: int32, x_ptr: tilus.void_p, w_ptr: tilus.void_p,
                 y_ptr: tilus.void_p, eps: float32):
        bm, bn = self.block_m, self.block_n
        self.attrs.blocks = [cdiv(m_size, bm)]
        self.attrs.warps = self.warps
        row = self.blockIdx.x * bm
        gx = self.global_view(x_ptr, dtype=self.dtype, shape=[m_size, n_size])
        gy = self.global_view(y_ptr, dtype=self.dtype, shape=[m_size, n_size])
        gw = self.global_view(w_ptr, dtype=self.dtype, shape=[n_size])

        if n_size <= bn:
            if self.shifted:  # (a Python bool: one of the two is compiled in)
                self.shifted_rms_norm(gx, gy, gw, m_size, n_size, row, eps)
            else:
                x = self.load_global(gx, offsets=[row, 0], shape=[bm, bn]).to(float32)
                w = self.load_global(gw, offsets=[0], shape=[bn])  # (beside x's load: see LayerNorm)
                rstd = self.rsqrt(self.sum(x * x, dim=1, keepdim=True) / n_size + eps)
                self.store_global(gy, (x * rstd * w.to(float32)).to(self.dtype), offsets=[row, 0])
        elif self.shifted:
            self.shifted_long_rms_norm(gx, gy, gw, m_size, n_size, row, eps)
        else:
            squares = self.register_tensor(dtype=float32, shape=[bm, 1], init=0.0)
            for col in range(0, n_size, bn):
                x = self.load_global(gx, offsets=[row, col], shape=[bm, bn]).to(float32)
                squares = squares + self.sum(x * x, dim=1, keepdim=True)
            rstd = self.rsqrt(squares / n_size + eps)
            for col in range(0, n_size, bn):
                x = self.load_global(gx, offsets=[row, col], shape=[bm, bn]).to(float32)
                w = self.load_global(gw, offsets=[col], shape=[bn]).to(float32)
                self.store_global(gy, (x * rstd * w).to(self.dtype), offsets=[row, col])

    def shifted_rms_norm(self, gx, gy, gw, m_size: int32, n_size: int32, row: int32, eps: float32):
        """Row `row` of one tile, walked from its 16-byte boundary (ShiftedRow)."""
        xs, xh, head = self.shifted_views(gx, m_size, n_size, row)
        ys, yh, head = self.shifted_views(gy, m_size, n_size, row)
        x, x_head = self.shifted_tiles(xs, xh)
        ws, wh = self.shifted_columns(gw, n_size, head)
        w, w_head = self.shifted_tiles(ws, wh)
        # (columns past the row read 0: they add nothing to the squares)
        squares = self.sum(x * x, dim=1, keepdim=True) + self.sum(x_head * x_head, dim=1, keepdim=True)
        rstd = self.rsqrt(squares / n_size + eps)
        self.store_global(ys, (x * rstd * w).to(self.dtype), offsets=[0, 0])
        self.store_global(yh, (x_head * rstd * w_head).to(self.dtype), offsets=[0, 0])

    def shifted_long_rms_norm(self, gx, gy, gw, m_size: int32, n_size: int32, row: int32, eps: float32):
        """Row `row` longer than a tile, walked from its 16-byte boundary (ShiftedRow): a
        pass for the squares, one to write; the head, read once, kept in registers."""
        bn = self.block_n
        xs, xh, head = self.shifted_views(gx, m_size, n_size, row)
        ys, yh, head = self.shifted_views(gy, m_size, n_size, row)
        ws, wh = self.shifted_columns(gw, n_size, head)
        length = n_size - head
        x_head = self.head_tile(xh)
        squares = self.sum(x_head * x_head, dim=1, keepdim=True)  # (columns past a part read 0)
        for col in range(0, length, bn):
            x = self.tile_at(xs, col)
            squares = squares + self.sum(x * x, dim=1, keepdim=True)
        rstd = self.rsqrt(squares / n_size + eps)
        for col in range(0, length, bn):
            self.store_global(ys, (self.tile_at(xs, col) * rstd * self.tile_at(ws, col)).to(self.dtype),
                              offsets=[0, col])
        w_head = self.head_tile(wh)
        self.store_global(yh, (x_head * rstd * w_head).to(self.dtype), offsets=[0, 0])


_TORCH_TO_TILUS = {torch.float16: float16, torch.bfloat16: bfloat16, torch.float32: float32}
_SCRIPTS = {}


def _script(cls, x, block_n, out, shifted=None, **params):
    """The script for x's dtype and width, once x, `out` and the per-column parameters
    (`weight`, `bias`: [n] tensors of x's dtype) are checked: the kernels read and write
    them through raw pointers."""
    if x.dim() != 2 or not x.is_contiguous() or x.dtype not in _TORCH_TO_TILUS:
        raise ValueError(f"{cls.__name__}: x must be a contiguous 2-D float16/bfloat16/float32 tensor")
    n = x.shape[1]
    check_tensor(out, "out", x.shape, x.dtype, x.device, cls.__name__)
    for name, t in params.items():
        check_tensor(t, name, (n,), x.dtype, x.device, cls.__name__)
    # opt-in (rows not a multiple of 16, a tile of one row for 4 warps at least): timed on
    # the H100 it loses to the aligned walk everywhere (benchmarks/README.md; 8192 x 8191
    # fp16 layer norm 126 -> 267 us, RMS 104 -> 159, 1024 x 40007 139 -> 159): most
    # likely the realigned weight and bias loads of every row (layer norm has two and
    # loses more) cost more than its vector stores save
    shifted = bool(shifted) and n % 16 != 0
    if block_n is None:
        block_n = min(16384, max(32, 1 << (n - 1).bit_length()))
        if shifted and n > block_n:  # tiles of 16 KB: a wider one's realigned weight and bias spill
            block_n = 16384 // x.element_size()
    shifted = shifted and 128 <= block_n
    key = (cls, x.dtype, block_n, shifted)
    if key not in _SCRIPTS:
        _SCRIPTS[key] = cls(_TORCH_TO_TILUS[x.dtype], block_n, **({"block_m": 1} if shifted else {}), shifted=shifted)
    return _SCRIPTS[key]


def layer_norm(x, weight, bias, eps=1e-5, out=None, block_n=None, shifted=None):
    out = torch.empty_like(x) if out is None else out
    script = _script(LayerNorm, x, block_n, out, shifted, weight=weight, bias=bias)
    for rows, (x_part, out_part) in row_slices(x, out):  # (calls of at most 2^31 - 1 elements)
        script(rows, x.shape[1], x_part, weight, bias, out_part, eps)
    return out


def rms_norm(x, weight, eps=1e-6, out=None, block_n=None, shifted=None):
    out = torch.empty_like(x) if out is None else out
    script = _script(RMSNorm, x, block_n, out, shifted, weight=weight)
    for rows, (x_part, out_part) in row_slices(x, out):
        script(rows, x.shape[1], x_part, weight, out_part, eps)
    return out


def _rms_reference(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(dim=1, keepdim=True) + eps) * w.float()).to(x.dtype)


def main(device: str):
    torch.manual_seed(0)
    shapes = [(37, 70), (5, 300)] if device == "cpu" else [(1823, 781), (4096, 4096), (8192, 8192)]
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        tol = dict(atol=2e-2, rtol=2e-2) if dtype != torch.float32 else dict(atol=1e-4, rtol=1e-4)
        for m, n in shapes:
            x = (torch.randn(m, n, device=device) * 2 + 0.5).to(dtype)
            w = torch.randn(n, device=device).to(dtype)
            b = torch.randn(n, device=device).to(dtype)
            y = torch.full_like(x, float("nan"))
            layer_norm(x, w, b, 1e-5, out=y)
            ref = torch.nn.functional.layer_norm(x.float(), [n], w.float(), b.float(), 1e-5).to(dtype)
            torch.testing.assert_close(y, ref, **tol)
            z = torch.full_like(x, float("nan"))
            rms_norm(x, w, 1e-6, out=z)
            torch.testing.assert_close(z, _rms_reference(x, w, 1e-6), **tol)
            line = f"norms {str(dtype)[6:]:8s} {m:5d} x {n:5d}: ok"
            if device == "cuda":
                t_ln = benchmark_func(lambda: layer_norm(x, w, b, 1e-5, out=y))
                t_rms = benchmark_func(lambda: rms_norm(x, w, 1e-6, out=z))
                line += f"   layer_norm {t_ln:.3f} ms   rms_norm {t_rms:.3f} ms"
            print(line)
    if device == "cpu":  # the looping path for rows longer than one tile
        x, w, b = torch.randn(6, 100), torch.randn(100), torch.randn(100)
        torch.testing.assert_close(layer_norm(x, w, b, block_n=32),
                                   torch.nn.functional.layer_norm(x, [100], w, b, 1e-5),
                                   atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(rms_norm(x, w, block_n=32), _rms_reference(x, w, 1e-6),
                                   atol=1e-4, rtol=1e-4)
        print("norms, rows longer than the tile: ok")


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
