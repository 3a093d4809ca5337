"""Thread groups and register reallocation: Tilus 0.2's ``with self.thread_group(...)``,
``single_thread``, ``single_warp``, ``warp_group``, and ``self.setmaxnreg``.

A mixin of tilus.Script (lang/instructions.py InstructionMixin); the methods follow the
docstring rules of instructions.py. A group is the ``thread_group`` IR statement
(csrc/ir/stmt.h): on CUDA an ``if`` on the thread index whose body counts threads from
the group's first one (codegen/emitter.cc), in the interpreter a narrowing of the block
that runs side by side with the groups next to it (interp/thread_groups.cc).
"""

from __future__ import annotations

from tilus.lang.context import current_builder


class ThreadGroupContext:
    """What ``self.thread_group(...)`` returns: used as ``with ...:`` in a script, where the
    transpiler opens the group (``thread_begin`` relative to the enclosing group; -1 with
    one thread: any thread of it)."""

    __slots__ = ("thread_begin", "num_threads")

    def __init__(self, thread_begin: int, num_threads: int):
        self.thread_begin = thread_begin
        self.num_threads = num_threads

    def __enter__(self):
        raise RuntimeError("self.thread_group(...) is used as `with self.thread_group(...):` inside a "
                           "script's __call__, where tilus transpiles it")

    def __exit__(self, *exc):
        return False


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be a compile-time int, got {type(value).__name__}")
    return value


