// Atomic read-modify-write on one element, for the atomic instructions
// (csrc/ops/atomics.cc). Each returns the value the element held before; red_add and
// red_sub return nothing (for old values nothing reads).
//
//   atomic_add<S>(p, v)  atomic_sub<S>(p, v)  atomic_min<S>(p, v)  atomic_max<S>(p, v)
//   atomic_exch<S>(p, v) atomic_cas<S>(p, compare, v)
//
// S is the scope: 0 cta, 1 cluster, 2 gpu, 3 sys. CUDA's atomic functions come in
// block, device and system scope; cluster uses the device one (a wider scope is
// always correct). The pointer may be generic, global or shared.
//
// Which dtypes each takes is decided by the instruction's check (ops/atomics.cc) and
// is what the hardware has: add/sub on int32, uint32, int64, uint64, float32,
// float64, float16 and bfloat16; min/max on the integers; exch and cas on the 32- and
// 64-bit types (floats compared and swapped as bit patterns, as the interpreter does).
// int64 add/sub/exch/cas go through the unsigned 64-bit functions: two's complement
// addition is the same operation.
#ifndef TILUS_DEVICE_ATOMIC_CUH
#define TILUS_DEVICE_ATOMIC_CUH

#include "tilus/convert.cuh"
#include "tilus/types.cuh"

namespace tilus {

namespace atomic_detail {
template <typename T> struct Native { using type = T; };
template <> struct Native<int32_t> { using type = int; };
template <> struct Native<uint32_t> { using type = unsigned int; };
template <> struct Native<int64_t> { using type = unsigned long long; };
template <> struct Native<uint64_t> { using type = unsigned long long; };

template <typename To, typename From>
static __device__ __forceinline__ To bits_as(From v) {
  static_assert(sizeof(To) == sizeof(From), "same size");
  union {
    From from;
    To to;
  } u;
  u.from = v;
  return u.to;
}

#define TILUS_ATOMIC_SCOPED(name)                                          \
  template <int S, typename N>                                             \
  static __device__ __forceinline__ N name##_scoped(N* p, N v) {           \
    if constexpr (S == 0) return ::name##_block(p, v);                     \
    else if constexpr (S == 3) return ::name##_system(p, v);               \
    else return ::name(p, v);                                              \
  }
TILUS_ATOMIC_SCOPED(atomicAdd)
TILUS_ATOMIC_SCOPED(atomicMin)
TILUS_ATOMIC_SCOPED(atomicMax)
TILUS_ATOMIC_SCOPED(atomicExch)
#undef TILUS_ATOMIC_SCOPED

template <int S, typename N>
static __device__ __forceinline__ N atomicCAS_scoped(N* p, N c, N v) {
  if constexpr (S == 0) return ::atomicCAS_block(p, c, v);
  else if constexpr (S == 3) return ::atomicCAS_system(p, c, v);
  else return ::atomicCAS(p, c, v);
}

// Hand-written PTX names its scope in the instruction: TILUS_BY_SCOPE(S, EMIT, args...)
// expands EMIT("cta", args...), EMIT("sys", args...) or EMIT("gpu", args...) (cluster
// scope takes gpu, as above).
#define TILUS_BY_SCOPE(S, EMIT, ...)                \
  do {                                              \
    if constexpr (S == 0) EMIT("cta", __VA_ARGS__);  \
    else if constexpr (S == 3) EMIT("sys", __VA_ARGS__); \
    else EMIT("gpu", __VA_ARGS__);                  \
  } while (0)

// 16-bit float add. float16: atom.add.noftz.f16 (sm_70+). bfloat16: atom.add.noftz.bf16
// on sm_90; before it, a compare-and-swap loop on the aligned 32-bit word holding the
// element, adding in float and rounding once (the exact sum of two bfloat16 values
// rounds to the same bfloat16 through float).
#define TILUS_ATOM_ADD_16(scope, type, old, p, v) \
  asm volatile("atom." scope ".add.noftz." type " %0, [%1], %2;" : "=h"(old.bits) : "l"(p), "h"(v.bits) : "memory")

template <int S>
static __device__ __forceinline__ half atomic_add_f16(half* p, half v) {
  half old;
  TILUS_BY_SCOPE(S, TILUS_ATOM_ADD_16, "f16", old, p, v);
  return old;
}

template <int S>
static __device__ __forceinline__ bfloat16 atomic_add_bf16(bfloat16* p, bfloat16 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  bfloat16 old;
  TILUS_BY_SCOPE(S, TILUS_ATOM_ADD_16, "bf16", old, p, v);
  return old;
#else
  const unsigned long long addr = reinterpret_cast<unsigned long long>(p);
  unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~3ull);
  const unsigned int shift = (addr & 2ull) ? 16u : 0u;
  unsigned int seen = *word, assumed;
  do {
    assumed = seen;
    bfloat16 cur{static_cast<uint16_t>(assumed >> shift)};
    bfloat16 sum = to_bfloat16(to_float(cur) + to_float(v));
    unsigned int next = (assumed & ~(0xffffu << shift)) | (static_cast<unsigned int>(sum.bits) << shift);
    seen = atomicCAS_scoped<S>(word, assumed, next);
  } while (seen != assumed);
  return bfloat16{static_cast<uint16_t>(assumed >> shift)};
#endif
}
}  // namespace atomic_detail

