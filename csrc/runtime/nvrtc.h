// NVRTC, loaded with dlopen on first use; compiles CUDA C++ source text to a cubin.
//
// Where we look, in order: $TILUS_NVRTC_PATH (a library file, or a directory holding
// one), then each directory given to set_nvrtc_search_dirs() (the Python side passes
// $CUDA_HOME/lib64, /usr/local/cuda/lib64, the nvidia-cuda-nvrtc wheel, torch/lib, ...),
// trying libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12 in each, and finally the plain
// names through the dynamic loader's own search. No NVRTC header is needed to build.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tilus::nvrtc {

// (include name, text) pairs handed to NVRTC as in-memory headers.
using HeaderList = std::vector<std::pair<std::string, std::string>>;

// NVRTC could not be loaded; the message lists every place that was tried.
class NvrtcLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The source did not compile; what() holds NVRTC's log and the offending source lines.
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& message, std::string log)
      : std::runtime_error(message), log_(std::move(log)) {}
  const std::string& log() const { return log_; }

 private:
  std::string log_;
};

// Directories to search after $TILUS_NVRTC_PATH. Only matters before the first load.
void set_nvrtc_search_dirs(std::vector<std::string> dirs);

// True when NVRTC loads. Never throws.
bool nvrtc_available();

// The path of the library that was loaded (loads it if needed).
std::string nvrtc_library_path();

// NVRTC's (major, minor), e.g. (13, 0).
std::pair<int, int> nvrtc_version();

// What one compilation produced, with ptxas's statistics of the (single) kernel when
// NVRTC reported them (-1 otherwise).
struct CompileResult {
  std::string cubin;
  std::string log;
  int64_t spill_bytes = -1;  // spill stores + spill loads
  int registers = -1;
  bool min_blocks_retry = false;  // the kept cubin came from the retry below
};

// Compiles `source` (program name `name`, which is what NVRTC's log calls it) for `arch`
// ("sm_80", "sm_90a", ...). Always passes -arch=<arch>, --std=c++17 (unless `options`
// names a standard), -default-device and ptxas's -v (for the statistics); `options` adds
// anything else, e.g. --use_fast_math or -lineinfo. Thread-safe: each call owns its
// nvrtcProgram. Throws CompileError on a compile error.
//
// Spill policy: generated kernels declare TILUS_LAUNCH_BOUNDS(threads), i.e.
// __launch_bounds__(threads), and ptxas then plans registers for several resident blocks,
// which for some kernels (and some ptxas versions) means spilling. A kernel that spills
// with fewer than 255 registers is compiled again with -DTILUS_MIN_BLOCKS_PER_SM=1 (one
// resident block is enough, so ptxas may use more registers) and the cubin that spills
// less is kept; a TILUS_MIN_BLOCKS_PER_SM given in `options` is left alone.
CompileResult compile(const std::string& source, const std::string& name, const std::string& arch,
                      const std::vector<std::string>& options, const HeaderList& headers = {});

// compile(...).cubin
std::string compile_to_cubin(const std::string& source, const std::string& name,
                             const std::string& arch, const std::vector<std::string>& options,
                             const HeaderList& headers = {});

// The spill bytes (stores + loads) and register count in a ptxas -v log; -1 when absent.
std::pair<int64_t, int> parse_ptxas_statistics(const std::string& log);

// The message compile_to_cubin throws: the log, then for each "file(line): error" the
// lines around it from `source` or the matching header. Exposed for tests.
std::string format_compile_error(const std::string& log, const std::string& source,
                                 const std::string& name, const std::string& arch,
                                 const HeaderList& headers);

}  // namespace tilus::nvrtc
