// The wire format between the autotuner and its compile worker processes
// (csrc/tools/compile_worker.cc): one request, then one response, on a stream socket.
// Every string is a little-endian uint64 length followed by its bytes.
//   request:  source, name, arch, options (count + strings), headers (count + name/text pairs)
//   response: status (one byte), payload: the cubin (Ok), the message (otherwise), then the
//             NVRTC log (CompileFailed) so the parent can rethrow nvrtc::CompileError.
#pragma once
#include <string>

#include "runtime/compile_cache.h"

namespace tilus::autotune::wire {

enum class Status : unsigned char { Ok = 0, CompileFailed = 1, OtherError = 2 };

struct Response {
  Status status = Status::Ok;
  std::string payload;  // cubin or error message
  std::string log;      // NVRTC log when CompileFailed
};

// Each returns false when the peer has gone (EOF, reset) or the data is malformed.
bool write_request(int fd, const runtime::CompileRequest& request);
bool read_request(int fd, runtime::CompileRequest& request);
bool write_response(int fd, const Response& response);
bool read_response(int fd, Response& response);

}  // namespace tilus::autotune::wire
