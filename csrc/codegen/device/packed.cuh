// Packed sub-byte tensors in global and shared memory (ir/packed.h has the format):
// element i of a tensor occupies bits [i*Bits, (i+1)*Bits) of a little-endian bit
// stream. Register tiles keep one element per byte (lowp.cuh), so a load moves whole
// bytes with the ordinary vector loads into 32-bit words and unpack_bits spreads them;
// a store packs with pack_bits and writes whole bytes. Elements whose bytes a thread
// does not own entirely (the ragged end of a row) go through packed_get /
// packed_set_atomic, which leave the neighbours' bits alone.
#ifndef TILUS_DEVICE_PACKED_CUH
#define TILUS_DEVICE_PACKED_CUH

#include "tilus/types.cuh"

namespace tilus {

// N elements of Bits bits from the words w[] (bit 0 of w[0] first) into one byte each.
template <int Bits, int N, typename T>
static __device__ __forceinline__ void unpack_bits(T* dst, const uint32_t* w) {
  constexpr uint32_t mask = (1u << Bits) - 1u;
#pragma unroll
  for (int z = 0; z < N; ++z) {
    const int bit = z * Bits;  // constant after unrolling: the shifts are immediates
    uint32_t v = w[bit >> 5] >> (bit & 31);
    if ((bit & 31) + Bits > 32) v |= w[(bit >> 5) + 1] << (32 - (bit & 31));
    dst[z].bits = static_cast<uint8_t>(v & mask);
  }
}

// The reverse: N one-byte elements into ceil(N*Bits/32) words (unused high bits zero).
template <int Bits, int N, typename T>
static __device__ __forceinline__ void pack_bits(uint32_t* w, const T* src) {
  constexpr uint32_t mask = (1u << Bits) - 1u;
  constexpr int words = (N * Bits + 31) / 32;
#pragma unroll
  for (int k = 0; k < words; ++k) w[k] = 0;
#pragma unroll
  for (int z = 0; z < N; ++z) {
    const int bit = z * Bits;
    const uint32_t v = static_cast<uint32_t>(src[z].bits) & mask;
    w[bit >> 5] |= v << (bit & 31);
    if ((bit & 31) + Bits > 32) w[(bit >> 5) + 1] |= v >> (32 - (bit & 31));
  }
}

// The code of the element starting at bit `bit` of `base` (reads only its own bytes).
static __device__ __forceinline__ uint8_t packed_get(const uint8_t* base, long long bit, int bits) {
  const uint8_t* p = base + (bit >> 3);
  const int shift = static_cast<int>(bit & 7);
  uint32_t v = p[0];
  if (shift + bits > 8) v |= static_cast<uint32_t>(p[1]) << 8;
  return static_cast<uint8_t>((v >> shift) & ((1u << bits) - 1u));
}

// Writes one element's bits with atomics on the aligned 32-bit word(s) holding them:
// other threads may be writing the other elements of the same bytes at the same time.
// Clearing then setting only this element's bits keeps theirs whatever the order.
static __device__ __forceinline__ void packed_set_atomic(uint8_t* base, long long bit, int bits,
                                                         uint8_t code) {
  const unsigned long long addr = reinterpret_cast<unsigned long long>(base) + (bit >> 3);
  const int shift = static_cast<int>((addr & 3) * 8 + (bit & 7));
  unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~3ull);
  const unsigned long long mask = ((1ull << bits) - 1ull) << shift;
  const unsigned long long v = (static_cast<unsigned long long>(code) << shift) & mask;
  atomicAnd(word, ~static_cast<unsigned int>(mask));
  atomicOr(word, static_cast<unsigned int>(v));
  if (shift + bits > 32) {  // the element straddles two words
    atomicAnd(word + 1, ~static_cast<unsigned int>(mask >> 32));
    atomicOr(word + 1, static_cast<unsigned int>(v >> 32));
  }
}

}  // namespace tilus

#endif  // TILUS_DEVICE_PACKED_CUH
