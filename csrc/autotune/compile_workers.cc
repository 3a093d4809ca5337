#include "autotune/compile_workers.h"

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "autotune/worker_protocol.h"
#include "runtime/nvrtc.h"

extern char** environ;

namespace tilus::autotune {

CompileWorkers& CompileWorkers::instance() {
  static CompileWorkers* workers = new CompileWorkers();
  return *workers;
}

void CompileWorkers::set_executable(std::string path) {
  std::lock_guard<std::mutex> lock(mutex_);
  executable_ = std::move(path);
}

std::string CompileWorkers::executable() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return executable_;
}

int CompileWorkers::workers_started() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return started_;
}

bool CompileWorkers::spawn(Worker& worker) {
  std::string path = executable();
  if (path.empty() || access(path.c_str(), X_OK) != 0) return false;
  std::string nvrtc_path;
  try {
    nvrtc_path = nvrtc::nvrtc_library_path();  // the child loads the same library
  } catch (const std::exception&) {
    return false;
  }
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) return false;
  // The child's environment: ours, with TILUS_NVRTC_PATH pointing at our NVRTC.
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "TILUS_NVRTC_PATH=", 17) != 0) env_strings.emplace_back(*e);
  env_strings.push_back("TILUS_NVRTC_PATH=" + nvrtc_path);
  std::vector<char*> env;
  for (auto& s : env_strings) env.push_back(s.data());
  env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sockets[1], 0);  // dup2 clears CLOEXEC on fd 0
  char* argv[] = {path.data(), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(sockets[1]);
  if (rc != 0) {
    close(sockets[0]);
    return false;
  }
  worker.pid = pid;
  worker.socket = sockets[0];
  std::lock_guard<std::mutex> lock(mutex_);
  ++started_;
  return true;
}

void CompileWorkers::retire(Worker& worker) {
  if (worker.socket >= 0) close(worker.socket);
  if (worker.pid > 0) {
    kill(worker.pid, SIGKILL);
    waitpid(worker.pid, nullptr, 0);
  }
  worker = Worker{};
}

std::string CompileWorkers::compile(const runtime::CompileRequest& request) {
  auto in_this_thread = [&] { return runtime::compile_with_nvrtc(request); };
  Worker worker;
  bool enabled;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (owner_ != getpid()) {
      // A fork of the process that started these workers: their sockets are shared with
      // the parent, so this process leaves them to it and starts its own.
      for (Worker& w : idle_) close(w.socket);
      idle_.clear();
      owner_ = getpid();
    }
    enabled = !executable_.empty();
    if (enabled && !idle_.empty()) {
      worker = idle_.back();
      idle_.pop_back();
    }
  }
  if (!enabled || (worker.pid < 0 && !spawn(worker))) return in_this_thread();  // unlocked
  wire::Response response;
  if (!wire::write_request(worker.socket, request) || !wire::read_response(worker.socket, response)) {
    retire(worker);  // it died (or was killed): compile here, start a fresh one next time
    return in_this_thread();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (owner_ == getpid()) idle_.push_back(worker);
  }
  switch (response.status) {
    case wire::Status::Ok: return std::move(response.payload);
    case wire::Status::CompileFailed: throw nvrtc::CompileError(response.payload, response.log);
    case wire::Status::OtherError: break;
  }
  throw std::runtime_error(response.payload);
}

}  // namespace tilus::autotune
