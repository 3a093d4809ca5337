"""Ranks that agree (python/tilus/tuning/ranks.py): 2 and 3 CPU processes joined by
torch.distributed's gloo backend tune `Scale` on the fake GPU, each with its own fake
timings (so ranks left alone would disagree), and must all launch one configuration."""

import json
import os
import socket
import subprocess
import sys

import pytest

pytest.importorskip("torch.distributed")

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "rank_child.py")
# rank_child.COSTS, by configuration index of Scale's space (warps, block) in product
# order: (1,32)=0, (1,64)=1, (1,65536)=2 (never fits), (2,32)=3, (2,64)=4, (2,65536)=5.
CONFIG = {0: {"warps": 1, "block": 32}, 1: {"warps": 1, "block": 64},
          3: {"warps": 2, "block": 32}, 4: {"warps": 2, "block": 64}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(cache_root, report_dir, world: int, scenario: str, timeout=300) -> list:
    """Start `world` ranks, wait for them all; their reports, by rank."""
    os.makedirs(report_dir, exist_ok=True)
    port = _free_port()
    env = dict(os.environ, TILUS_CACHE_DIR=str(cache_root), TILUS_PROGRESS="0")
    env.pop("TILUS_DIST_TUNING", None)
    procs = [subprocess.Popen([sys.executable, CHILD, str(report_dir), str(r), str(world),
                               str(port), scenario], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(world)]
    outputs = [p.communicate(timeout=timeout)[0] for p in procs]
    for p, out in zip(procs, outputs):
        assert p.returncode == 0, out
    reports = []
    for r in range(world):
        with open(os.path.join(report_dir, f"{r}.json")) as f:
            reports.append(json.load(f))
    return reports


@pytest.mark.parametrize("world", [2, 3])
def test_every_rank_launches_rank0s_winner(cache_dir, tmp_path, world):
    reports = run_job(cache_dir, tmp_path / "job", world, "rank0")
    # Rank 0's fake favourite is (1, 32); alone, rank 1 would pick (1, 64), rank 2 (2, 32).
    for r in reports:
        assert r["config"] == CONFIG[0], r
        assert r["correct"]
    assert reports[0]["tilus"]["tunings"] == 1
    assert reports[0]["table"][0]["how"] == "tuned"
    for r in reports[1:]:
        # Waited for rank 0: compiled and timed nothing of the search.
        assert r["tilus"]["tunings"] == 0 and r["measured"] == [], r
        assert r["tilus"]["rank_adoptions"] == 1
        assert r["table"][0]["how"] == "rank 0"


def test_a_later_job_starts_tuned_from_the_cache_directory(cache_dir, tmp_path):
    first = run_job(cache_dir, tmp_path / "first", 2, "rank0")
    assert first[0]["tilus"]["tunings"] == 1
    entries = [f for _, _, files in os.walk(cache_dir / "tuning") for f in files
               if f.endswith(".json")]
    assert len(entries) == 1
    second = run_job(cache_dir, tmp_path / "second", 2, "rank0")
    for r in second:
        assert r["config"] == CONFIG[0]
        assert r["tilus"]["tunings"] == 0 and r["measured"] == []
    assert second[0]["tilus"]["store_hits"] == 1
    assert second[0]["table"][0]["how"] == "stored"
    assert second[1]["table"][0]["how"] == "rank 0"


def test_all_ranks_time_and_agree_on_the_best_total(cache_dir, tmp_path):
    reports = run_job(cache_dir, tmp_path / "job", 2, "all")
    # Totals over ranks 0 and 1: (1,32)=10, (1,64)=6, (2,32)=8, (2,64)=14.
    for r in reports:
        assert r["config"] == CONFIG[1], r
        assert r["correct"]
        assert r["tilus"]["tunings"] == 1
        assert sorted(map(json.dumps, r["measured"])) == sorted(json.dumps(c) for c in
                                                                 CONFIG.values())
        assert r["table"][0]["time_ms"] == pytest.approx(6.0)
    # The stored entry holds the summed timings, so a later job adopts it untimed.
    again = run_job(cache_dir, tmp_path / "again", 2, "all")
    for r in again:
        assert r["config"] == CONFIG[1] and r["measured"] == []


def test_three_ranks_all_mode(cache_dir, tmp_path):
    reports = run_job(cache_dir, tmp_path / "job", 3, "all")
    # Totals: (1,32)=15, (1,64)=11, (2,32)=8.5, (2,64)=23.
    assert {json.dumps(r["config"]) for r in reports} == {json.dumps(CONFIG[3])}


def test_a_rank_alone_at_a_kernel_times_out_naming_kernel_and_key(cache_dir, tmp_path):
    reports = run_job(cache_dir, tmp_path / "job", 2, "partial")
    error = reports[1]["error"]
    assert error.startswith("RankAgreementTimeout"), error
    assert "rank 1 of 2 waited 2 s for rank 0" in error
    assert "Scale [scale" in error and '"runtime": {"n": 128}' in error, error
    assert "distributed_tuning('off')" in error


def test_best_total_counts_only_configurations_every_rank_timed():
    from tilus.tuning.ranks import best_total

    assert best_total({0: {1: 1.0, 2: 5.0}, 1: {1: 9.0, 2: 1.0, 3: 0.1}}) == (2, 6.0)
    assert best_total({0: {1: 2.0, 2: 1.0}, 1: {1: 1.0, 2: 2.0}}) == (1, 3.0)  # tie: first
    assert best_total({0: {1: 1.0}, 1: {2: 1.0}}) is None


def test_distributed_tuning_option(monkeypatch):
    import tilus
    from tilus.tuning import ranks

    monkeypatch.setenv("TILUS_DIST_TUNING", "all")
    monkeypatch.setenv("TILUS_DIST_TUNING_TIMEOUT", "12.5")
    assert tilus.option.get_distributed_tuning() == tilus.option.DistributedTuning("all", 12.5)
    tilus.option.distributed_tuning("off", timeout_s=3)
    try:
        assert tilus.option.get_distributed_tuning() == tilus.option.DistributedTuning("off", 3.0)
        with pytest.raises(ValueError, match="mode must be one of"):
            tilus.option.distributed_tuning("rank1")
        with pytest.raises(ValueError, match="timeout_s must be a number > 0"):
            tilus.option.distributed_tuning(timeout_s=0)
    finally:
        tilus.option.reset_distributed_tuning()
    # No process group in this process: nothing to agree with.
    assert ranks.current_channel() is None
