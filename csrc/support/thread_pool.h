// A fixed set of worker threads running queued tasks, first in first out.
//
// Used where many independent, GIL-free jobs run at once (the autotuner compiles every
// configuration of a script in parallel). Tasks must not throw: a task that wants to
// report failure stores it somewhere itself. The destructor runs what is still queued,
// then joins the workers.
#pragma once
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace tilus {

class ThreadPool {
 public:
  // `threads` <= 0 means one per hardware thread.
  explicit ThreadPool(int threads) {
    if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
    workers_.reserve(threads);
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }

  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void submit(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(task));
    }
    wake_.notify_one();
  }

  size_t size() const { return workers_.size(); }

 private:
  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing left to run
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tilus
