#include "autotune/worker_protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace tilus::autotune::wire {

namespace {

constexpr uint64_t kMaxString = uint64_t(1) << 31;  // a sanity bound, far above any source or cubin

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    // send with MSG_NOSIGNAL: a dead peer is an error here, not a SIGPIPE for the process
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

bool read_all(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

class Writer {
 public:
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) buffer_.push_back(char((v >> (8 * i)) & 0xff));
  }
  void str(const std::string& s) {
    u64(s.size());
    buffer_ += s;
  }
  bool send(int fd) const { return write_all(fd, buffer_.data(), buffer_.size()); }
  std::string buffer_;
};

bool read_u64(int fd, uint64_t& v) {
  unsigned char bytes[8];
  if (!read_all(fd, reinterpret_cast<char*>(bytes), 8)) return false;
  v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | bytes[i];
  return true;
}

bool read_str(int fd, std::string& s) {
  uint64_t size;
  if (!read_u64(fd, size) || size > kMaxString) return false;
  s.resize(size);
  return size == 0 || read_all(fd, s.data(), size);
}

}  // namespace

bool write_request(int fd, const runtime::CompileRequest& r) {
  Writer w;
  w.str(r.source);
  w.str(r.name);
  w.str(r.arch);
  w.u64(r.options.size());
  for (const auto& o : r.options) w.str(o);
  w.u64(r.headers.size());
  for (const auto& [name, text] : r.headers) {
    w.str(name);
    w.str(text);
  }
  return w.send(fd);
}

bool read_request(int fd, runtime::CompileRequest& r) {
  uint64_t count;
  if (!read_str(fd, r.source) || !read_str(fd, r.name) || !read_str(fd, r.arch)) return false;
  if (!read_u64(fd, count) || count > 4096) return false;
  r.options.assign(count, {});
  for (auto& o : r.options)
    if (!read_str(fd, o)) return false;
  if (!read_u64(fd, count) || count > 4096) return false;
  r.headers.assign(count, {});
  for (auto& [name, text] : r.headers)
    if (!read_str(fd, name) || !read_str(fd, text)) return false;
  return true;
}

bool write_response(int fd, const Response& response) {
  Writer w;
  w.buffer_.push_back(char(response.status));
  w.str(response.payload);
  w.str(response.log);
  return w.send(fd);
}

bool read_response(int fd, Response& response) {
  char status;
  if (!read_all(fd, &status, 1) || status < 0 || status > 2) return false;
  response.status = Status(status);
  return read_str(fd, response.payload) && read_str(fd, response.log);
}

}  // namespace tilus::autotune::wire
