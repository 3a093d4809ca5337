// Cache of compiled cubins: in memory, and on disk under <cache_dir>/cubin/.
//
// The key hashes everything that changes the binary: source, program name, arch,
// options, device header texts, the compiler's version and TILUS_VERSION. A disk entry
// is <cache_dir>/cubin/<key[0:2]>/<key>.cubin holding a header (magic "TILUSBIN", format
// version, payload size, SHA-256 of the payload) and the cubin, so a truncated or
// corrupted file is detected, deleted and rebuilt. Files are written to a temporary name
// in the same directory and renamed into place, so readers never see half a file.
// Processes sharing a cache directory build each key once between them: the builder holds
// <key>.cubin.lock (runtime/file_lock.h) while it compiles and writes; the others wait on
// that lock and then read the entry.
// An unwritable directory degrades to memory only, with a warning to fetch.
#pragma once
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tilus::runtime {

struct CompileRequest {
  std::string source;
  std::string name;  // NVRTC program name, e.g. "matmul.cu"
  std::string arch;  // "sm_80", "sm_90a", ...
  std::vector<std::string> options;
  std::vector<std::pair<std::string, std::string>> headers;  // (include name, text)
};

// nvrtc::compile_to_cubin on a request: what a cache without its own compiler runs.
std::string compile_with_nvrtc(const CompileRequest& request);

struct CompileCacheStats {
  uint64_t memory_hits = 0;
  uint64_t disk_hits = 0;
  uint64_t compiles = 0;
  uint64_t inflight_waits = 0;   // callers that waited for another thread's compile
  uint64_t cross_process_waits = 0;  // builds another process on this cache did for us
  uint64_t corrupt_entries = 0;  // disk entries found damaged, deleted and rebuilt
  uint64_t disk_write_failures = 0;
};

class CompileCache {
 public:
  using Compiler = std::function<std::string(const CompileRequest&)>;

  // `cache_dir` empty means memory only. Without a `compiler`, NVRTC is used and
  // `compiler_id` (part of the key) becomes "nvrtc-<major>.<minor>".
  explicit CompileCache(std::string cache_dir, Compiler compiler = nullptr,
                        std::string compiler_id = "");

  // The cubin for `request`, compiled at most once per key even when many threads ask
  // at the same time (the others wait for the first). Compile errors propagate to all.
  std::string get_or_compile(const CompileRequest& request);
  // The same, compiling a miss with `via` instead of this cache's compiler (the autotuner
  // hands misses to worker processes). `via` must produce what the cache's compiler would.
  std::string get_or_compile(const CompileRequest& request, const Compiler& via);
  bool uses_default_compiler() const { return default_compiler_; }

  std::string key_of(const CompileRequest& request);
  std::string entry_path(const std::string& key) const;  // "" when memory only

  CompileCacheStats stats() const;
  void reset_stats();
  void clear_memory();  // forget in-memory entries; disk entries stay

  std::string cache_dir() const;
  // Points the disk store elsewhere ("" = memory only) and forgets that an earlier
  // directory was unwritable. In-memory entries stay: keys do not depend on the directory.
  void set_cache_dir(std::string dir);

  std::vector<std::string> warnings() const;  // accumulated, oldest first
  std::vector<std::string> take_warnings();   // the same, then cleared

 private:
  using Payload = std::shared_ptr<const std::string>;

  const std::string& compiler_id();
  Payload build(const CompileRequest& request, const std::string& key, const std::string& dir,
                const Compiler& compiler);
  Payload read_disk_entry(const std::string& path);  // nullptr when absent or corrupt
  void write_disk_entry(const std::string& dir, const std::string& path,
                        const std::string& cubin);
  void warn(std::string message);  // requires mutex_

  Compiler compiler_;
  bool default_compiler_ = false;  // compiler_ is NVRTC (none was given)
  std::string compiler_id_;
  std::mutex compiler_id_mutex_;

  mutable std::mutex mutex_;  // guards everything below
  std::string cache_dir_;
  bool disk_writable_ = true;
  std::unordered_map<std::string, Payload> memory_;
  std::unordered_map<std::string, std::shared_future<Payload>> inflight_;
  CompileCacheStats stats_;
  std::vector<std::string> warnings_;
};

// $TILUS_CACHE_DIR when it is set (set but empty: "", memory only, as documented),
// else $HOME/.cache/tilus; "" (memory only) when there is no $HOME either.
std::string default_cache_dir();

// The process-wide cache used by the Python side and the autotuner. Created on first
// use with default_cache_dir(); never destroyed (safe to use from exit-time code).
CompileCache& global_compile_cache();

// Disk entry encoding, exposed for tests.
std::string encode_cache_entry(const std::string& payload);
// {true, ""} and *payload filled, or {false, why} when `file` is damaged.
std::pair<bool, std::string> decode_cache_entry(const std::string& file, std::string* payload);

}  // namespace tilus::runtime
