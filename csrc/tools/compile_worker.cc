// tilus-compile-worker: a child process of the autotuner that compiles CUDA C++ with
// NVRTC, one request at a time, on the socket it gets as stdin (protocol:
// csrc/autotune/worker_protocol.h). NVRTC scales better across processes than across
// threads of one process (benchmarks/nvrtc_scaling.py); see csrc/autotune/compile_workers.h.
// It exits when the parent closes the socket. NVRTC is found as in the parent, which
// passes the library it loaded in $TILUS_NVRTC_PATH.
#include <exception>

#include "autotune/worker_protocol.h"
#include "runtime/nvrtc.h"

int main() {
  using namespace tilus;
  runtime::CompileRequest request;
  while (autotune::wire::read_request(0, request)) {
    autotune::wire::Response response;
    try {
      response.payload = runtime::compile_with_nvrtc(request);
    } catch (const nvrtc::CompileError& e) {
      response.status = autotune::wire::Status::CompileFailed;
      response.payload = e.what();
      response.log = e.log();
    } catch (const std::exception& e) {
      response.status = autotune::wire::Status::OtherError;
      response.payload = e.what();
    }
    if (!autotune::wire::write_response(0, response)) return 1;
  }
  return 0;
}
