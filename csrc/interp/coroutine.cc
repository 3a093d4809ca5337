#include "interp/coroutine.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>

#include "support/error.h"

namespace tilus::interp {

StackPool::StackPool(size_t stack_bytes) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  guard_bytes_ = page;
  stack_bytes_ = (stack_bytes + page - 1) / page * page;
}

StackPool::~StackPool() {
  for (void* m : all_) munmap(m, stack_bytes_ + guard_bytes_);
}

void* StackPool::acquire() {
  if (!free_.empty()) {
    void* s = free_.back();
    free_.pop_back();
    return s;
  }
  // MAP_NORESERVE: only the pages a block touches cost memory.
  void* m = mmap(nullptr, stack_bytes_ + guard_bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  // Stacks grow down: a PROT_NONE page below turns an overflow into a fault instead
  // of silently corrupting the neighbouring stack.
  mprotect(m, guard_bytes_, PROT_NONE);
  all_.push_back(m);
  return static_cast<uint8_t*>(m) + guard_bytes_;
}

void StackPool::release(void* base) { free_.push_back(base); }

Coroutine::~Coroutine() {
  // A coroutine destroyed while suspended leaks whatever its frames own; the
  // scheduler avoids that by cancelling (unwinding) suspended blocks first.
  if (stack_ && pool_) pool_->release(stack_);
}

void Coroutine::start(StackPool& pool, Fn fn, void* arg) {
  TILUS_ASSERT(!running_ && stack_ == nullptr, "coroutine started twice");
  pool_ = &pool;
  stack_ = pool.acquire();
  fn_ = fn;
  arg_ = arg;
  finished_ = false;
  error_ = nullptr;
  getcontext(&ctx_);
  ctx_.uc_stack.ss_sp = stack_;
  ctx_.uc_stack.ss_size = pool.stack_bytes();
  ctx_.uc_link = nullptr;  // the body never returns off the end: it swaps back
  auto p = reinterpret_cast<uintptr_t>(this);
  makecontext(&ctx_, reinterpret_cast<void (*)()>(&Coroutine::trampoline), 2,
              static_cast<unsigned>(p & 0xffffffffu), static_cast<unsigned>(p >> 32));
}

void Coroutine::trampoline(unsigned lo, unsigned hi) {
  auto* self = reinterpret_cast<Coroutine*>(static_cast<uintptr_t>(lo) |
                                            (static_cast<uintptr_t>(hi) << 32));
  try {
    self->fn_(self->arg_);
  } catch (...) {
    self->error_ = std::current_exception();
  }
  self->finished_ = true;
  swapcontext(&self->ctx_, &self->caller_);
  // never resumed again
}

bool Coroutine::resume() {
  TILUS_ASSERT(stack_ != nullptr && !finished_ && !running_, "bad coroutine resume");
  running_ = true;
  swapcontext(&caller_, &ctx_);
  running_ = false;
  if (finished_) {
    pool_->release(stack_);
    stack_ = nullptr;
  }
  return finished_;
}

void Coroutine::yield() { swapcontext(&ctx_, &caller_); }

}  // namespace tilus::interp
