// Timing one kernel the way the autotuner compares candidates (CuTe DSL guide): a few
// untimed warm-up runs, then timed runs bracketed by CUDA events on the launch stream,
// each preceded by overwriting a buffer larger than the L2 cache so every run starts
// cold. The flush is enqueued before the start event, so it is not timed.
//
// The flush also keeps the GPU busy while the host prepares the launch: the start event
// completes when the flush does, so if the host takes longer than the flush to enqueue
// the kernel, the GPU idles inside the timed region and the run times the host. A
// Python launch of a TMA kernel with workspaces can take longer than a 256 MB memset on
// an H200 (~60 us), which made a 20 us candidate measure 50-60 us and lose (2026-11-28).
// So each run's host time is measured, the flush is repeated enough times to cover the
// host's time of the runs before it (flushes_to_cover), and a run whose host time was not
// covered (host_was_covered) is dropped and timed again.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace tilus::autotune {

struct TimingOptions {
  int warmup = 2;               // untimed runs first
  int repeat = 10;              // timed runs
  uintptr_t flush_address = 0;  // device buffer overwritten before each timed run
  size_t flush_bytes = 0;       // 0: no L2 flush (and no cover for the host's time)
  // > 0: stop after the first two timed runs when both took longer than this many
  // milliseconds (the candidate is already far slower than the best one so far).
  double prune_ms = 0;
};

struct TimingResult {
  std::vector<float> times;  // milliseconds of each kept timed run, in order
  int dropped = 0;           // runs timed again because the host outlasted their flush
  int most_flushes = 1;      // the most flushes put before one run
};

// Calls `run` (which enqueues one launch on `stream`) warmup + repeat times (more when
// runs are dropped) and returns the kept timed runs. Needs a current CUDA context.
TimingResult time_runs(const std::function<void()>& run, uintptr_t stream,
                       const TimingOptions& options);

// Flushes to enqueue before a run whose host side is expected to take `host_ms`, when
// one flush takes `flush_ms` on the GPU: enough, with a margin, that the GPU is still
// flushing when the kernel is enqueued; at least 1, at most kMaxFlushes.
constexpr int kMaxFlushes = 64;
int flushes_to_cover(double host_ms, double flush_ms);

// Whether a run whose host side took `host_ms` could not have left the GPU idle
// after `flushes` flushes of `flush_ms` each.
bool host_was_covered(double host_ms, int flushes, double flush_ms);

// The median of `times` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<float> times);

}  // namespace tilus::autotune
