// The checks of the C++ tests (tests/cpp/test_*.cc, each its own program run by CTest):
// a failed check is printed with its line and counted; main returns non-zero when any
// failed (check_summary).
#pragma once
#include <cstdio>

inline int g_failed = 0, g_checks = 0;

#define CHECK(cond)                                                   \
  do {                                                                \
    ++g_checks;                                                       \
    if (!(cond)) {                                                    \
      ++g_failed;                                                     \
      std::printf("  FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                 \
  } while (0)
#define CHECK_EQ(a, b) CHECK((a) == (b))

// Prints "<passed>/<all> checks passed" and gives main's exit status.
inline int check_summary() {
  std::printf("%d/%d checks passed\n", g_checks - g_failed, g_checks);
  return g_failed ? 1 : 0;
}

inline void section(const char* name) { std::printf("[%s]\n", name); }
