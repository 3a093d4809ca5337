#include "runtime/compile_cache.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/file_lock.h"
#include "runtime/nvrtc.h"
#include "support/sha256.h"

#ifndef TILUS_VERSION
#define TILUS_VERSION "dev"  // the build defines it; a stray build still keys consistently
#endif

namespace tilus::runtime {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'T', 'I', 'L', 'U', 'S', 'B', 'I', 'N'};
constexpr uint32_t kFormatVersion = 1;
// magic(8) | format version u32 LE | reserved u32 | payload size u64 LE | sha256(32)
constexpr size_t kHeaderSize = 8 + 4 + 4 + 8 + 32;

void put_le(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(char(uint8_t(value >> (8 * i))));
}

uint64_t get_le(const std::string& in, size_t offset, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t(uint8_t(in[offset + i])) << (8 * i);
  return value;
}

bool read_file(const std::string& path, std::string* contents) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  std::ostringstream buffer;
  buffer << file.rdbuf();
  *contents = buffer.str();
  return !file.bad();
}

// A process-unique suffix so concurrent writers (threads or processes) never share a
// temporary file.
std::string temp_suffix() {
  static std::atomic<uint64_t> counter{0};
  return ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
}

}  // namespace

std::string encode_cache_entry(const std::string& payload) {
  std::string out(kMagic, sizeof(kMagic));
  put_le(&out, kFormatVersion, 4);
  put_le(&out, 0, 4);
  put_le(&out, payload.size(), 8);
  Sha256::Digest digest = sha256(payload);
  out.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  out += payload;
  return out;
}

std::pair<bool, std::string> decode_cache_entry(const std::string& file, std::string* payload) {
  if (file.size() < kHeaderSize) return {false, "shorter than its header"};
  if (std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0) return {false, "bad magic"};
  uint64_t version = get_le(file, 8, 4);
  if (version != kFormatVersion) {
    return {false, "format version " + std::to_string(version) + ", expected " +
                       std::to_string(kFormatVersion)};
  }
  uint64_t size = get_le(file, 16, 8);
  if (size != file.size() - kHeaderSize) {
    return {false, "payload is " + std::to_string(file.size() - kHeaderSize) +
                       " bytes, header says " + std::to_string(size)};
  }
  Sha256::Digest digest = sha256(std::string_view(file).substr(kHeaderSize));
  if (std::memcmp(digest.data(), file.data() + 24, digest.size()) != 0) {
    return {false, "checksum mismatch"};
  }
  *payload = file.substr(kHeaderSize);
  return {true, ""};
}

std::string default_cache_dir() {
  if (const char* dir = std::getenv("TILUS_CACHE_DIR")) return dir;
  if (const char* home = std::getenv("HOME"); home && *home) {
    return (fs::path(home) / ".cache" / "tilus").string();
  }
  return "";
}

std::string compile_with_nvrtc(const CompileRequest& r) {
  return nvrtc::compile_to_cubin(r.source, r.name, r.arch, r.options, r.headers);
}

CompileCache& global_compile_cache() {
  static CompileCache* cache = new CompileCache(default_cache_dir());
  return *cache;
}

CompileCache::CompileCache(std::string cache_dir, Compiler compiler, std::string compiler_id)
    : compiler_(std::move(compiler)),
      compiler_id_(std::move(compiler_id)),
      cache_dir_(std::move(cache_dir)) {
  if (!compiler_) {
    default_compiler_ = true;
    compiler_ = compile_with_nvrtc;
  }
}

const std::string& CompileCache::compiler_id() {
  std::lock_guard<std::mutex> lock(compiler_id_mutex_);
  if (compiler_id_.empty()) {
    auto [major, minor] = nvrtc::nvrtc_version();  // loads NVRTC; throws if it cannot
    compiler_id_ = "nvrtc-" + std::to_string(major) + "." + std::to_string(minor);
  }
  return compiler_id_;
}

std::string CompileCache::key_of(const CompileRequest& request) {
  Sha256 hash;
  hash.update_field("tilus-cubin-key-1");
  hash.update_field(TILUS_VERSION);
  hash.update_field(compiler_id());
  hash.update_field(request.arch);
  hash.update_field(request.name);
  hash.update_field(request.source);
  hash.update_field(std::to_string(request.options.size()));
  for (const std::string& option : request.options) hash.update_field(option);
  hash.update_field(std::to_string(request.headers.size()));
  for (const auto& [name, text] : request.headers) {
    hash.update_field(name);
    hash.update_field(text);
  }
  return hash.hex_digest();
}

std::string CompileCache::entry_path(const std::string& key) const {
  std::string dir = cache_dir();
  if (dir.empty()) return "";
  return (fs::path(dir) / "cubin" / key.substr(0, 2) / (key + ".cubin")).string();
}

std::string CompileCache::get_or_compile(const CompileRequest& request) {
  return get_or_compile(request, compiler_);
}

