// Counter-based random numbers: Philox-4x32 (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC 2011), the generator Triton's tl.rand and torch's CUDA
// generator use. For the random instructions (csrc/ops/random.cc); the CPU interpreter
// computes the same words bit for bit (the same rounds in ops/random.cc).
//
//   philox_word(seed, c0, c1, rounds, w): word w (0..3) of Philox-4x32-<rounds> with
//   counter (c0, c1, 0, 0) and key (low, high 32 bits of seed).
//   uniform_from_bits(x): (x >> 8) * 2^-24, exactly, in [0, 1).
//   normal_from_bits(x0, x1): Box-Muller on two words, as float.
#ifndef TILUS_DEVICE_RANDOM_CUH
#define TILUS_DEVICE_RANDOM_CUH

#include "tilus/types.cuh"

namespace tilus {

static __device__ __forceinline__ uint32_t philox_word(uint64_t seed, uint32_t c0, uint32_t c1,
                                                       int rounds, int w) {
  uint32_t c[4] = {c0, c1, 0u, 0u};
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int r = 0; r < rounds; ++r) {
    const uint32_t a = 0xD2511F53u * c[0], ah = __umulhi(0xD2511F53u, c[0]);
    const uint32_t b = 0xCD9E8D57u * c[2], bh = __umulhi(0xCD9E8D57u, c[2]);
    const uint32_t n0 = bh ^ c[1] ^ k0, n2 = ah ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = b;
    c[2] = n2;
    c[3] = a;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return w == 0 ? c[0] : w == 1 ? c[1] : w == 2 ? c[2] : c[3];
}

static __device__ __forceinline__ float uniform_from_bits(uint32_t x) {
  return __uint2float_rn(x >> 8) * 5.9604644775390625e-08f;
}

static __device__ __forceinline__ float normal_from_bits(uint32_t x0, uint32_t x1) {
  // u1 in (0, 1]: the logarithm stays finite.
  const float u1 = __fmul_rn(__uint2float_rn((x0 >> 8) + 1u), 5.9604644775390625e-08f);
  const float u2 = uniform_from_bits(x1);
  const float r = sqrtf(__fmul_rn(-2.0f, logf(u1)));
  return __fmul_rn(r, cosf(__fmul_rn(6.2831853071795865f, u2)));
}

}  // namespace tilus

#endif  // TILUS_DEVICE_RANDOM_CUH
