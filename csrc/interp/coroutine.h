// Stackful coroutines on ucontext, for thread blocks that wait on a semaphore.
//
// A block that fails lock_semaphore yields to the scheduler, which runs other blocks
// and resumes it once the semaphore holds the awaited value. Stacks come from a pool
// (mmap'ed, with a guard page below each) and are reused by later blocks.
//
// Exceptions never cross swapcontext: the body runs inside a try/catch on its own
// stack, and the caught exception is handed to whoever resumed the coroutine.
#pragma once
#include <ucontext.h>

#include <cstddef>
#include <exception>
#include <vector>

namespace tilus::interp {

class StackPool {
 public:
  static constexpr size_t kDefaultStackBytes = 512 * 1024;
  explicit StackPool(size_t stack_bytes = kDefaultStackBytes);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  // The usable stack area [base, base + stack_bytes()).
  void* acquire();
  void release(void* base);
  size_t stack_bytes() const { return stack_bytes_; }

 private:
  size_t stack_bytes_;
  size_t guard_bytes_;
  std::vector<void*> free_;  // usable bases
  std::vector<void*> all_;   // mapping starts (guard page included)
};

class Coroutine {
 public:
  using Fn = void (*)(void* arg);
  Coroutine() = default;
  ~Coroutine();
  Coroutine(const Coroutine&) = delete;
  Coroutine& operator=(const Coroutine&) = delete;

  // Prepares `fn(arg)` to run on a stack from `pool`; nothing runs until resume().
  void start(StackPool& pool, Fn fn, void* arg);
  // Runs the body until it yields or returns. Returns true once it has returned; the
  // stack then goes back to the pool and error() holds what the body threw, if anything.
  bool resume();
  // Called from inside the body: back to the caller of resume().
  void yield();

  bool finished() const { return finished_; }
  std::exception_ptr error() const { return error_; }

 private:
  static void trampoline(unsigned lo, unsigned hi);

  ucontext_t ctx_{};
  ucontext_t caller_{};
  StackPool* pool_ = nullptr;
  void* stack_ = nullptr;
  Fn fn_ = nullptr;
  void* arg_ = nullptr;
  bool running_ = false;
  bool finished_ = false;
  std::exception_ptr error_;
};

}  // namespace tilus::interp
