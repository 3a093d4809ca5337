// Timing one kernel the way the autotuner compares candidates (CuTe DSL guide): a few
// untimed warm-up runs, then timed runs bracketed by CUDA events on the launch stream,
// each preceded by overwriting a buffer larger than the L2 cache so every run starts
// cold. The flush is enqueued before the start event, so it is not timed, and it keeps
// the GPU busy while the host prepares the launch, so launch overhead is not timed
// either, except in the first run after a synchronisation when the host is slower than
// the flush (which is why pruning looks at two runs).
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
  size_t flush_bytes = 0;       // 0: no L2 flush
  // > 0: stop after the first two timed runs when both took longer than this many
  // milliseconds (the candidate is already far slower than the best one so far).
  double prune_ms = 0;
};

// Calls `run` (which enqueues one launch on `stream`) warmup + repeat times and returns
// the milliseconds of each timed run, in order. Needs a current CUDA context.
std::vector<float> time_runs(const std::function<void()>& run, uintptr_t stream,
                             const TimingOptions& options);

// The median of `times` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<float> times);

}  // namespace tilus::autotune