std::string CompileCache::get_or_compile(const CompileRequest& request, const Compiler& via) {
  std::string key = key_of(request);
  std::promise<Payload> promise;
  std::string dir;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (auto hit = memory_.find(key); hit != memory_.end()) {
      ++stats_.memory_hits;
      return *hit->second;
    }
    if (auto running = inflight_.find(key); running != inflight_.end()) {
      ++stats_.inflight_waits;
      std::shared_future<Payload> result = running->second;
      lock.unlock();
      return *result.get();  // rethrows the first caller's compile error
    }
    inflight_.emplace(key, promise.get_future().share());
    dir = cache_dir_;
  }
  // This thread builds; everyone else asking for `key` now waits on `promise`.
  try {
    Payload cubin = build(request, key, dir, via);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      memory_[key] = cubin;
      inflight_.erase(key);
    }
    promise.set_value(cubin);
    return *cubin;
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      inflight_.erase(key);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

CompileCache::Payload CompileCache::build(const CompileRequest& request, const std::string& key,
                                          const std::string& dir, const Compiler& compiler) {
  std::string path;
  std::unique_ptr<FileLock> builder;  // this process builds the entry while it holds this
  if (!dir.empty()) {
    path = (fs::path(dir) / "cubin" / key.substr(0, 2) / (key + ".cubin")).string();
    if (Payload cubin = read_disk_entry(path)) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.disk_hits;
      return cubin;
    }
    // Other processes on this cache may be building the same key: one builds, the rest
    // wait on the entry's lock and then read what it wrote (renamed into place whole).
    std::error_code ignored;
    fs::create_directories(fs::path(path).parent_path(), ignored);
    builder = std::make_unique<FileLock>(path + ".lock");
    if (builder->waited()) {
      if (Payload cubin = read_disk_entry(path)) {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.disk_hits;
        ++stats_.cross_process_waits;
        return cubin;
      }
    }
  }
  auto cubin = std::make_shared<const std::string>(compiler(request));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.compiles;
  }
  if (!dir.empty()) write_disk_entry(dir, path, *cubin);
  return cubin;
}

CompileCache::Payload CompileCache::read_disk_entry(const std::string& path) {
  std::string file;
  if (!read_file(path, &file)) return nullptr;  // absent (or unreadable): a plain miss
  std::string payload;
  auto [ok, why] = decode_cache_entry(file, &payload);
  if (ok) return std::make_shared<const std::string>(std::move(payload));
  std::error_code ignored;
  fs::remove(path, ignored);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.corrupt_entries;
  warn("tilus: compile cache entry " + path + " was damaged (" + why +
       "); deleted it and recompiled");
  return nullptr;
}

void CompileCache::write_disk_entry(const std::string& dir, const std::string& path,
                                    const std::string& cubin) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!disk_writable_ || dir != cache_dir_) return;
  }
  std::string failure;
  std::error_code error;
  fs::path parent = fs::path(path).parent_path();
  fs::create_directories(parent, error);
  std::string temp = path + temp_suffix();
  if (error) {
    failure = "cannot create " + parent.string() + ": " + error.message();
  } else if (FILE* file = std::fopen(temp.c_str(), "wb")) {
    std::string entry = encode_cache_entry(cubin);
    bool written = std::fwrite(entry.data(), 1, entry.size(), file) == entry.size();
    int write_errno = errno;
    bool closed = std::fclose(file) == 0;
    if (!written || !closed) {
      failure = "cannot write " + temp + ": " + std::strerror(written ? errno : write_errno);
    } else if (std::rename(temp.c_str(), path.c_str()) != 0) {
      failure = "cannot rename " + temp + " to " + path + ": " + std::strerror(errno);
    }
    if (!failure.empty()) std::remove(temp.c_str());
  } else {
    failure = "cannot create " + temp + ": " + std::strerror(errno);
  }
  if (failure.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.disk_write_failures;
  if (disk_writable_ && dir == cache_dir_) {
    disk_writable_ = false;
    warn("tilus: cache directory " + dir + " is not writable (" + failure +
         "); compiled kernels are kept in memory only. Set TILUS_CACHE_DIR to a writable "
         "directory to keep them across runs.");
  }
}

void CompileCache::warn(std::string message) {
  for (const std::string& existing : warnings_) {
    if (existing == message) return;
  }
  warnings_.push_back(std::move(message));
}

CompileCacheStats CompileCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CompileCache::reset_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_ = CompileCacheStats{};
}

void CompileCache::clear_memory() {
  std::lock_guard<std::mutex> lock(mutex_);
  memory_.clear();
}

std::string CompileCache::cache_dir() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_dir_;
}

void CompileCache::set_cache_dir(std::string dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  cache_dir_ = std::move(dir);
  disk_writable_ = true;
}

std::vector<std::string> CompileCache::warnings() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return warnings_;
}

std::vector<std::string> CompileCache::take_warnings() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> taken;
  taken.swap(warnings_);
  return taken;
}

}  // namespace tilus::runtime
