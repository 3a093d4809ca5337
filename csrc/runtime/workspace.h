// Device memory a kernel needs besides its arguments (split-K semaphores and partial
// sums, scratch tiles), kept across launches so the hot path never allocates.
//
// One allocation per (key, bytes, clean, device). A clean workspace is zeroed once,
// when it is allocated, on the caller's stream; the kernel contract is that it leaves
// the memory zero again (semaphores reset themselves), so it is never cleared again.
// A scratch workspace has unspecified contents.
//
// The pool is never destroyed: process exit reclaims device memory anyway, and freeing
// from a static destructor could run after the driver has shut down.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace tilus::runtime {

// A device pointer for the current context's device; 0 when `bytes` is 0.
uintptr_t get_workspace(const std::string& key, size_t bytes, bool clean, uintptr_t stream);

// Bytes currently held by the pool, over all devices.
size_t workspace_bytes();

// Waits for the current context and frees every workspace (tests, memory pressure).
// Pointers handed out before become invalid.
void release_workspaces();

}  // namespace tilus::runtime
