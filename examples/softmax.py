"""Fused row softmax: y[i, :] = exp(x[i, :] - max(x[i, :])) / sum(exp(x[i, :] - max(x[i, :]))).

Memory-bound, so the kernel's job is to read x once and write y once. Each block owns
`block_m` rows and holds a `block_m x block_n` tile of them in registers:

* a row that fits one tile (n <= block_n, the case the wrapper below arranges) is loaded
  once, reduced (row max, then the sum of exponentials) and written from registers;
* longer rows take the general path: an online pass keeps a running max and a running
  sum rescaled whenever the max grows, then a second pass writes the result.

Elements past the end of a row read as zero (load_global's padding); the mask turns them
into -inf so they add nothing to the sum. Arithmetic is float32 for every input dtype;
each row divides once (the reciprocal of its sum) and multiplies every element by it: an
IEEE division per element costs a dozen instructions and a slow-path branch, more than
the memory traffic leaves time for.

    python examples/softmax.py            # CPU tensors: the tilus interpreter, small sizes
    python examples/softmax.py --cuda     # GPU: checks against torch, then times it
"""

import sys

import torch

import tilus
from tilus import bfloat16, float16, float32, int32
from tilus.utils import benchmark_func, cdiv


@tilus.autotune("warps", [4, 8, 16])
@tilus.autotune("block_m", [1, 2, 4])
class Softmax(tilus.Script):
    def __init__(self, dtype, block_n: int, block_m: int, warps: int):
        super().__init__()
        # at most 64 float32 elements a thread (a 32768-wide row over 16 warps)
        if block_m * block_n > 64 * 32 * warps or block_m * block_n < 32 * warps:
            raise ValueError("tile too large for registers, or too small for the threads")
        self.dtype, self.block_n, self.block_m, self.warps = dtype, block_n, block_m, warps

    def __call__(self, m_size: int32, n_size: int32, x_ptr: tilus.void_p, y_ptr: tilus.void_p):
        bm, bn = self.block_m, self.block_n
        self.attrs.blocks = [cdiv(m_size, bm)]
        self.attrs.warps = self.warps
        row = self.blockIdx.x * bm
        gx = self.global_view(x_ptr, dtype=self.dtype, shape=[m_size, n_size])
        gy = self.global_view(y_ptr, dtype=self.dtype, shape=[m_size, n_size])
        cols = self.register_tensor(dtype=int32, shape=[bm, bn], init=lambda i, j: j)

        if n_size <= bn:
            x = self.load_global(gx, offsets=[row, 0], shape=[bm, bn]).to(float32)
            x = self.where(cols < n_size, x, float("-inf"))
            e = self.exp(x - self.max(x, dim=1, keepdim=True))
            y = e * (1.0 / self.sum(e, dim=1, keepdim=True))  # one division per row
            self.store_global(gy, y.to(self.dtype), offsets=[row, 0])
        else:
            run_max = self.register_tensor(dtype=float32, shape=[bm, 1], init=float("-inf"))
            run_sum = self.register_tensor(dtype=float32, shape=[bm, 1], init=0.0)
            for col in range(0, n_size, bn):
                x = self.load_global(gx, offsets=[row, col], shape=[bm, bn]).to(float32)
                x = self.where(cols + col < n_size, x, float("-inf"))
                new_max = self.maximum(run_max, self.max(x, dim=1, keepdim=True))
                run_sum = run_sum * self.exp(run_max - new_max) + self.sum(
                    self.exp(x - new_max), dim=1, keepdim=True)
                run_max = new_max
            inv_sum = 1.0 / run_sum
            for col in range(0, n_size, bn):
                x = self.load_global(gx, offsets=[row, col], shape=[bm, bn]).to(float32)
                y = self.exp(x - run_max) * inv_sum
                self.store_global(gy, y.to(self.dtype), offsets=[row, col])


_TORCH_TO_TILUS = {torch.float16: float16, torch.bfloat16: bfloat16, torch.float32: float32}
_SCRIPTS = {}


def softmax(x: torch.Tensor, out: torch.Tensor = None, block_n: int = None) -> torch.Tensor:
    """Row softmax of a contiguous 2-D fp16/bf16/fp32 tensor. The tile width is the row
    length rounded up to a power of two (at most 32768; longer rows loop)."""
    if x.dim() != 2 or not x.is_contiguous() or x.dtype not in _TORCH_TO_TILUS:
        raise ValueError("softmax: x must be a contiguous 2-D float16/bfloat16/float32 tensor")
    m, n = x.shape
    out = torch.empty_like(x) if out is None else out
    if block_n is None:
        block_n = min(32768, max(32, 1 << (n - 1).bit_length()))
    key = (x.dtype, block_n)
    if key not in _SCRIPTS:
        _SCRIPTS[key] = Softmax(_TORCH_TO_TILUS[x.dtype], block_n)
    _SCRIPTS[key](m, n, x, out)
    return out


def main(device: str):
    torch.manual_seed(0)
    shapes = [(37, 70), (5, 300), (3, 1000)] if device == "cpu" else [
        (1823, 781), (4096, 4096), (8192, 8192), (1024, 32768)]
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        for m, n in shapes:
            x = (torch.randn(m, n, device=device) * 3).to(dtype)
            y = torch.full_like(x, float("nan"))
            softmax(x, y)
            expected = torch.softmax(x.float(), dim=1).to(dtype)
            torch.testing.assert_close(y, expected, atol=2e-3, rtol=2e-2)
            line = f"softmax {str(dtype)[6:]:8s} {m:5d} x {n:5d}: ok"
            if device == "cuda":
                t_tilus = benchmark_func(lambda: softmax(x, y))
                t_torch = benchmark_func(lambda: torch.softmax(x, dim=1))
                line += f"   tilus {t_tilus:.3f} ms   torch {t_torch:.3f} ms"
            print(line)
    if device == "cpu":  # the looping path for rows longer than one tile
        x = torch.randn(6, 100)
        torch.testing.assert_close(softmax(x, block_n=32), torch.softmax(x, dim=1))
        print("softmax, rows longer than the tile: ok")


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
