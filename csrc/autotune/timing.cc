#include "autotune/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "runtime/cuda_driver.h"

namespace tilus::autotune {
namespace {

// Start/end events of each timed run, destroyed however the timing ends.
class EventPairs {
 public:
  explicit EventPairs(int count) {
    events_.reserve(2 * size_t(count));
    for (int i = 0; i < 2 * count; ++i) {
      cuda::CUevent event = nullptr;
      TILUS_CU_CHECK(cuEventCreate(&event, cuda::CU_EVENT_DEFAULT));
      events_.push_back(event);
    }
  }
  ~EventPairs() {
    for (cuda::CUevent event : events_) cuda::driver().cuEventDestroy(event);
  }
  cuda::CUevent start(int i) const { return events_[2 * size_t(i)]; }
  cuda::CUevent end(int i) const { return events_[2 * size_t(i) + 1]; }

 private:
  std::vector<cuda::CUevent> events_;
};

// Timed runs a pruning decision looks at (time_runs).
constexpr int kJudgedRuns = 2;
// Enqueue this many times the host time expected (flushes_to_cover) ...
constexpr double kCoverMargin = 1.5;
// ... and count a run only when its host time stayed within this share of its flushes.
constexpr double kCoveredShare = 0.9;
// Attempts at most this many times `repeat` when runs are dropped.
constexpr int kMaxAttemptsPerRun = 3;

float elapsed_ms(cuda::CUevent start, cuda::CUevent end) {
  TILUS_CU_CHECK(cuEventSynchronize(end));
  float ms = 0;
  TILUS_CU_CHECK(cuEventElapsedTime(&ms, start, end));
  return ms;
}

double host_ms_of(const std::function<void()>& run) {
  auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int flushes_to_cover(double host_ms, double flush_ms) {
  if (!(flush_ms > 0) || !(host_ms > 0)) return 1;
  double wanted = std::ceil(kCoverMargin * host_ms / flush_ms);
  return static_cast<int>(std::clamp(wanted, 1.0, double(kMaxFlushes)));
}

bool host_was_covered(double host_ms, int flushes, double flush_ms) {
  return host_ms <= kCoveredShare * flushes * flush_ms;
}

TimingResult time_runs(const std::function<void()>& run, uintptr_t stream,
                       const TimingOptions& options) {
  cuda::ensure_context();
  auto cu_stream = reinterpret_cast<cuda::CUstream>(stream);
  const bool flushing = options.flush_bytes > 0;
  auto flush = [&](int value) {
    TILUS_CU_CHECK(cuMemsetD8Async(cuda::CUdeviceptr(options.flush_address),
                                   static_cast<unsigned char>(value), options.flush_bytes,
                                   cu_stream));
  };

  // The host time of the last two runs: what the next run's flushes must cover. The first
  // warm-up is left out when there are more (it loads the module, encodes tensor maps).
  double recent[2] = {0, 0};
  auto note_host = [&](double ms) { recent[1] = recent[0]; recent[0] = ms; };
  for (int i = 0; i < options.warmup; ++i) {
    double ms = host_ms_of(run);
    if (i > 0 || options.warmup == 1) note_host(ms);
  }

  const int repeat = std::max(options.repeat, 1);
  const int max_attempts = kMaxAttemptsPerRun * repeat;
  EventPairs events(max_attempts + 1);  // the last pair times one flush
  double flush_ms = 0;
  if (flushing) {
    TILUS_CU_CHECK(cuEventRecord(events.start(max_attempts), cu_stream));
    flush(0);
    TILUS_CU_CHECK(cuEventRecord(events.end(max_attempts), cu_stream));
    flush_ms = elapsed_ms(events.start(max_attempts), events.end(max_attempts));
  }

  TimingResult result;
  std::vector<float> all_times;  // kept or not: returned only if no run was ever covered
  int attempts = 0;
  // Enqueues `count` more runs (as many as the attempt budget allows), then waits for
  // them and keeps those the flushes covered.
  auto time_batch = [&](int count) {
    struct Pending { int index; int flushes; double host_ms; };
    std::vector<Pending> pending;
    for (int n = 0; n < count && attempts < max_attempts; ++n, ++attempts) {
      int flushes = flushing ? flushes_to_cover(std::max(recent[0], recent[1]), flush_ms) : 1;
      for (int f = 0; flushing && f < flushes; ++f) flush(attempts + f);
      TILUS_CU_CHECK(cuEventRecord(events.start(attempts), cu_stream));
      double ms = host_ms_of(run);
      TILUS_CU_CHECK(cuEventRecord(events.end(attempts), cu_stream));
      note_host(ms);
      pending.push_back({attempts, flushes, ms});
      result.most_flushes = std::max(result.most_flushes, flushes);
    }
    for (const Pending& p : pending) {
      float ms = elapsed_ms(events.start(p.index), events.end(p.index));
      all_times.push_back(ms);
      if (!flushing || host_was_covered(p.host_ms, p.flushes, flush_ms)) {
        result.times.push_back(ms);
      } else {
        ++result.dropped;
      }
    }
  };
  auto kept = [&] { return static_cast<int>(result.times.size()); };

  if (options.prune_ms > 0) {
    const int judged = std::min(repeat, kJudgedRuns);
    while (kept() < judged && attempts < max_attempts) time_batch(judged - kept());
    if (kept() >= judged &&
        *std::min_element(result.times.begin(), result.times.end()) > options.prune_ms) {
      return result;
    }
  }
  while (kept() < repeat && attempts < max_attempts) time_batch(repeat - kept());
  // The host outlasted even kMaxFlushes flushes every time: these times include host time.
  if (result.times.empty()) result.times = all_times;
  return result;
}

double median(std::vector<float> times) {
  if (times.empty()) return 0;
  size_t n = times.size();
  std::sort(times.begin(), times.end());
  return n % 2 ? times[n / 2] : 0.5 * (double(times[n / 2 - 1]) + times[n / 2]);
}

}  // namespace tilus::autotune
