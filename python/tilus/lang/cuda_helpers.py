"""``self.cuda`` in a script: Tilus 0.2's layout helpers for hand-laid-out dots and tiles.

Tilus 0.2 programs often fix their layouts themselves::

    self.mma = self.cuda.resolve_dot_config(float16, float32, m=128, n=128, k=32, num_warps=8)
    acc = self.register_tensor(dtype=float32, shape=[128, 128], layout=self.mma.lc, init=0.0)
    a = self.load_shared(sa, layout=self.mma.la)

The layouts are the mma.sync block layouts of tilus.layout.mma_block_layouts on the warp
grid Tilus 0.2 would pick (the one holding the fewest operand and accumulator registers a
thread); layout inference recognises an accumulator laid out on any warp grid, so such a
dot still runs on the tensor cores.

Programs that choose the warp grid themselves start from one warp's mma.sync fragments
and repeat them::

    atom = self.cuda.atomic_mma_configs.m16n8k16_f16_f32       # m, n, k, la, lb, lc, ...
    self.mma = self.cuda.mma_dot_config(atomic_mma=atom, warp_spatial=(2, 2),
                                        warp_repeat=(2, 4, 2))  # a 64 x 64 x 32 block

``mma_dot_config`` lays the warps out row-major over (warp_spatial[0], warp_spatial[1]);
each warp repeats the atom warp_repeat[0] x warp_repeat[1] times over its part of C and
warp_repeat[2] times along k; the warps of one row of the grid hold the same A
registers, those of one column the same B registers.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Optional, Sequence

from tilus.lang.types import DataType, bfloat16, float16, float32, int8, int32
from tilus.layout import (RegisterLayout, column_local, column_spatial, local, mma_atom, mma_block_layouts,
                          shared_row_major, spatial)

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


@dataclass(frozen=True, eq=False)
class AtomicMmaConfig:
    """One warp's ``mma.sync.aligned.m{m}n{n}k{k}`` with its register fragments as layouts
    over the warp's 32 lanes: ``la`` [m, k * vec_k], ``lb`` [k * vec_k, n], ``lc`` [m, n].
    ``vec_k`` > 1 puts vec_k consecutive mma steps along k into one fragment: a lane then
    holds, for each register of the instruction, vec_k of them side by side.
    Two configs are equal when their names (shape, vec_k and types) are."""

    name: str
    m: int
    n: int
    k: int
    vec_k: int
    la: RegisterLayout
    lb: RegisterLayout
    lc: RegisterLayout
    operand_type: DataType
    acc_type: DataType

    def __hash__(self):
        return hash(("AtomicMmaConfig", self.name))

    def __eq__(self, other):
        return isinstance(other, AtomicMmaConfig) and other.name == self.name

    # The fragments, as the PTX ISA draws them ("Matrix fragments for mma.m16n8k16" etc.):
    # a lane is (group g = lane / 4, thread-in-group t = lane % 4).

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def _m16n8k16(operand_type: DataType, acc_type: DataType, vec_k: int = 1) -> "AtomicMmaConfig":
        # 16-bit operands: A row g (+8), columns 2t, 2t+1 (+8); B rows 2t, 2t+1 (+8), column g;
        # C row g (+8), columns 2t, 2t+1. Register order: A's a0..a3 go down (row +8) before
        # across (column +8); B's b0, b1 go down the k dimension.
        name = {float16: "f16", bfloat16: "bf16"}[operand_type]
        acc = {float16: "f16", float32: "f32"}[acc_type]
        return AtomicMmaConfig(
            name=f"m16n8k16v{vec_k}_{name}_{acc}", m=16, n=8, k=16, vec_k=vec_k,
            la=column_local(2, 2) * spatial(8, 4) * local(1, 2 * vec_k),
            lb=local(2, 1) * column_spatial(4, 8) * local(2 * vec_k, 1),
            lc=local(2, 1) * spatial(8, 4) * local(1, 2),
            operand_type=operand_type, acc_type=acc_type)

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def m16n8k16_f16_f32(vec_k: int = 1) -> "AtomicMmaConfig":
        return AtomicMmaConfig._m16n8k16(float16, float32, vec_k)

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def m16n8k16_f16_f16(vec_k: int = 1) -> "AtomicMmaConfig":
        return AtomicMmaConfig._m16n8k16(float16, float16, vec_k)

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def m16n8k16_bf16_f32(vec_k: int = 1) -> "AtomicMmaConfig":
        return AtomicMmaConfig._m16n8k16(bfloat16, float32, vec_k)

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def m8n8k16_i8_i32(vec_k: int = 1) -> "AtomicMmaConfig":
        # A row g, columns 4t..4t+3; B rows 4t..4t+3, column g; C row g, columns 2t, 2t+1
        return AtomicMmaConfig(
            name=f"m8n8k16v{vec_k}_i8_i32", m=8, n=8, k=16, vec_k=vec_k,
            la=spatial(8, 4) * local(1, 4 * vec_k),
            lb=column_spatial(4, 8) * local(4 * vec_k, 1),
            lc=spatial(8, 4) * local(1, 2),
            operand_type=int8, acc_type=int32)

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def m16n8k16_i8_i32(vec_k: int = 1) -> "AtomicMmaConfig":
        # A rows g, g+8, columns 4t..4t+3; B rows 4t..4t+3, column g
        return AtomicMmaConfig(
            name=f"m16n8k16v{vec_k}_i8_i32", m=16, n=8, k=16, vec_k=vec_k,
            la=column_local(2, 1) * spatial(8, 4) * local(1, 4 * vec_k),
            lb=column_spatial(4, 8) * local(4 * vec_k, 1),
            lc=local(2, 1) * spatial(8, 4) * local(1, 2),
            operand_type=int8, acc_type=int32)

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def m16n8k32_i8_i32(vec_k: int = 1) -> "AtomicMmaConfig":
        # A rows g, g+8, columns 4t..4t+3 (+16); B rows 4t..4t+3 (+16), column g
        return AtomicMmaConfig(
            name=f"m16n8k32v{vec_k}_i8_i32", m=16, n=8, k=32, vec_k=vec_k,
            la=column_local(2, 2) * spatial(8, 4) * local(1, 4 * vec_k),
            lb=local(2, 1) * column_spatial(4, 8) * local(4 * vec_k, 1),
            lc=local(2, 1) * spatial(8, 4) * local(1, 2),
            operand_type=int8, acc_type=int32)

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def all_configs() -> dict:
        """Every config with vec_k 1 to 4, by name."""
        makers = (AtomicMmaConfig.m16n8k16_f16_f32, AtomicMmaConfig.m16n8k16_f16_f16,
                  AtomicMmaConfig.m16n8k16_bf16_f32, AtomicMmaConfig.m8n8k16_i8_i32,
                  AtomicMmaConfig.m16n8k16_i8_i32, AtomicMmaConfig.m16n8k32_i8_i32)
        configs = [make(vec_k) for vec_k in (1, 2, 3, 4) for make in makers]
        return {c.name: c for c in configs}

    def registers(self, warp_repeat: Sequence[int]) -> int:
        """The 32-bit registers a lane holds for A, B and C when a warp repeats this atom
        (rm, rn, rk) times."""
        rm, rn, rk = warp_repeat
        op_bits, acc_bits = self.operand_type.bits, self.acc_type.bits
        a = rm * rk * self.la.local_size * op_bits
        b = rn * rk * self.lb.local_size * op_bits
        c = rm * rn * self.lc.local_size * acc_bits
        return (a + b + c) // 32


class AtomicMmaConfigs:
    """``self.cuda.atomic_mma_configs``: the mma.sync atoms (vec_k = 1) by name."""

    m16n8k16_f16_f32 = AtomicMmaConfig.m16n8k16_f16_f32()
    m16n8k16_f16_f16 = AtomicMmaConfig.m16n8k16_f16_f16()
    m16n8k16_bf16_f32 = AtomicMmaConfig.m16n8k16_bf16_f32()
    m8n8k16_i8_i32 = AtomicMmaConfig.m8n8k16_i8_i32()
    m16n8k16_i8_i32 = AtomicMmaConfig.m16n8k16_i8_i32()
    m16n8k32_i8_i32 = AtomicMmaConfig.m16n8k32_i8_i32()

    @staticmethod
    def from_dtypes(operand_dtype: DataType, accumulator_dtype: DataType) -> AtomicMmaConfig:
        """The atom Tilus 0.2 uses for these operand and accumulator types; ValueError for
        a pair without one."""
        table = {(float16, float32): AtomicMmaConfigs.m16n8k16_f16_f32,
                 (float16, float16): AtomicMmaConfigs.m16n8k16_f16_f16,
                 (bfloat16, float32): AtomicMmaConfigs.m16n8k16_bf16_f32,
                 (int8, int32): AtomicMmaConfigs.m16n8k32_i8_i32}
        for (op, acc), atom in table.items():
            if op == operand_dtype and acc == accumulator_dtype:
                return atom
        raise ValueError(f"atomic_mma_configs.from_dtypes: no mma for {getattr(operand_dtype, 'name', operand_dtype)} "
                         f"operands and a {getattr(accumulator_dtype, 'name', accumulator_dtype)} accumulator "
                         "(float16 -> float32/float16, bfloat16 -> float32, int8 -> int32)")


_REGISTER_LIMIT = 256 - 32  # registers a thread may spend on a dot's operands and accumulator


class CudaHelpers:
    """The helpers ``self.cuda`` offers (plain Python, evaluated when the script is built)."""

    atomic_mma_configs = AtomicMmaConfigs

    @staticmethod
    def mma_dot_config(atomic_mma: AtomicMmaConfig, warp_spatial: Sequence[int],
                       warp_repeat: Sequence[int]) -> BlockMmaConfig:
        """The layouts of a block dot built from `atomic_mma`: wsm x wsn warps (row-major,
        `warp_spatial`), each repeating the atom wrm x wrn times over its C tile and wrk
        times along k (`warp_repeat`). The block is m = atom.m * wsm * wrm,
        n = atom.n * wsn * wrn, k = atom.k * atom.vec_k * wrk. Inside a warp the
        repetitions are its registers, row-major (A: m then k; B: k then n; C: m then n),
        each holding one atom fragment. A ValueError when a thread would hold 224
        registers or more for A, B and C."""
        from tilus.ir.layout.ops import reduce as reduce_layout
        from tilus.ir.layout.ops import spatial as ranked_spatial

        if not isinstance(atomic_mma, AtomicMmaConfig):
            raise TypeError("mma_dot_config: atomic_mma must be one of self.cuda.atomic_mma_configs, "
                            f"got {type(atomic_mma).__name__}")
        wsm, wsn = (int(x) for x in warp_spatial)
        wrm, wrn, wrk = (int(x) for x in warp_repeat)
        if min(wsm, wsn, wrm, wrn, wrk) < 1:
            raise ValueError(f"mma_dot_config: warp_spatial {tuple(warp_spatial)} and warp_repeat "
                             f"{tuple(warp_repeat)} must be positive")
        regs = atomic_mma.registers((wrm, wrn, wrk))
        if regs >= _REGISTER_LIMIT:
            raise ValueError(f"mma_dot_config: {regs} registers a thread for the operands and the accumulator "
                             f"(warp_repeat {(wrm, wrn, wrk)} of {atomic_mma.name}); the limit is "
                             f"{_REGISTER_LIMIT - 1}: repeat the atom fewer times")
        # warp w = (i, j) with i = w // wsn, j = w % wsn: A depends on i only (the warps of a
        # grid row replicate it), B on j only (a grid column replicates it)
        warps_a = reduce_layout(ranked_spatial(wsm, 1, wsn, ranks=[1, 0, 2]), dims=[2])
        warps_b = reduce_layout(ranked_spatial(1, wsn, wsm, ranks=[0, 2, 1]), dims=[2])
        la = warps_a * local(wrm, wrk) * atomic_mma.la
        lb = warps_b * local(wrk, wrn) * atomic_mma.lb
        lc = spatial(wsm, wsn) * local(wrm, wrn) * atomic_mma.lc
        return BlockMmaConfig(atomic_mma.operand_type, atomic_mma.acc_type,
                              atomic_mma.m * wsm * wrm, atomic_mma.n * wsn * wrn,
                              atomic_mma.k * atomic_mma.vec_k * wrk, wsm * wsn, la, lb, lc)

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
