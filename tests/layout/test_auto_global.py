"""auto_global_layout: coalesced, contiguous vectors, each element once (or replicated)."""

import pytest

from tilus.layout import auto_global_layout, local, spatial


def test_64x64_fp16_128_threads():
    layout = auto_global_layout([64, 64], 128, 8)
    assert layout == local(4, 1) * spatial(16, 8) * local(1, 8)
    # thread t: row t // 8 (+16 per repeat), columns 8 * (t % 8) .. +8
    for t in range(128):
        for i in range(32):
            rep, v = divmod(i, 8)
            assert layout.coords(t, i) == (rep * 16 + t // 8, (t % 8) * 8 + v)


@pytest.mark.parametrize("shape, threads, vec, v", [
    ([64, 64], 128, 8, 8), ([128, 32], 256, 4, 4), ([16, 24], 64, 16, 8), ([2, 4, 16], 32, 4, 4),
    ([1024], 128, 4, 4), ([32, 8], 128, 8, 8), ([12, 12], 32, 4, 4),
])
def test_coverage_and_vectors(shape, threads, vec, v):
    layout = auto_global_layout(shape, threads, vec)
    assert layout.shape == shape and layout.num_threads == threads
    count = {}
    for t in range(threads):
        for i in range(layout.local_size):
            c = layout.coords(t, i)
            count[c] = count.get(c, 0) + 1
            first = layout.coords(t, i - i % v)
            assert first[-1] % v == 0
            assert c == first[:-1] + (first[-1] + i % v,)
    numel = 1
    for s in shape:
        numel *= s
    assert len(count) == numel
    assert set(count.values()) == {layout.replication}
    if numel // v >= threads and threads % (shape[-1] // v) == 0:
        assert not layout.is_replicated()


def test_fewer_elements_than_threads_replicates():
    layout = auto_global_layout([4], 128, 8)
    assert layout.is_replicated() and layout.replication == 128 and layout.local_size == 4
    assert {layout.coords(t, 3) for t in range(128)} == {(3,)}
