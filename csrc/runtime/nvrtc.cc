#include "runtime/nvrtc.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

namespace tilus::nvrtc {
namespace {

// The NVRTC C API we use (nvrtc.h of CUDA 12/13), as plain function pointer types.
using nvrtcResult = int;
using nvrtcProgram = struct nvrtcProgramOpaque*;
constexpr nvrtcResult NVRTC_SUCCESS = 0;

struct NvrtcApi {
  std::string path;
  const char* (*nvrtcGetErrorString)(nvrtcResult result);
  nvrtcResult (*nvrtcVersion)(int* major, int* minor);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram* program, const char* source, const char* name,
                                    int num_headers, const char* const* header_texts,
                                    const char* const* header_names);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram* program);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram program, int num_options,
                                     const char* const* options);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram program, size_t* size);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram program, char* log);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram program, size_t* size);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram program, char* cubin);
};

const char* const kLibraryNames[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};

std::mutex g_search_dirs_mutex;
std::vector<std::string> g_search_dirs;

std::atomic<const NvrtcApi*> g_api{nullptr};
std::mutex g_load_mutex;  // serialises the first load; a failed load may be retried

bool is_directory(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

// Tries to load one candidate; on failure appends "  <path>: <why>" to `tried`.
void* try_open(const std::string& path, bool by_loader_search, std::string* tried) {
  if (!by_loader_search && !exists(path)) {
    *tried += "\n  " + path + ": not found";
    return nullptr;
  }
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* reason = dlerror();
    *tried += "\n  " + path + (by_loader_search ? " (system library path): " : ": ") +
              (reason ? reason : "dlopen failed");
  }
  return library;
}

template <typename Fn>
void resolve(void* library, Fn*& slot, const char* name, std::string* missing) {
  slot = reinterpret_cast<Fn*>(dlsym(library, name));
  if (!slot) *missing += std::string(missing->empty() ? "" : ", ") + name;
}

const NvrtcApi* load_nvrtc() {
  std::vector<std::string> dirs;
  std::string tried;
  void* library = nullptr;
  std::string loaded_path;
  auto attempt = [&](const std::string& path, bool by_loader_search) {
    if (library) return;
    library = try_open(path, by_loader_search, &tried);
    if (library) loaded_path = path;
  };
  auto attempt_dir = [&](const std::string& dir) {
    for (const char* name : kLibraryNames) attempt(dir + "/" + name, false);
  };

  if (const char* explicit_path = std::getenv("TILUS_NVRTC_PATH"); explicit_path && *explicit_path) {
    if (is_directory(explicit_path)) {
      attempt_dir(explicit_path);
    } else {
      attempt(explicit_path, false);
    }
  }
  {
    std::lock_guard<std::mutex> lock(g_search_dirs_mutex);
    dirs = g_search_dirs;
  }
  for (const std::string& dir : dirs) attempt_dir(dir);
  // Last: whatever the dynamic loader finds (LD_LIBRARY_PATH, ldconfig cache).
  for (const char* name : kLibraryNames) attempt(name, true);

  if (!library) {
    throw NvrtcLoadError(
        "could not load NVRTC (libnvrtc). Install the nvidia-cuda-nvrtc wheel or a CUDA "
        "toolkit, or set TILUS_NVRTC_PATH to the library file. Tried:" + tried);
  }
  auto api = std::make_unique<NvrtcApi>();
  api->path = loaded_path;
  std::string missing;
  resolve(library, api->nvrtcGetErrorString, "nvrtcGetErrorString", &missing);
  resolve(library, api->nvrtcVersion, "nvrtcVersion", &missing);
  resolve(library, api->nvrtcCreateProgram, "nvrtcCreateProgram", &missing);
  resolve(library, api->nvrtcDestroyProgram, "nvrtcDestroyProgram", &missing);
  resolve(library, api->nvrtcCompileProgram, "nvrtcCompileProgram", &missing);
  resolve(library, api->nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", &missing);
  resolve(library, api->nvrtcGetProgramLog, "nvrtcGetProgramLog", &missing);
  resolve(library, api->nvrtcGetCUBINSize, "nvrtcGetCUBINSize", &missing);
  resolve(library, api->nvrtcGetCUBIN, "nvrtcGetCUBIN", &missing);
  if (!missing.empty()) {
    throw NvrtcLoadError("NVRTC at " + loaded_path + " is too old (CUDA 11.1+ needed): it lacks " +
                         missing);
  }
  return api.release();  // kept for the life of the process, like the library
}

const NvrtcApi& api() {
  if (const NvrtcApi* loaded = g_api.load(std::memory_order_acquire)) return *loaded;
  std::lock_guard<std::mutex> lock(g_load_mutex);
  if (!g_api.load(std::memory_order_relaxed)) {
    g_api.store(load_nvrtc(), std::memory_order_release);
  }
  return *g_api.load(std::memory_order_relaxed);
}

void check(nvrtcResult result, const char* call) {
  if (result == NVRTC_SUCCESS) return;
  const char* text = api().nvrtcGetErrorString(result);
  throw std::runtime_error(std::string(call) + " failed: " + (text ? text : "unknown error"));
}

// Destroys the program however compile_to_cubin leaves.
struct ProgramGuard {
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) api().nvrtcDestroyProgram(&program);
  }
};

