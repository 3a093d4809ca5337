// Standalone test of the CUDA runtime layer that needs no GPU: SHA-256, NVRTC, the
// compile cache. NVRTC is found through TILUS_NVRTC_PATH or the nvidia-cuda-nvrtc wheel.
//
//   g++ -std=c++17 -O2 -Icsrc -DTILUS_VERSION='"0.1.0"' csrc/support/sha256.cc
//       csrc/runtime/*.cc tests/cpp/test_runtime.cc -ldl -lpthread -o /tmp/test_runtime
//   TILUS_NVRTC_PATH=.../nvidia/cu13/lib/libnvrtc.so.13 /tmp/test_runtime
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/compile_cache.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/nvrtc.h"
#include "support/sha256.h"

namespace fs = std::filesystem;
using namespace tilus;

namespace {

int g_failures = 0;

#define EXPECT(cond)                                                              \
  do {                                                                            \
    if (!(cond)) {                                                                \
      ++g_failures;                                                               \
      std::cerr << __FILE__ << ":" << __LINE__ << ": EXPECT failed: " #cond "\n"; \
    }                                                                             \
  } while (0)

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool is_elf(const std::string& bytes) { return bytes.rfind("\x7f" "ELF", 0) == 0; }

const char* kGoodKernel = R"(
#include "tilus/scale.cuh"
extern "C" __global__ void scale(float* data, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = tilus_scale(data[i], factor);
}
)";

nvrtc::HeaderList good_headers() {
  return {{"tilus/scale.cuh", "#pragma once\n__device__ inline float tilus_scale(float x, "
                              "float f) { return x * f; }\n"}};
}

runtime::CompileRequest good_request(const std::string& arch) {
  runtime::CompileRequest request;
  request.source = kGoodKernel;
  request.name = "scale.cu";
  request.arch = arch;
  request.options = {"-lineinfo"};
  request.headers = good_headers();
  return request;
}

