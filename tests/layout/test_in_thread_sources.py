"""in_thread_sources: when two layouts give every thread the same elements, the register
of the first that holds each register of the second (a conversion without shared memory)."""

import pytest

from tilus._C import layout as native
from tilus.layout import column_local, local, mma_atom, register_layout, replicate, spatial


def _brute_force(a, b):
    """Independent: for each thread, look each of b's coordinates up among a's."""
    src = None
    for t in range(b.num_threads):
        held = {tuple(a.coords(t, l)): l for l in range(a.local_size)}
        row = [held.get(tuple(b.coords(t, l))) for l in range(b.local_size)]
        if None in row or (src is not None and row != src):
            return None
        src = row
    return src


@pytest.mark.parametrize("a, b", [
    (spatial(8, 4) * local(2, 4), spatial(8, 4) * column_local(2, 4)),  # another register order
    (spatial(8, 4) * local(2, 4), spatial(8, 4) * local(2, 4)),  # the same layout
    (register_layout([128, 32], [128, 4, 2, 2, 2], [0], [1, 4, 2, 3]), spatial(128, 1) * local(1, 32)),
    (local(1, 8) * mma_atom("m16n8k16")["b"],
     register_layout([16, 64], [2, 4, 2, 4, 2, 8], [5, 1], [3, 2, 4, 0])),  # the A16Wx paired unit
    (spatial(2, 1) * replicate(4, 2) * local(2, 2), spatial(2, 1) * replicate(4, 2) * column_local(2, 2)),
])
def test_a_reordering_within_each_thread_is_found(a, b):
    src = native.in_thread_sources(a, b)
    assert src is not None and src == _brute_force(a, b)
    for t in (0, 5, b.num_threads - 1):
        assert [b.coords(t, l) for l in range(b.local_size)] == [a.coords(t, s) for s in src]


@pytest.mark.parametrize("a, b", [
    (spatial(8, 4) * local(2, 4), spatial(4, 8) * local(4, 2)),  # same shape, other threads
    (spatial(8, 4) * local(2, 4), local(2, 4) * spatial(8, 4)),
    (spatial(8, 4) * local(2, 4), spatial(8, 4) * local(2, 2)),  # another shape
    (spatial(32, 1) * local(1, 4), spatial(16, 1) * local(2, 4)),  # other thread count
])
def test_layouts_that_move_elements_between_threads_have_none(a, b):
    assert native.in_thread_sources(a, b) is None
    if a.shape == b.shape and a.num_threads == b.num_threads:
        assert _brute_force(a, b) is None