class ThreadGroupInstructions:
    def _group(self):
        return current_builder().current_thread_group()

    def thread_group(self, thread_begin: int, num_threads: int) -> ThreadGroupContext:
        """Narrow the threads that run a block of statements: ``with self.thread_group(b, n):``
        runs its body on threads ``[b, b + n)`` of the current group, the others skip it.

        Groups nest (``thread_begin`` counts from the enclosing group's first thread). Inside
        a group, ``self.current_thread_begin`` / ``current_thread_end`` /
        ``current_num_threads`` describe it, register tiles made there are spread over its
        threads, ``self.sync()`` synchronises only them (a named barrier ``bar.sync id, n``,
        or ``__syncwarp`` for a group inside one warp) and mbarrier arrivals count its
        threads. Consecutive groups on disjoint threads run concurrently (warp
        specialisation: a producer group and a consumer group talking through mbarriers).

        Args:
            thread_begin: the group's first thread, relative to the current group; -1 with
                ``num_threads=1``: any one thread of it.
            num_threads: how many threads, at least 1.

        Returns:
            A context manager for the ``with`` statement.

        Dtypes and layouts:
            Compile-time ints. A register tensor made inside a group may only be used by
            instructions of the same group (it lives in those threads' registers).

        Raises:
            ValueError: the range is not inside the current group (with the script line).
            TypeError: a non-int argument.

        Example:
            .. code-block:: python

                with self.thread_group(128, num_threads=128):
                    self.mbarrier.wait(full[s], phase)
        """
        begin, n = _int(thread_begin, "thread_begin"), _int(num_threads, "num_threads")
        _, outer = self._group()
        if n < 1:
            raise ValueError(f"thread_group: num_threads must be positive, got {n}")
        if begin == -1:
            if n != 1:
                raise ValueError("thread_group: thread_begin=-1 (any thread) needs num_threads=1")
        elif begin < 0 or begin + n > outer:
            raise ValueError(f"thread_group: threads [{begin}, {begin + n}) are not inside the "
                             f"current thread group of {outer} threads")
        return ThreadGroupContext(begin, n)

    def single_thread(self, thread: int = -1) -> ThreadGroupContext:
        """A group of one thread of the current group: ``with self.single_thread():``.

        Args:
            thread: its index in the current group; -1 (default): any one thread (on CUDA
                the group's first).

        Returns:
            A context manager for the ``with`` statement.

        Dtypes and layouts:
            Not applicable.

        Raises:
            ValueError: ``thread`` is not a thread of the current group.

        Example:
            .. code-block:: python

                with self.single_thread():
                    self.mbarrier.arrive_and_expect_tx(bar, nbytes)
        """
        thread = _int(thread, "thread")
        _, outer = self._group()
        if thread != -1 and not 0 <= thread < outer:
            raise ValueError(f"single_thread: thread {thread} is not in the current thread group "
                             f"of {outer} threads")
        return self.thread_group(thread, 1)

    def single_warp(self, warp: int = 0) -> ThreadGroupContext:
        """A group of one warp (32 threads) of the current group: ``with self.single_warp(w):``.

        Args:
            warp: the warp's index in the current group.

        Returns:
            A context manager for the ``with`` statement.

        Dtypes and layouts:
            Not applicable.

        Raises:
            ValueError: the warp is not inside the current group.

        Example:
            .. code-block:: python

                with self.single_warp(0):
                    self.tma.global_to_shared(src=ga, dst=sa, offsets=[m0, 0], mbarrier=bar)
        """
        warp = _int(warp, "warp")
        _, outer = self._group()
        if warp < 0 or (warp + 1) * 32 > outer:
            raise ValueError(f"single_warp: warp {warp} is not inside the current thread group of "
                             f"{outer} threads")
        return self.thread_group(warp * 32, 32)

    def warp_group(self, warp_begin: int, num_warps: int) -> ThreadGroupContext:
        """A group of whole warps of the current group: ``with self.warp_group(w, n):`` runs
        on warps ``[w, w + n)`` (threads ``[32 w, 32 (w + n))``).

        Args:
            warp_begin: the first warp, relative to the current group.
            num_warps: how many warps.

        Returns:
            A context manager for the ``with`` statement.

        Dtypes and layouts:
            Not applicable. Four warps starting at a multiple of four are a warpgroup
            (what ``setmaxnreg`` and wgmma need).

        Raises:
            ValueError: the warps are not inside the current group.

        Example:
            .. code-block:: python

                with self.warp_group(warp_begin=4, num_warps=4):
                    self.setmaxnreg(232, "inc")
        """
        begin, n = _int(warp_begin, "warp_begin"), _int(num_warps, "num_warps")
        _, outer = self._group()
        if begin < 0 or n < 1 or (begin + n) * 32 > outer:
            raise ValueError(f"warp_group: warps [{begin}, {begin + n}) are not inside the current "
                             f"thread group of {outer} threads ({outer // 32} warps)")
        return self.thread_group(begin * 32, n * 32)

    def setmaxnreg(self, nregs: int, action: str):
        """Change the register budget of every thread of the current warpgroups
        (``setmaxnreg.{inc,dec}.sync.aligned.u32``, sm_90a): producers give registers back
        (``'dec'``), consumers take them (``'inc'``).

        Args:
            nregs: the new per-thread maximum: a multiple of 8 in [24, 256].
            action: ``'inc'`` (wait until the registers are free, then grow) or ``'dec'``
                (release down to ``nregs``).

        Dtypes and layouts:
            Must be executed by whole warpgroups: inside a thread group that starts at a
            multiple of 128 threads and has a multiple of 128 (the whole block counts).
            The interpreter has no register file: it checks and does nothing else.

        Raises:
            ValueError: ``nregs`` or ``action`` out of range, or the current thread group is
                not whole warpgroups (at build time, with the script line).
            NotImplementedError: code generation for sm_80.

        Example:
            .. code-block:: python

                with self.warp_group(0, 4):
                    self.setmaxnreg(40, "dec")
                with self.warp_group(4, 8):
                    self.setmaxnreg(232, "inc")
        """
        nregs = _int(nregs, "nregs")
        if action not in ("inc", "dec"):
            raise ValueError(f"setmaxnreg: action must be 'inc' or 'dec', got {action!r}")
        current_builder().tile_op("setmaxnreg", [], int_attr=nregs, dims=[1 if action == "inc" else 0])
