// An exclusive advisory lock on a file (flock), held for the object's lifetime: how
// processes sharing one cache directory agree that one of them builds an entry while
// the others wait for it. The kernel releases the lock when its holder dies, so a
// crashed builder never blocks the others for good.
#pragma once
#include <string>

namespace tilus::runtime {

class FileLock {
 public:
  // Blocks until the lock on `path` (created when absent) is held. When the file cannot
  // be opened (a read-only cache) the object holds nothing: held() is false.
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  bool held() const { return fd_ >= 0; }
  // Whether another holder had it first, so this one waited (its work may be done now).
  bool waited() const { return waited_; }

 private:
  int fd_ = -1;
  bool waited_ = false;
};

}  // namespace tilus::runtime