bool names_a_standard(const std::string& option) {
  return option.rfind("-std", 0) == 0 || option.rfind("--std", 0) == 0;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

}  // namespace

void set_nvrtc_search_dirs(std::vector<std::string> dirs) {
  std::lock_guard<std::mutex> lock(g_search_dirs_mutex);
  g_search_dirs = std::move(dirs);
}

bool nvrtc_available() {
  try {
    api();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::string nvrtc_library_path() { return api().path; }

std::pair<int, int> nvrtc_version() {
  int major = 0, minor = 0;
  check(api().nvrtcVersion(&major, &minor), "nvrtcVersion");
  return {major, minor};
}

std::string format_compile_error(const std::string& log, const std::string& source,
                                 const std::string& name, const std::string& arch,
                                 const HeaderList& headers) {
  constexpr int kContextLines = 2;
  constexpr size_t kMaxLocations = 8;
  std::ostringstream message;
  message << "NVRTC failed to compile '" << name << "' for " << arch << ":\n" << log;
  if (!log.empty() && log.back() != '\n') message << '\n';

  static const std::regex kErrorLine(R"(^(.+?)\((\d+)\): (catastrophic )?error)");
  std::set<std::pair<std::string, int>> shown;
  bool printed_heading = false;
  for (const std::string& log_line : split_lines(log)) {
    std::smatch match;
    if (!std::regex_search(log_line, match, kErrorLine)) continue;
    std::string file = match[1];
    int line = std::stoi(match[2]);
    if (!shown.insert({file, line}).second) continue;
    if (shown.size() > kMaxLocations) break;

    const std::string* text = file == name ? &source : nullptr;
    for (const auto& [header_name, header_text] : headers) {
      if (!text && header_name == file) text = &header_text;
    }
    if (!text) continue;
    std::vector<std::string> lines = split_lines(*text);
    if (line < 1 || line > int(lines.size())) continue;
    if (!printed_heading) message << "\nGenerated source around the errors:";
    printed_heading = true;
    message << "\n" << file << ":" << line << ":\n";
    int first = std::max(1, line - kContextLines);
    int last = std::min(int(lines.size()), line + kContextLines);
    for (int i = first; i <= last; ++i) {
      char number[16];
      std::snprintf(number, sizeof(number), "%6d", i);
      message << (i == line ? "  >" : "   ") << number << " | " << lines[i - 1] << "\n";
    }
  }
  return message.str();
}

namespace {

constexpr const char* kPtxasVerbose = "--ptxas-options=-v";
constexpr const char* kMinBlocksMacro = "-DTILUS_MIN_BLOCKS_PER_SM";
constexpr const char* kMinBlocksDefine = "-DTILUS_MIN_BLOCKS_PER_SM=1";

CompileResult compile_once(const std::string& source, const std::string& name, const std::string& arch,
                           const std::vector<std::string>& options, const HeaderList& headers) {
  const NvrtcApi& nvrtc = api();
  std::vector<const char*> header_texts, header_names;
  for (const auto& [header_name, header_text] : headers) {
    header_names.push_back(header_name.c_str());
    header_texts.push_back(header_text.c_str());
  }
  ProgramGuard guard;
  check(nvrtc.nvrtcCreateProgram(&guard.program, source.c_str(), name.c_str(),
                                 int(headers.size()), header_texts.data(), header_names.data()),
        "nvrtcCreateProgram");

  std::vector<std::string> all_options = {"-arch=" + arch, "-default-device"};
  bool has_standard = false;
  for (const std::string& option : options) has_standard |= names_a_standard(option);
  if (!has_standard) all_options.push_back("--std=c++17");
  all_options.insert(all_options.end(), options.begin(), options.end());
  std::vector<const char*> option_pointers;
  for (const std::string& option : all_options) option_pointers.push_back(option.c_str());

  nvrtcResult compiled =
      nvrtc.nvrtcCompileProgram(guard.program, int(option_pointers.size()), option_pointers.data());

  size_t log_size = 0;
  std::string log;
  if (nvrtc.nvrtcGetProgramLogSize(guard.program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    if (nvrtc.nvrtcGetProgramLog(guard.program, log.data()) != NVRTC_SUCCESS) log.clear();
    while (!log.empty() && log.back() == '\0') log.pop_back();
  }
  if (compiled != NVRTC_SUCCESS) {
    std::string message = format_compile_error(log, source, name, arch, headers);
    if (log.empty()) {
      const char* text = nvrtc.nvrtcGetErrorString(compiled);
      message += std::string("(nvrtcCompileProgram: ") + (text ? text : "unknown error") + ")\n";
    }
    throw CompileError(message, log);
  }

  size_t cubin_size = 0;
  check(nvrtc.nvrtcGetCUBINSize(guard.program, &cubin_size), "nvrtcGetCUBINSize");
  if (cubin_size == 0) {
    throw std::runtime_error("NVRTC produced no cubin for '" + name + "' (arch " + arch +
                             " must be a real sm_XY architecture, not compute_XY)");
  }
  CompileResult result;
  result.cubin.assign(cubin_size, '\0');
  check(nvrtc.nvrtcGetCUBIN(guard.program, result.cubin.data()), "nvrtcGetCUBIN");
  std::tie(result.spill_bytes, result.registers) = parse_ptxas_statistics(log);
  result.log = std::move(log);
  return result;
}

}  // namespace

std::pair<int64_t, int> parse_ptxas_statistics(const std::string& log) {
  // "... 0 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads" and
  // "ptxas info    : Used 96 registers, ..."
  auto number_before = [&](const std::string& marker) -> int64_t {
    size_t at = log.find(marker);
    if (at == std::string::npos) return -1;
    size_t begin = at;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(log[begin - 1]))) --begin;
    return begin == at ? -1 : std::stoll(log.substr(begin, at - begin));
  };
  int64_t stores = number_before(" bytes spill stores");
  int64_t loads = number_before(" bytes spill loads");
  int64_t spills = stores < 0 || loads < 0 ? -1 : stores + loads;
  int registers = -1;
  size_t used = log.find("Used ");
  if (used != std::string::npos) {
    size_t end = used + 5;
    while (end < log.size() && std::isdigit(static_cast<unsigned char>(log[end]))) ++end;
    if (end > used + 5 && log.compare(end, 10, " registers") == 0)
      registers = std::stoi(log.substr(used + 5, end - used - 5));
  }
  return {spills, registers};
}

CompileResult compile(const std::string& source, const std::string& name, const std::string& arch,
                      const std::vector<std::string>& options, const HeaderList& headers) {
  std::vector<std::string> verbose = options;
  verbose.push_back(kPtxasVerbose);
  CompileResult first = compile_once(source, name, arch, verbose, headers);
  // At 255 registers ptxas already had all a thread can get: one block per SM adds none.
  constexpr int kMaxRegisters = 255;
  const bool retry = first.spill_bytes > 0 && first.registers >= 0 && first.registers < kMaxRegisters &&
                     source.find("TILUS_LAUNCH_BOUNDS(") != std::string::npos &&
                     std::none_of(options.begin(), options.end(), [](const std::string& o) {
                       return o.rfind(kMinBlocksMacro, 0) == 0;  // the caller chose the value
                     });
  if (!retry) return first;
  verbose.push_back(kMinBlocksDefine);
  CompileResult second = compile_once(source, name, arch, verbose, headers);
  if (second.spill_bytes < 0 || second.spill_bytes >= first.spill_bytes) return first;
  second.min_blocks_retry = true;
  return second;
}

std::string compile_to_cubin(const std::string& source, const std::string& name,
                             const std::string& arch, const std::vector<std::string>& options,
                             const HeaderList& headers) {
  return compile(source, name, arch, options, headers).cubin;
}

}  // namespace tilus::nvrtc
