// Errors carried from the C++ core to Python.
//
// Every user-facing error that comes from a script names the script's file, line and
// source text; the core only knows the SourceLoc attached to IR nodes, and the Python
// side (lang/errors.py) formats it. ScriptError carries that location; InternalError
// is a bug in tilus itself.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace tilus {

struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;
  std::string text;  // the stripped source line, for messages
  bool known() const { return line > 0; }
  std::string str() const {
    if (!known()) return "<unknown location>";
    return file + ":" + std::to_string(line);
  }
};

// A mistake in a user's script (wrong dtype, shape mismatch, ...). `kind` is one of
// "TypeError", "ValueError", "RuntimeError" and picks the Python exception class.
class ScriptError : public std::runtime_error {
 public:
  ScriptError(std::string kind, std::string message, SourceLoc loc = {})
      : std::runtime_error(message), kind_(std::move(kind)), loc_(std::move(loc)) {}
  const std::string& kind() const { return kind_; }
  const SourceLoc& loc() const { return loc_; }
  void set_loc_if_unknown(const SourceLoc& loc) {
    if (!loc_.known()) loc_ = loc;
  }

 private:
  std::string kind_;
  SourceLoc loc_;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  append(os, rest...);
}
}  // namespace detail

template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  detail::append(os, args...);
  return os.str();
}

}  // namespace tilus

// Throw a ScriptError of the given Python kind unless `cond` holds.
#define TILUS_CHECK(cond, kind, ...)                              \
  do {                                                            \
    if (!(cond)) throw ::tilus::ScriptError(kind, ::tilus::cat(__VA_ARGS__)); \
  } while (0)

// An invariant of tilus itself; failing it is our bug, not the user's.
#define TILUS_ASSERT(cond, ...)                                                        \
  do {                                                                                 \
    if (!(cond))                                                                       \
      throw ::tilus::InternalError(::tilus::cat("internal error at ", __FILE__, ":", \
                                                __LINE__, ": ", #cond, " ", ##__VA_ARGS__)); \
  } while (0)
