"""``tilus.Pipeline``: a ring of shared-memory stages handed between a producer and a
consumer thread group through mbarriers (Tilus 0.2's ``tilus.Pipeline``).

Stage ``s`` has two barriers. The producer waits on the first until the consumers have
released the slot, fills it, and arrives on the second (``producer_release_barrier()``);
the consumer waits on the second until the fill completed, reads the slot and arrives on
the first (``consumer_release_barrier()``). Each side walks the ring with its own stage
counter and phase bit, flipped every time its stage wraps to 0.

Tilus 0.2 names the barriers the other way around (the producer waits on ``_full``); the
methods and their meaning are the same.
"""

from __future__ import annotations

from tilus.lang.classes import Class
from tilus.lang.types import int32, uint32


class Pipeline(Class):
    """A producer/consumer ring of ``num_stages`` slots (see the module docstring)::

        pipe = tilus.Pipeline(num_stages=3, producer_arrive_count=1, consumer_arrive_count=128)
        with self.single_thread():            # producer
            for k in range(num_k):
                pipe.producer_acquire()
                self.mbarrier.arrive_and_expect_tx(pipe.producer_release_barrier(), nbytes)
                self.tma.global_to_shared(..., mbarrier=pipe.producer_release_barrier())
                pipe.producer_advance()
        with self.warp_group(4, 4):           # consumers
            for k in range(num_k):
                pipe.consumer_acquire()
                ...                           # read the slot pipe.consumer_stage
                self.mbarrier.arrive(pipe.consumer_release_barrier())
                pipe.consumer_advance()

    ``producer_arrive_count``: arrivals that mark a slot filled (per phase);
    ``consumer_arrive_count``: arrivals that mark it free again. ``debug=True`` prints
    every acquire and advance.
    """

    def __init__(self, num_stages: int, producer_arrive_count: int, consumer_arrive_count: int,
                 debug: bool = False):
        self.num_stages = num_stages
        # _free[s] completes when the consumers released slot s; _filled[s] when the
        # producer filled it.
        self._free = self.mbarrier.alloc([consumer_arrive_count] * num_stages)
        self._filled = self.mbarrier.alloc([producer_arrive_count] * num_stages)
        self.producer_stage: int32 = 0
        self.consumer_stage: int32 = 0
        self._producer_phase: uint32 = self.mbarrier.producer_initial_phase
        self._consumer_phase: uint32 = self.mbarrier.consumer_initial_phase
        self._debug = debug

    def producer_acquire(self):
        """Wait until slot ``producer_stage`` is free."""
        if self._debug:
            self.printf("Pipeline: producer [%d, %d) acquires stage %d\n", self.current_thread_begin,
                        self.current_thread_end, self.producer_stage)
        self.mbarrier.wait(self._free[self.producer_stage], phase=self._producer_phase)

    def producer_advance(self):
        """Move the producer to the next slot (flipping its phase when it wraps)."""
        if self._debug:
            self.printf("Pipeline: producer [%d, %d) advances from stage %d\n", self.current_thread_begin,
                        self.current_thread_end, self.producer_stage)
        self.producer_stage = (self.producer_stage + 1) % self.num_stages
        self._producer_phase = self._producer_phase ^ (self.producer_stage == 0)

    def producer_release_barrier(self):
        """The barrier that marks slot ``producer_stage`` filled: arrive on it (or let a TMA
        load complete on it)."""
        return self._filled[self.producer_stage]

    def consumer_acquire(self):
        """Wait until slot ``consumer_stage`` is filled."""
        if self._debug:
            self.printf("Pipeline: consumer [%d, %d) acquires stage %d\n", self.current_thread_begin,
                        self.current_thread_end, self.consumer_stage)
        self.mbarrier.wait(self._filled[self.consumer_stage], phase=self._consumer_phase)

    def consumer_advance(self):
        """Move the consumer to the next slot (flipping its phase when it wraps)."""
        if self._debug:
            self.printf("Pipeline: consumer [%d, %d) advances from stage %d\n", self.current_thread_begin,
                        self.current_thread_end, self.consumer_stage)
        self.consumer_stage = (self.consumer_stage + 1) % self.num_stages
        self._consumer_phase = self._consumer_phase ^ (self.consumer_stage == 0)

    def consumer_release_barrier(self):
        """The barrier that marks slot ``consumer_stage`` free again: arrive on it."""
        return self._free[self.consumer_stage]
