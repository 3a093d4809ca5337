"""Tilus 0.2's explicit warpgroup MMA: the ``self.wgmma`` group (sm_90a).

A mixin of tilus.Script (lang/instructions.py InstructionMixin); the methods follow the
docstring rules of instructions.py. The IR instructions are ``wgmma_fence``,
``wgmma_mma``, ``wgmma_commit`` and ``wgmma_wait`` (csrc/ops/wgmma.cc, which also
states the semantics the interpreter models and how the CUDA is formed).

The protocol a script follows: ``fence()``, then one or more ``mma(a, b, d)``, then
``commit_group()`` to close a group, and ``wait_group(n)`` before ``d`` is used again.
The thread group that issues them (the block outside ``with self.thread_group(...)``)
must be whole warpgroups starting at a warpgroup; its warpgroups split ``d`` between
them (a warp-specialised kernel's consumer warpgroups share one accumulator). tilus's
automatic wgmma lowering of ``self.dot`` places its own waits and never adds or removes
any around these instructions.
"""

from __future__ import annotations

from tilus.lang.context import current_builder
from tilus.lang.operands import _tensor


class WgmmaGroup:
    """``self.wgmma``: warpgroup matrix multiply-accumulate on Hopper's tensor cores
    (Tilus's WgmmaInstructionGroup)."""

    __slots__ = ()

    def fence(self):
        """Order the block's earlier register and shared-memory accesses of the operands
        and accumulators before the wgmma instructions that follow
        (``wgmma.fence.sync.aligned``).

        Dtypes and layouts:
            Not applicable.

        Raises:
            ValueError: code generation for a target before sm_90a, or a block that is
                not whole warpgroups (``self.attrs.warps`` not a multiple of 4).

        Example:
            .. code-block:: python

                self.wgmma.fence()
                self.wgmma.mma(sa, sb, acc)
                self.wgmma.commit_group()
                self.wgmma.wait_group(0)
        """
        current_builder().tile_op("wgmma_fence", [])

    def mma(self, a, b, d):
        """Start ``d = a @ b + d`` on the tensor cores (``wgmma.mma_async``); the result
        lands in ``d`` at the ``wait_group`` that retires this instruction's commit group.

        Until then ``d`` may only be passed to further ``mma`` calls (the hardware chains
        those); any other use is an error in the interpreter and undefined on the GPU.

        Args:
            a: ``[M, K]``: a shared tensor, its allocation's trailing matrix (``sa`` or
                ``sa[stage]``) or that matrix transposed (``sa_t.transpose()``); or a
                register tensor (wgmma's register form).
            b: a shared tensor ``[K, N]``, likewise (``sb`` stored ``[K, N]``, or
                ``sb_t.transpose()`` of a ``[N, K]`` tile).
            d: the float32 register accumulator ``[M, N]``, updated in place.

        Dtypes and layouts:
            ``a`` and ``b``: float16 x float16 or bfloat16 x bfloat16 (m64nNk16),
            tfloat32 x tfloat32 (k8), float8_e4m3 / float8_e5m2 (k32); ``d`` float32. M a
            multiple of 64, K of the instruction's k, N of 8. The shared allocations of
            ``a`` and ``b`` take a layout wgmma reads: 128-, 64- or 32-byte swizzle, or
            none, by their row size (rows must be a multiple of 16 bytes). An operand is
            K-major when K is its allocation's contiguous dimension (``a`` as ``[M, K]``,
            ``b`` as the transpose of ``[N, K]``) and M-/N-major otherwise, which only
            float16 and bfloat16 allow. ``d``'s register layout is wgmma's accumulator
            fragment, split over the warpgroups along M first; a register ``a`` takes
            wgmma's A fragment (mma.sync's A fragment per warp, each warpgroup holding its
            rows). A layout fixed otherwise for ``d`` or a register ``a`` is an error.

        Raises:
            TypeError: ``a`` global, ``b`` not shared, ``d`` not a register tensor, dtypes
                no wgmma takes, ``d`` not float32.
            ValueError: shapes that do not multiply or break the rules above, an operand
                that is a reshaped view or only part of its allocation's matrix, an
                M-/N-major tfloat32 or float8 operand, a block that is not whole
                warpgroups, code generation for a target before sm_90a.
            RuntimeError: (interpreter) ``d`` used before the wait that lands it.

        Example:
            .. code-block:: python

                acc = self.register_tensor(dtype=float32, shape=[128, 128], init=0.0)
                self.wgmma.fence()
                self.wgmma.mma(sa, sb.transpose(), acc)   # sa [128, 32], sb [128, 32]
                self.wgmma.commit_group()
                self.wgmma.wait_group(0)
        """
        operands = [_tensor(a, "a"), _tensor(b, "b"), _tensor(d, "d")]
        current_builder().tile_op("wgmma_mma", operands)

    def commit_group(self):
        """Close the group of the ``mma`` instructions issued since the last commit
        (``wgmma.commit_group.sync.aligned``); ``wait_group`` counts these groups.

        Dtypes and layouts:
            Not applicable.

        Raises:
            ValueError: code generation for a target before sm_90a, or a block that is
                not whole warpgroups.

        Example:
            .. code-block:: python

                self.wgmma.mma(sa[stage], sb[stage].transpose(), acc)
                self.wgmma.commit_group()
                self.wgmma.wait_group(1)   # the previous stage's group is done
        """
        current_builder().tile_op("wgmma_commit", [])

    def wait_group(self, n):
        """Wait until at most ``n`` committed groups are still running
        (``wgmma.wait_group.sync.aligned n``); the accumulators of the groups it retires
        hold their results afterwards.

        Args:
            n: a compile-time int >= 0; 0 waits for every committed group.

        Dtypes and layouts:
            Not applicable.

        Raises:
            TypeError: ``n`` is a runtime value.
            ValueError: ``n`` < 0, code generation for a target before sm_90a, or a block
                that is not whole warpgroups.

        Example:
            .. code-block:: python

                self.wgmma.commit_group()
                self.wgmma.wait_group(0)
                out = self.cast(acc, dtype=float16)
        """
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"wgmma.wait_group: n must be a compile-time int, got {type(n).__name__}")
        if n < 0:
            raise ValueError(f"wgmma.wait_group: n must be >= 0, got {n}")
        current_builder().tile_op("wgmma_wait", [], int_attr=n)


_WGMMA = WgmmaGroup()


class WgmmaInstructions:
    @property
    def wgmma(self) -> WgmmaGroup:
        """The wgmma instruction group: ``self.wgmma.fence()``, ``mma``, ``commit_group``,
        ``wait_group``."""
        return _WGMMA