// A fresh, empty directory under /tmp for one test.
std::string fresh_dir(const std::string& tag) {
  fs::path dir = fs::temp_directory_path() /
                 ("tilus_test_runtime_" + std::to_string(getpid()) + "_" + tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void test_sha256() {
  EXPECT(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  EXPECT(sha256_hex(million) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Feeding the bytes in odd-sized pieces gives the same digest as one call.
  Sha256 pieces;
  for (size_t offset = 0; offset < million.size(); offset += 777) {
    pieces.update(std::string_view(million).substr(offset, 777));
  }
  EXPECT(pieces.hex_digest() == sha256_hex(million));
  // Every length around the 55/56/64-byte padding boundaries agrees with piecewise hashing.
  for (size_t n = 50; n < 140; ++n) {
    std::string text(n, 'x');
    Sha256 split;
    split.update(std::string_view(text).substr(0, n / 3)).update(std::string_view(text).substr(n / 3));
    EXPECT(split.hex_digest() == sha256_hex(text));
  }
  // Field framing: ("ab","c") differs from ("a","bc").
  EXPECT(Sha256().update_field("ab").update_field("c").hex_digest() !=
         Sha256().update_field("a").update_field("bc").hex_digest());
}

void test_arch_strings() {
  EXPECT(runtime::arch_string(9, 0) == "sm_90a");
  EXPECT(runtime::arch_string(10, 0) == "sm_100a");
  EXPECT(runtime::arch_string(8, 0) == "sm_80");
  EXPECT(runtime::arch_string(8, 9) == "sm_89");
  EXPECT(runtime::arch_string(12, 0) == "sm_120");
}

void test_no_driver_is_a_clear_error() {
  // On a machine without libcuda the first use fails with a clear message, and
  // cuda_available() just says no.
  if (cuda::cuda_available()) return;
  try {
    cuda::driver();
    // a driver that loads but has no device is fine too
  } catch (const cuda::CudaError& error) {
    std::string message = error.what();
    EXPECT(contains(message, "no CUDA driver: could not load libcuda.so.1") ||
           contains(message, "cuInit"));
  }
}

void test_nvrtc_compiles(const std::string& arch) {
  std::string cubin = nvrtc::compile_to_cubin(kGoodKernel, "scale.cu", arch, {"--use_fast_math"},
                                              good_headers());
  EXPECT(is_elf(cubin));
  EXPECT(cubin.size() > 256);
  EXPECT(contains(cubin, "scale"));  // the symbol name is in the ELF string table
}

void test_nvrtc_error_shows_source() {
  std::string source =
      "extern \"C\" __global__ void broken(float* out) {\n"
      "  int fine = 1;\n"
      "  float value = undefined_symbol_xyz * 2.0f;\n"
      "  out[0] = value + fine;\n"
      "}\n";
  try {
    nvrtc::compile_to_cubin(source, "broken.cu", "sm_80", {});
    EXPECT(false && "compile should have failed");
  } catch (const nvrtc::CompileError& error) {
    std::string message = error.what();
    EXPECT(contains(error.log(), "undefined_symbol_xyz"));
    EXPECT(contains(message, error.log()));                    // NVRTC's log
    EXPECT(contains(message, "broken.cu:3:"));                 // the location
    EXPECT(contains(message, ">     3 |   float value = undefined_symbol_xyz"));  // the line
    EXPECT(contains(message, "      2 |   int fine = 1;"));   // context
    EXPECT(contains(message, "sm_80"));
  }
  // An error inside a header shows the header's line.
  nvrtc::HeaderList headers = {{"tilus/bad.cuh", "#pragma once\n__device__ int f() { return nope; }\n"}};
  try {
    nvrtc::compile_to_cubin("#include \"tilus/bad.cuh\"\nextern \"C\" __global__ void k() {}\n",
                            "uses_header.cu", "sm_80", {}, headers);
    EXPECT(false && "compile should have failed");
  } catch (const nvrtc::CompileError& error) {
    std::string message = error.what();
    EXPECT(contains(message, "tilus/bad.cuh:2:"));
    EXPECT(contains(message, "return nope;"));
  }
}

void test_cache_entry_encoding() {
  std::string payload = "\x7f" "ELF some cubin bytes";
  std::string entry = runtime::encode_cache_entry(payload);
  EXPECT(entry.rfind("TILUSBIN", 0) == 0);
  std::string decoded;
  EXPECT(runtime::decode_cache_entry(entry, &decoded).first && decoded == payload);
  std::string truncated = entry.substr(0, entry.size() - 3);
  EXPECT(!runtime::decode_cache_entry(truncated, &decoded).first);
  std::string flipped = entry;
  flipped.back() ^= 1;
  auto [ok, why] = runtime::decode_cache_entry(flipped, &decoded);
  EXPECT(!ok && contains(why, "checksum"));
  EXPECT(!runtime::decode_cache_entry("TILUS", &decoded).first);
}

void test_cache_memory_and_disk() {
  std::string dir = fresh_dir("cache");
  runtime::CompileRequest request = good_request("sm_80");
  std::string path;
  {
    runtime::CompileCache cache(dir);
    std::string first = cache.get_or_compile(request);
    std::string second = cache.get_or_compile(request);
    EXPECT(is_elf(first));
    EXPECT(first == second);
    runtime::CompileCacheStats stats = cache.stats();
    EXPECT(stats.compiles == 1);
    EXPECT(stats.memory_hits == 1);
    EXPECT(stats.disk_hits == 0);
    path = cache.entry_path(cache.key_of(request));
    EXPECT(fs::exists(path));
    EXPECT(contains(path, "/cubin/"));
    EXPECT(cache.warnings().empty());
    // A different arch or option is a different key.
    runtime::CompileRequest other = request;
    other.options.push_back("--use_fast_math");
    EXPECT(cache.key_of(other) != cache.key_of(request));
    other = request;
    other.headers[0].second += "\n";
    EXPECT(cache.key_of(other) != cache.key_of(request));
  }
  // A new cache object (a new process, in effect) finds it on disk.
  std::string from_memory;
  {
    runtime::CompileCache cache(dir);
    std::string bytes = cache.get_or_compile(request);
    EXPECT(cache.stats().disk_hits == 1);
    EXPECT(cache.stats().compiles == 0);
    from_memory = bytes;
  }
  // Damage the entry: it is detected, deleted, recompiled, rewritten, and reported.
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-16, std::ios::end);
    file.write("garbage-garbage!", 16);
  }
  {
    runtime::CompileCache cache(dir);
    std::string bytes = cache.get_or_compile(request);
    EXPECT(bytes == from_memory);
    runtime::CompileCacheStats stats = cache.stats();
    EXPECT(stats.corrupt_entries == 1);
    EXPECT(stats.compiles == 1);
    EXPECT(cache.warnings().size() == 1 && contains(cache.warnings()[0], "damaged"));
    EXPECT(cache.take_warnings().size() == 1 && cache.warnings().empty());
  }
  // Truncation too.
  fs::resize_file(path, 20);
  {
    runtime::CompileCache cache(dir);
    EXPECT(cache.get_or_compile(request) == from_memory);
    EXPECT(cache.stats().corrupt_entries == 1);
  }
  {
    runtime::CompileCache cache(dir);
    cache.get_or_compile(request);
    EXPECT(cache.stats().disk_hits == 1);  // the rebuilt entry is good
  }
  fs::remove_all(dir);
}

void test_cache_unwritable_dir() {
  // A path below a regular file cannot be created, even by root.
  std::string base = fresh_dir("unwritable");
  std::string blocker = base + "/a_file";
  std::ofstream(blocker) << "x";
  runtime::CompileCache cache(blocker + "/cache");
  runtime::CompileRequest request = good_request("sm_80");
  std::string bytes = cache.get_or_compile(request);
  EXPECT(is_elf(bytes));
  std::vector<std::string> warnings = cache.warnings();
  EXPECT(warnings.size() == 1 && contains(warnings[0], "not writable") &&
         contains(warnings[0], "memory only"));
  EXPECT(cache.get_or_compile(request) == bytes);
  EXPECT(cache.stats().memory_hits == 1);
  // Pointing it at a good directory restores the disk store.
  std::string good = base + "/good";
  cache.set_cache_dir(good);
  cache.clear_memory();
  cache.get_or_compile(request);
  EXPECT(fs::exists(cache.entry_path(cache.key_of(request))));
  fs::remove_all(base);
}

void test_cache_concurrent_single_compile() {
  std::string dir = fresh_dir("concurrent");
  std::atomic<int> compiles{0};
  runtime::CompileCache cache(
      dir,
      [&](const runtime::CompileRequest& request) {
        ++compiles;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // widen the race window
        return nvrtc::compile_to_cubin(request.source, request.name, request.arch,
                                       request.options, request.headers);
      },
      "test-compiler");
  runtime::CompileRequest request = good_request("sm_90a");
  std::vector<std::string> results(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] { results[i] = cache.get_or_compile(request); });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT(compiles == 1);
  EXPECT(cache.stats().compiles == 1);
  EXPECT(cache.stats().memory_hits + cache.stats().inflight_waits == 7);
  for (const std::string& result : results) EXPECT(result == results[0] && is_elf(result));

  // A compile error reaches every waiter, and the key is not poisoned.
  std::atomic<int> attempts{0};
  runtime::CompileCache failing(
      "", [&](const runtime::CompileRequest&) -> std::string {
        ++attempts;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        throw std::runtime_error("boom");
      },
      "failing-compiler");
  std::atomic<int> errors{0};
  threads.clear();
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      try {
        failing.get_or_compile(request);
      } catch (const std::runtime_error& error) {
        if (std::string(error.what()) == "boom") ++errors;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT(errors == 4);
  EXPECT(attempts >= 1 && attempts <= 4);
  int before = attempts;
  try {
    failing.get_or_compile(request);
  } catch (const std::runtime_error&) {
  }
  EXPECT(attempts == before + 1);
  fs::remove_all(dir);
}

void test_parallel_distinct_compiles() {
  // NVRTC from many threads at once (the autotuner's pattern).
  std::vector<std::string> results(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      std::string source = "extern \"C\" __global__ void k" + std::to_string(i) +
                           "(int* p) { p[threadIdx.x] = " + std::to_string(i) + "; }\n";
      results[i] = nvrtc::compile_to_cubin(source, "k.cu", i % 2 ? "sm_90a" : "sm_80", {});
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < 8; ++i) {
    EXPECT(is_elf(results[i]) && contains(results[i], "k" + std::to_string(i)));
  }
}

}  // namespace

int main() {
  const char* wheel =
      "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cu13/lib";
  nvrtc::set_nvrtc_search_dirs({wheel});

  test_sha256();
  test_arch_strings();
  test_no_driver_is_a_clear_error();
  test_cache_entry_encoding();
  if (!nvrtc::nvrtc_available()) {
    try {
      nvrtc::nvrtc_version();
    } catch (const std::exception& error) {
      std::cerr << "NVRTC not available, skipping NVRTC tests:\n" << error.what() << "\n";
    }
  } else {
    auto [major, minor] = nvrtc::nvrtc_version();
    std::cout << "NVRTC " << major << "." << minor << " from " << nvrtc::nvrtc_library_path()
              << "\n";
    test_nvrtc_compiles("sm_80");
    test_nvrtc_compiles("sm_90a");
    test_nvrtc_error_shows_source();
    test_cache_memory_and_disk();
    test_cache_unwritable_dir();
    test_cache_concurrent_single_compile();
    test_parallel_distinct_compiles();
  }
  if (g_failures) {
    std::cerr << g_failures << " check(s) failed\n";
    return 1;
  }
  std::cout << "all runtime tests passed\n";
  return 0;
}
