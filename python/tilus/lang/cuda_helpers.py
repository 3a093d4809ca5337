"""``self.cuda`` in a script: Tilus 0.2's layout helpers for hand-laid-out dots and tiles.

Tilus 0.2 programs often fix their layouts themselves::

    self.mma = self.cuda.resolve_dot_config(float16, float32, m=128, n=128, k=32, num_warps=8)
    acc = self.register_tensor(dtype=float32, shape=[128, 128], layout=self.mma.lc, init=0.0)
    a = self.load_shared(sa, layout=self.mma.la)

The layouts are the mma.sync block layouts of tilus.layout.mma_block_layouts on the warp
grid Tilus 0.2 would pick (the one holding the fewest operand and accumulator registers a
thread); layout inference recognises an accumulator laid out on any warp grid, so such a
dot still runs on the tensor cores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from tilus.lang.types import DataType, bfloat16, float16, float32, int8, int32
from tilus.layout import (RegisterLayout, local, mma_atom, mma_block_layouts, shared_row_major, spatial)

# (operand, accumulator) -> the mma atom Tilus 0.2 uses for it
_ATOMS = {(float16, float32): "m16n8k16", (bfloat16, float32): "m16n8k16", (int8, int32): "m16n8k32"}


@dataclass(frozen=True, eq=False)
class BlockMmaConfig:
    """The register layouts of a block-level mma dot C[m, n] += A[m, k] @ B[k, n] over
    `num_warps` warps: ``la`` [m, k], ``lb`` [k, n], ``lc`` [m, n]; ``lb_T`` is ``lb``
    transposed ([n, k], for a B loaded k-major)."""

    operand_dtype: DataType
    accumulator_dtype: DataType
    m: int
    n: int
    k: int
    num_warps: int
    la: RegisterLayout
    lb: RegisterLayout
    lc: RegisterLayout

    @property
    def lb_T(self) -> RegisterLayout:
        from tilus._C import layout as native

        return native.permute_layout(self.lb, [1, 0])


class CudaHelpers:
    """The helpers ``self.cuda`` offers (plain Python, evaluated when the script is built)."""

    @staticmethod
    def resolve_dot_config(operand_dtype: DataType, acc_dtype: DataType, *, m: int, n: int, k: int,
                           num_warps: Optional[int] = None, warp_m: Optional[int] = None,
                           warp_n: Optional[int] = None) -> BlockMmaConfig:
        """The mma layouts of an m x n x k block dot, as Tilus 0.2 resolves them: among the
        warp grids warp_m x warp_n = num_warps (either may be given) whose warp tiles are
        whole atoms, the one with the fewest A, B and C registers a thread. A ValueError when
        the types have no mma, no grid tiles the block, or a thread would need 224 registers
        or more for the operands and the accumulator."""
        if (operand_dtype, acc_dtype) not in _ATOMS:
            raise ValueError(f"resolve_dot_config: no mma for {operand_dtype.name} operands and a "
                             f"{acc_dtype.name} accumulator (float16/bfloat16 -> float32, int8 -> int32)")
        if num_warps is None:
            if warp_m is None or warp_n is None:
                raise ValueError("resolve_dot_config: give num_warps, or both warp_m and warp_n")
            num_warps = warp_m * warp_n
        kind = _ATOMS[(operand_dtype, acc_dtype)]
        atom = mma_atom(kind)
        if m % atom["m"] or n % atom["n"] or k % atom["k"]:
            raise ValueError(f"resolve_dot_config: m, n, k ({m}, {n}, {k}) must be multiples of the "
                             f"{kind} atom's ({atom['m']}, {atom['n']}, {atom['k']})")
        a_regs = atom["a"].local_size * operand_dtype.bits // 32
        b_regs = atom["b"].local_size * operand_dtype.bits // 32
        c_regs = atom["c"].local_size * acc_dtype.bits // 32
        best = None
        for wm in range(1, num_warps + 1):
            wn = num_warps // wm
            if num_warps % wm or (warp_m is not None and wm != warp_m) or (warp_n is not None and wn != warp_n):
                continue
            if (m // atom["m"]) % wm or (n // atom["n"]) % wn:
                continue
            rm, rn, rk = m // atom["m"] // wm, n // atom["n"] // wn, k // atom["k"]
            regs = rm * rk * a_regs + rk * rn * b_regs + rm * rn * c_regs
            if best is None or regs < best[0]:
                best = (regs, wm)
        if best is None:
            raise ValueError(f"resolve_dot_config: no grid of {num_warps} warps tiles a {m}x{n} block "
                             f"with {kind} atoms")
        if best[0] >= 256 - 32:
            raise ValueError(f"resolve_dot_config: {best[0]} registers a thread for the operands and the "
                             "accumulator; use more warps or a smaller block")
        layouts = mma_block_layouts(kind, m, n, k, num_warps, warps_m=best[1])
        return BlockMmaConfig(operand_dtype, acc_dtype, m, n, k, num_warps, layouts["a"], layouts["b"],
                              layouts["c"])

    @staticmethod
    def shared_layout(shape: Sequence[int]):
        """A row-major shared layout of `shape`."""
        return shared_row_major(*shape)

    @staticmethod
    def default_register_layout(num_warps: int, dtype: DataType, shape: Sequence[int],
                                vector_size: Optional[int] = None) -> RegisterLayout:
        """Tilus 0.2's default tile layout: each thread holds `vector_size` consecutive
        elements of the last dimension (default: as many as make 16 bytes, dividing the
        thread's share and the last extent), the threads spread from the innermost
        dimension outwards, what remains repeats in registers. A RuntimeError when the
        threads do not divide the tile."""
        shape = [int(s) for s in shape]
        threads = 32 * num_warps
        numel = math.prod(shape)
        if numel % threads:
            raise RuntimeError(f"default_register_layout: {numel} elements do not spread over {threads} threads")
        if vector_size is None:
            vector_size = math.gcd(math.gcd(numel // threads, max(1, 128 // dtype.bits)), shape[-1])
        elif (numel // threads) % vector_size or shape[-1] % vector_size:
            raise ValueError(f"default_register_layout: vector_size {vector_size} does not divide the "
                             "thread's share and the last extent")
        remain = shape[:-1] + [shape[-1] // vector_size]
        spread = [1] * len(shape)
        left = threads
        for d in reversed(range(len(shape))):
            spread[d] = math.gcd(left, remain[d])
            left //= spread[d]
            remain[d] //= spread[d]
        return local(*remain) * spatial(*spread) * local(*([1] * (len(shape) - 1) + [vector_size]))