template <int S, typename T>
static __device__ __forceinline__ T atomic_add(T* p, T v) {
  using namespace atomic_detail;
  if constexpr (detail::is_same<T, half>()) return atomic_add_f16<S>(p, v);
  else if constexpr (detail::is_same<T, bfloat16>()) return atomic_add_bf16<S>(p, v);
  else {
    using N = typename Native<T>::type;
    return static_cast<T>(atomicAdd_scoped<S>(reinterpret_cast<N*>(p), static_cast<N>(v)));
  }
}

// PTX has no subtraction: add the negation (for integers, the two's complement, so
// unsigned values wrap as the interpreter's do).
template <int S, typename T>
static __device__ __forceinline__ T atomic_sub(T* p, T v) {
  if constexpr (detail::is_same<T, half>()) return atomic_add<S>(p, half{static_cast<uint16_t>(v.bits ^ 0x8000u)});
  else if constexpr (detail::is_same<T, bfloat16>()) return atomic_add<S>(p, bfloat16{static_cast<uint16_t>(v.bits ^ 0x8000u)});
  else if constexpr (detail::is_same<T, float>() || detail::is_same<T, double>()) return atomic_add<S>(p, static_cast<T>(-v));
  else return atomic_add<S>(p, static_cast<T>(T(0) - v));
}

// Fire-and-forget adds to global memory, for atomics whose old values nothing reads
// (ops/atomics.cc): PTX red asks memory for no reply, where atom's old value travels
// back (ptxas keeps an atom whose result is dead). The address is converted to the
// global space: a red on a generic address compiles to a test of the space and a
// compare-and-swap loop per element. Types without a red form take the atomic and drop
// the old value.
#define TILUS_RED_ADD(scope, type, constraint, value, p) \
  asm volatile("red.relaxed." scope ".global.add" type " [%0], %1;" ::"l"(p), constraint(value) : "memory")
