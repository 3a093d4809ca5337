"""The rule that keeps the host's launch time out of a timed run (csrc/autotune/timing.h):
how many L2 flushes go before a run, and when a run counts. The GPU side is in
test_tuning_gpu.py."""

from tilus import _C

cover, covered = _C.autotune.flushes_to_cover, _C.autotune.host_was_covered


def test_flushes_cover_the_host_time_with_a_margin():
    assert cover(0.03, 0.06) == 1       # a fast host: one flush
    assert cover(0.06, 0.06) == 2       # as long as one flush: 1.5x over, rounded up
    assert cover(0.19, 0.06) == 5       # ceil(1.5 * 0.19 / 0.06)
    assert cover(20.0, 0.06) == _C.autotune.MAX_FLUSHES == 64  # a stall: capped
    assert cover(0.0, 0.06) == 1 and cover(0.1, 0.0) == 1       # nothing known yet


def test_a_run_counts_when_its_flushes_outlasted_the_host():
    assert covered(0.05, 1, 0.06)
    assert not covered(0.059, 1, 0.06)  # within 10% of the flush: not trusted
    assert covered(0.2, 5, 0.06) and not covered(0.3, 5, 0.06)
    # what cover() chooses is counted unless the host got slower than it was expected to be
    for host in (0.01, 0.07, 0.5, 2.0):
        assert covered(host, cover(host, 0.06), 0.06)
        assert covered(1.3 * host, cover(host, 0.06), 0.06)