#define TILUS_RED_ADD_V2(scope, p, v) \
  asm volatile("red.relaxed." scope ".global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(v[0]), "f"(v[1]) : "memory")
#define TILUS_RED_ADD_V4(scope, p, v)                                                                      \
  asm volatile("red.relaxed." scope ".global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v[0]), "f"(v[1]), \
               "f"(v[2]), "f"(v[3])                                                                          \
               : "memory")

template <typename T>
static __device__ __forceinline__ unsigned long long global_address(T* generic) {
  return static_cast<unsigned long long>(__cvta_generic_to_global(generic));
}

template <int S, typename T>
static __device__ __forceinline__ void red_add(T* generic, T v) {
  if constexpr (detail::is_same<T, float>()) TILUS_BY_SCOPE(S, TILUS_RED_ADD, ".f32", "f", v, global_address(generic));
  else if constexpr (detail::is_same<T, double>())
    TILUS_BY_SCOPE(S, TILUS_RED_ADD, ".f64", "d", v, global_address(generic));
  else if constexpr (detail::is_same<T, int32_t>() || detail::is_same<T, uint32_t>())
    TILUS_BY_SCOPE(S, TILUS_RED_ADD, ".u32", "r", static_cast<uint32_t>(v), global_address(generic));
  else if constexpr (detail::is_same<T, int64_t>() || detail::is_same<T, uint64_t>())
    TILUS_BY_SCOPE(S, TILUS_RED_ADD, ".u64", "l", static_cast<uint64_t>(v), global_address(generic));
  else if constexpr (detail::is_same<T, half>())
    TILUS_BY_SCOPE(S, TILUS_RED_ADD, ".noftz.f16", "h", v.bits, global_address(generic));
  else (void)atomic_add<S>(generic, v);
}

// V float32 adds to consecutive elements in one red (V = 2 or 4; 4 * V-byte aligned):
// sm_90's red.global.v2/v4.f32, one request where the scalar form sends V. Before sm_90,
// one red each.
template <int S, int V>
static __device__ __forceinline__ void red_add_vec(float* generic, const float* v) {
  static_assert(V == 2 || V == 4, "red_add_vec: 2 or 4 floats");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (V == 2) TILUS_BY_SCOPE(S, TILUS_RED_ADD_V2, global_address(generic), v);
  else TILUS_BY_SCOPE(S, TILUS_RED_ADD_V4, global_address(generic), v);
#else
  for (int i = 0; i < V; ++i) red_add<S>(generic + i, v[i]);
#endif
}
#undef TILUS_RED_ADD
#undef TILUS_RED_ADD_V2
#undef TILUS_RED_ADD_V4

template <int S, typename T>
static __device__ __forceinline__ void red_sub(T* p, T v) {
  if constexpr (detail::is_same<T, half>()) red_add<S>(p, half{static_cast<uint16_t>(v.bits ^ 0x8000u)});
  else if constexpr (detail::is_same<T, bfloat16>()) (void)atomic_sub<S>(p, v);
  else if constexpr (detail::is_same<T, float>() || detail::is_same<T, double>()) red_add<S>(p, static_cast<T>(-v));
  else red_add<S>(p, static_cast<T>(T(0) - v));
}

// min/max: signed 64-bit compares as long long, the others as their own type.
template <int S, typename T>
static __device__ __forceinline__ T atomic_min(T* p, T v) {
  using namespace atomic_detail;
  using N = typename Native<T>::type;
  if constexpr (detail::is_same<T, int64_t>())
    return static_cast<T>(atomicMin_scoped<S>(reinterpret_cast<long long*>(p), static_cast<long long>(v)));
  else return static_cast<T>(atomicMin_scoped<S>(reinterpret_cast<N*>(p), static_cast<N>(v)));
}

template <int S, typename T>
static __device__ __forceinline__ T atomic_max(T* p, T v) {
  using namespace atomic_detail;
  using N = typename Native<T>::type;
  if constexpr (detail::is_same<T, int64_t>())
    return static_cast<T>(atomicMax_scoped<S>(reinterpret_cast<long long*>(p), static_cast<long long>(v)));
  else return static_cast<T>(atomicMax_scoped<S>(reinterpret_cast<N*>(p), static_cast<N>(v)));
}

// exch and cas on the bit patterns: 32-bit types as unsigned int, 64-bit ones as
// unsigned long long (a float compares equal to `compare` when its bits do).
namespace atomic_detail {
template <int Bytes> struct BitsOf;
template <> struct BitsOf<4> { using type = unsigned int; };
template <> struct BitsOf<8> { using type = unsigned long long; };
}  // namespace atomic_detail
template <typename T>
using AtomicBits = typename atomic_detail::BitsOf<sizeof(T)>::type;

template <int S, typename T>
static __device__ __forceinline__ T atomic_exch(T* p, T v) {
  using namespace atomic_detail;
  using B = AtomicBits<T>;
  return bits_as<T>(atomicExch_scoped<S>(reinterpret_cast<B*>(p), bits_as<B>(v)));
}

template <int S, typename T>
static __device__ __forceinline__ T atomic_cas(T* p, T compare, T v) {
  using namespace atomic_detail;
  using B = AtomicBits<T>;
  return bits_as<T>(atomicCAS_scoped<S>(reinterpret_cast<B*>(p), bits_as<B>(compare), bits_as<B>(v)));
}

// The ordering a non-relaxed atomic asks for, around the relaxed one (PTX memory
// model: a fence.acq_rel before a relaxed strong write is a release pattern, one after
// a relaxed read an acquire pattern). fence.acq_rel, not the sequentially consistent
// fence.sc that __threadfence() emits: release/acquire is all the atomics promise, and
// the SC fence (MEMBAR.SC) cost a split-K block ~10% of its stall samples on an H100.
template <int S>
static __device__ __forceinline__ void atomic_fence() {
  if constexpr (S == 0) asm volatile("fence.acq_rel.cta;" ::: "memory");
  else if constexpr (S == 3) asm volatile("fence.acq_rel.sys;" ::: "memory");
  else asm volatile("fence.acq_rel.gpu;" ::: "memory");
}

#undef TILUS_ATOM_ADD_16
#undef TILUS_BY_SCOPE

}  // namespace tilus

#endif  // TILUS_DEVICE_ATOMIC_CUH
