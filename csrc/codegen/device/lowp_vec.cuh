// Four-at-a-time casts from the one-byte register elements (sub-byte integers, int8 /
// uint8, small floats: one code per byte, lowp.cuh) to float16 and bfloat16, for the
// dequantisation of weights. Four codes are one 32-bit word; bit tricks turn two of them
// into one half2/bfloat162 per instruction or two, instead of a decode per element:
//   integers: prmt puts each code under the exponent byte of 1024.0 (half, 0x64) or
//     128.0 (bfloat16, 0x43), so the half reads 1024 + code; one sub.f16x2 (or
//     fma.bf16x2) removes the 1024. A signed code is flipped to code + 2^(b-1) first
//     (xor of its sign bit) and the subtraction takes 1024 + 2^(b-1) away.
//   small floats with at most 4 exponent bits: the code's exponent and mantissa bits
//     are shifted to the half's (bfloat16's) own positions, the sign to bit 15, and one
//     multiplication by 2^(15 - bias) (2^(127 - bias)) rebiases: exact, subnormals too.
//   FP8 on sm_89+: cvt.rn.f16x2.{e4m3,e5m2}x2, two per instruction.
// Every result equals lowp_cast's (the codec's) bit for bit; the emitter
// (CudaEmitter::emit_cast) calls cast4 only for the pairs vector_cast4_supported lists.
#ifndef TILUS_DEVICE_LOWP_VEC_CUH
#define TILUS_DEVICE_LOWP_VEC_CUH

#include "tilus/types.cuh"
#include "tilus/lowp.cuh"
#include "tilus/arith.cuh"  // f16ops::half2: sub/mul.rn.f16x2

namespace tilus {
namespace vec4 {

static __device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}
static __device__ __forceinline__ uint32_t sub_f16x2(uint32_t a, uint32_t b) {
  return f16ops::half2<f16ops::kSub>(a, b);
}
// a * b + c on bfloat16 pairs (mul/sub.bf16x2 need sm_90; fma.rn.bf16x2 is sm_80).
static __device__ __forceinline__ uint32_t fma_bf16x2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
static __device__ __forceinline__ uint32_t fma_f16x2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
template <typename T>
static __device__ __forceinline__ uint32_t word_of(const T* in) {
  uint32_t w;
  memcpy(&w, in, 4);
  return w;
}
template <typename T>
static __device__ __forceinline__ void store2(T* out, uint32_t lo, uint32_t hi) {
  memcpy(out, &lo, 4);
  memcpy(out + 2, &hi, 4);
}
__host__ __device__ constexpr uint32_t splat(uint32_t byte) { return byte * 0x01010101u; }
__host__ __device__ constexpr uint32_t splat16(uint32_t h) { return h | (h << 16); }

// Four B-bit integer codes (one per byte of w) to halves.
template <int B, bool S>
static __device__ __forceinline__ void int_to_half(half* out, uint32_t w) {
  w &= splat((1u << B) - 1u);
  uint32_t bias = 0x6400u;  // 1024.0
  if (S) {
    w ^= splat(1u << (B - 1));
    bias += 1u << (B - 1);  // 1024 + 2^(B-1): exact, the mantissa holds it
  }
  const uint32_t lo = prmt(w, 0x64646464u, 0x5150u);  // bytes 0, 1 under 0x64
  const uint32_t hi = prmt(w, 0x64646464u, 0x5352u);  // bytes 2, 3
  store2(out, sub_f16x2(lo, splat16(bias)), sub_f16x2(hi, splat16(bias)));
}

// The same to bfloat16 (B <= 7: 128 + code must fit the 7-bit mantissa).
template <int B, bool S>
static __device__ __forceinline__ void int_to_bf16(bfloat16* out, uint32_t w) {
  w &= splat((1u << B) - 1u);
  uint32_t bias = 0x4300u;  // 128.0
  if (S) {
    w ^= splat(1u << (B - 1));
    bias += 1u << (B - 1);
  }
  const uint32_t neg = splat16(bias ^ 0x8000u);  // -(128 + ...)
  const uint32_t one = splat16(0x3F80u);
  const uint32_t lo = prmt(w, 0x43434343u, 0x5150u);
  const uint32_t hi = prmt(w, 0x43434343u, 0x5352u);
  store2(out, fma_bf16x2(lo, one, neg), fma_bf16x2(hi, one, neg));
}

// Two codes of a finite small float (E <= 4 exponent bits, M mantissa bits), one in the
// low bits of each 16-bit half of x (other bits ignored), to half2: the code's exponent
// field becomes the half's (bias 15 instead of 2^(E-1)-1), then a multiplication by
// 2^(15 - bias) restores the value; fp16 subnormal intermediates are exact.
template <int E, int M, int Mantissa>
static __device__ __forceinline__ uint32_t place_pair(uint32_t x) {
  constexpr uint32_t mag = (1u << (E + M)) - 1u;
  return ((x & splat16(mag)) << (Mantissa - M)) | ((x & splat16(1u << (E + M))) << (15 - E - M));
}
// (the rebias of placed codes: times 2^(15 - bias))
template <int E>
static __device__ __forceinline__ uint32_t rebias_half(uint32_t placed) {
  constexpr int bias = (1 << (E - 1)) - 1;
  return f16ops::half2<f16ops::kMul>(placed, splat16(static_cast<uint32_t>(15 + 15 - bias) << 10));
}
template <int E, int M>
static __device__ __forceinline__ uint32_t float_pair_to_half(uint32_t x) {
  return rebias_half<E>(place_pair<E, M, 10>(x));
}
// The same to bfloat162 (8 exponent bits, 7 mantissa bits; scale 2^(127 - bias)); the
// -0 addend keeps -0 * s + (-0) = -0.
template <int E>
static __device__ __forceinline__ uint32_t rebias_bf16(uint32_t placed) {
  constexpr int bias = (1 << (E - 1)) - 1;
  return fma_bf16x2(placed, splat16(static_cast<uint32_t>(127 + 127 - bias) << 7), splat16(0x8000u));
}
template <int E, int M>
static __device__ __forceinline__ uint32_t float_pair_to_bf16(uint32_t x) {
  return rebias_bf16<E>(place_pair<E, M, 7>(x));
}

// Four one-byte codes of such a float to halves (bfloat16s): codes 0 and 1, then 2 and 3,
// in the low bytes of the two halves of a word.
template <int E, int M>
static __device__ __forceinline__ void float_to_half(half* out, uint32_t w) {
  store2(out, float_pair_to_half<E, M>(prmt(w, 0u, 0x4140u)), float_pair_to_half<E, M>(prmt(w, 0u, 0x4342u)));
}
template <int E, int M>
static __device__ __forceinline__ void float_to_bf16(bfloat16* out, uint32_t w) {
  store2(out, float_pair_to_bf16<E, M>(prmt(w, 0u, 0x4140u)), float_pair_to_bf16<E, M>(prmt(w, 0u, 0x4342u)));
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
// Four FP8 codes (one word) to two half2: the word's 16-bit halves split inside the asm,
// so that each cvt reads its half of the register (passing the pairs as 16-bit operands
// cost a shift a word to move the upper pair down).
template <int S>
static __device__ __forceinline__ void fp8x4_to_half2x2(uint32_t w, uint32_t& lo, uint32_t& hi) {
  if constexpr (S == lowp::kE4M3)
    asm("{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.rn.f16x2.e4m3x2 %0, l; cvt.rn.f16x2.e4m3x2 %1, h; }"
        : "=r"(lo), "=r"(hi) : "r"(w));
  else
    asm("{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.rn.f16x2.e5m2x2 %0, l; cvt.rn.f16x2.e5m2x2 %1, h; }"
        : "=r"(lo), "=r"(hi) : "r"(w));
}
#endif

// ---- codes straight from packed words (a view's bits), two per 32-bit result
//
// pair_at<B>(w, z, to): codes z and z + 1 (code i at bits [i*B, (i+1)*B) of w[0], w[1], ...)
// at bit `to` of the two 16-bit halves (to + B <= 16); the other bits are left unspecified
// (the callers mask). One shift (a funnel shift for a code straddling two words: then it
// sits past bit 16, so one shift puts it in place) per code and one lop3 choosing the
// halves. After unrolling every position is a constant.
template <int B>
static __device__ __forceinline__ uint32_t code_to_bit(const uint32_t* w, int p, int to) {
  const int word = p >> 5, off = p & 31;
  if (off + B > 32) return __funnelshift_r(w[word], w[word + 1], off - to);
  return off >= to ? w[word] >> (off - to) : w[word] << (to - off);
}
template <int B>
static __device__ __forceinline__ uint32_t pair_at(const uint32_t* w, int z, int to = 0) {
  const uint32_t lo = code_to_bit<B>(w, z * B, to), hi = code_to_bit<B>(w, z * B + B, 16 + to);
  uint32_t t;  // (hi & 0xffff0000) | (lo & 0x0000ffff)
  asm("lop3.b32 %0, %1, %2, %3, 0xE4;" : "=r"(t) : "r"(hi), "r"(lo), "r"(0xFFFF0000u));
  return t;
}
// (t & mask) ^ k in one instruction
static __device__ __forceinline__ uint32_t and_xor(uint32_t t, uint32_t mask, uint32_t k) {
  uint32_t x;
  asm("lop3.b32 %0, %1, %2, %3, 0x6A;" : "=r"(x) : "r"(t), "r"(mask), "r"(k));
  return x;
}
// Codes z and z + 1 of a finite small float (E exponent bits, M mantissa bits) straight
// from the packed words to a pair word of the target's bits (Mantissa: 10 for half, 7 for
// bfloat16) before the rebias, place_pair's result: the pair is fetched with each code's
// exponent and mantissa already where the target's are (two shifts, one lop3: as pair_at
// to bit 0), its sign E + Mantissa up, and one shift takes the sign to bit 15. Six
// instructions a pair where fetching to bit 0 and then placing took seven.
template <int E, int M, int Mantissa>
static __device__ __forceinline__ uint32_t placed_pair_at(const uint32_t* w, int z) {
  constexpr int up = 15 - E - Mantissa;  // from the sign's place after the fetch to bit 15
  static_assert(up >= 0, "the code's sign must land inside its half");
  const uint32_t t = pair_at<1 + E + M>(w, z, Mantissa - M);
  return (t & splat16(((1u << (E + M)) - 1u) << (Mantissa - M))) | ((t << up) & splat16(0x8000u));
}

// A pair word of B-bit integer codes to half2 / bfloat162, int_to_half's arithmetic: the
// codes under the exponent of 1024.0 (bfloat16: 128.0), signed ones flipped to
// code + 2^(B-1), in one lop3; one subtraction takes the bias away. (Small floats:
// float_pair_to_half / float_pair_to_bf16 above.)
template <int B, bool S>
static __device__ __forceinline__ uint32_t int_pair_to_half(uint32_t t) {
  constexpr uint32_t flip = S ? 1u << (B - 1) : 0u;
  const uint32_t x = and_xor(t, splat16((1u << B) - 1u), splat16(0x6400u | flip));
  return sub_f16x2(x, splat16(0x6400u + flip));
}
template <int B, bool S>
static __device__ __forceinline__ uint32_t int_pair_to_bf16(uint32_t t) {
  constexpr uint32_t flip = S ? 1u << (B - 1) : 0u;
  const uint32_t x = and_xor(t, splat16((1u << B) - 1u), splat16(0x4300u | flip));
  return fma_bf16x2(x, splat16(0x3F80u), splat16((0x4300u + flip) ^ 0x8000u));
}

}  // namespace vec4

// out[0..3] = cast<To>(in[0..3]) for the pairs CudaEmitter::emit_cast vectorises.
template <typename To, typename From>
static __device__ __forceinline__ void cast4(To* out, const From* in) {
  const uint32_t w = vec4::word_of(in);
  using namespace detail;
  if constexpr (is_lowp_int<From>()) {
    constexpr int B = lowp_traits<From>::bits;
    constexpr bool S = lowp_traits<From>::is_signed;
    if constexpr (sizeof(To) == 2 && detail::is_same<To, half>()) vec4::int_to_half<B, S>(out, w);
    else vec4::int_to_bf16<B, S>(out, w);
  } else if constexpr (detail::is_same<From, unsigned char>() || detail::is_same<From, signed char>()) {
    if constexpr (detail::is_same<To, half>()) {
      vec4::int_to_half<8, detail::is_same<From, signed char>()>(out, w);
    } else {  // 128 + 255 does not fit bfloat16's mantissa
#pragma unroll
      for (int z = 0; z < 4; ++z) out[z] = cast<To>(in[z]);
    }
  } else {
    constexpr int E = lowp_traits<From>::e, M = lowp_traits<From>::m, Sch = lowp_traits<From>::scheme;
    if constexpr (Sch != lowp::kFinite) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
      if constexpr (detail::is_same<To, half>()) {
        uint32_t lo, hi;
        vec4::fp8x4_to_half2x2<Sch>(w, lo, hi);
        vec4::store2(out, lo, hi);
      } else {  // exact in half, so one rounding to bfloat16 through float
#pragma unroll
        for (int z = 0; z < 4; ++z) out[z] = cast<To>(lowp_cast<float>(in[z]));
      }
#else
      if constexpr (E == 5 && M == 2 && detail::is_same<To, half>()) {
        // e5m2 is the upper byte of a half: infinities and NaNs included
        vec4::store2(out, vec4::prmt(w, 0u, 0x1404u), vec4::prmt(w, 0u, 0x3424u));
      } else {
#pragma unroll
        for (int z = 0; z < 4; ++z) out[z] = lowp_cast<To>(in[z]);
      }
#endif
    } else if constexpr (detail::is_same<To, half>()) {
      vec4::float_to_half<E, M>(out, w);
    } else {
      vec4::float_to_bf16<E, M>(out, w);
    }
  }
}

// out[0..7] = the eight 4-bit integer codes of the packed word w (code z at bits 4z,
// unsigned, or two's complement when S) as half, straight from the word: no byte per
// code in between. With h = w >> 4, byte j of w holds code 2j and byte j of h code
// 2j + 1 in their low nibbles: one prmt puts them in the low bytes of the two halves of
// a word, one lop3 keeps the nibbles and sets the exponent of 1024.0 over them (and,
// signed, flips their sign bits: code + 8), one sub.f16x2 takes 1024 (1032) away:
// exact. Three instructions per two codes; bit for bit cast4's result. `out` is 4-byte
// aligned (the emitter's register arrays are 16-byte aligned, 8 * i elements in).
template <bool S>
static __device__ __forceinline__ void int4x8_to_half(half* out, uint32_t w) {
  const uint32_t h = w >> 4;
  // {1024.0, 1024.0}, signed {1032.0, 1032.0}: xor-ed over the nibbles it sets the exponent
  // (and flips the sign bits), subtracted it leaves the codes
  const uint32_t magic = S ? 0x64086408u : 0x64006400u;
  uint32_t* words = reinterpret_cast<uint32_t*>(out);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t both = vec4::prmt(w, h, 0x4000u | ((4 + j) << 8) | j);  // w.byte j, h.byte j
    uint32_t x;
    asm("lop3.b32 %0, %1, %2, %3, 0x6A;" : "=r"(x) : "r"(both), "r"(0x000F000Fu), "r"(magic));  // (a & b) ^ c
    words[j] = vec4::sub_f16x2(x, magic);
  }
}

// out[0..7] = eight 4-bit integer codes of the packed word w (unsigned, or two's
// complement when S) as half, for a word whose nibbles are paired: out[2j] is nibble j,
// out[2j + 1] nibble j + 4 (a view whose layout orders the codes so; the emitter checks
// it). Each result pair is then the two halves' low nibbles of w (or w >> 8) or the next
// nibbles up: one lop3 keeps them under the exponent of 1024.0 (signed: flips their sign
// bits, code + 8) and one sub.f16x2 leaves the codes; the upper nibbles read 1024 + 16 u,
// so one fma.f16x2 by 1/16 minus 64 (72) does. Exact; nine instructions a word against
// int4x8_to_half's thirteen.
template <bool S>
static __device__ __forceinline__ void int4x8_paired_to_half(half* out, uint32_t w) {
  const uint32_t low = S ? 0x64086408u : 0x64006400u;   // {1024, 1024}, flipping bit 3 of each nibble
  const uint32_t high = S ? 0x64806480u : 0x64006400u;  // the same for the nibbles at bits 4..7
  const uint32_t sixteenth = vec4::splat16(0x2C00u);     // 1/16
  const uint32_t minus = vec4::splat16(S ? 0xD480u : 0xD400u);  // -72, -64
  uint32_t* words = reinterpret_cast<uint32_t*>(out);
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const uint32_t v = w >> (8 * j);
    words[2 * j] = vec4::sub_f16x2(vec4::and_xor(v, 0x000F000Fu, low), low);
    words[2 * j + 1] = vec4::fma_f16x2(vec4::and_xor(v, 0x00F000F0u, high), sixteenth, minus);
  }
}
// The same to bfloat16: its 7-bit mantissa holds 128 + code but not 128 + 16 code, so each
// pair is shifted down to bits 0..3 (w >> 4j) and one fma.bf16x2 takes 128 (136) away.
template <bool S>
static __device__ __forceinline__ void int4x8_paired_to_bf16(bfloat16* out, uint32_t w) {
  const uint32_t magic = S ? 0x43084308u : 0x43004300u;  // {128, 128}, flipping bit 3
  const uint32_t one = vec4::splat16(0x3F80u), minus = vec4::splat16(S ? 0xC308u : 0xC300u);  // -136, -128
  uint32_t* words = reinterpret_cast<uint32_t*>(out);
#pragma unroll
  for (int j = 0; j < 4; ++j) words[j] = vec4::fma_bf16x2(vec4::and_xor(w >> (4 * j), 0x000F000Fu, magic), one, minus);
}

// Eight 3-bit integer codes, paired as the 4-bit ones: out[2j] is code 8G + j, out[2j + 1]
// code 8G + j + 4, code i at bits [3i, 3i + 3) of the packed words w[0], w[1], ... (a view
// whose layout orders them so; the emitter checks it). The codes of a pair are 12 bits
// apart, so one 32-bit window of the stream (a shift, or a funnel shift across two words)
// holds the low code at bit 4 and the high one at bit 16 of its halves; one lop3 keeps
// both under an exponent (signed: flips their sign bits, code + 4) and one instruction
// takes it away: float16 puts the low code under 64.0 (reading 64 + code) and the high
// one under 1024.0, so one sub.f16x2 of constants the instruction carries leaves the
// codes; bfloat16 keeps both under 128.0 and one fma by {1/16, 1} does it. Exact (the
// sums fit the mantissas), three instructions a pair against five through the unpaired
// order (tilus::packed_cast). (The float16 fma kept {1/16, 1} in a register, and ptxas
// rematerialised it about once every two pairs in the A16Wx decode loop: 183 of its 1837
// instructions a trip.) (Windows shared by neighbouring pairs, the low
// code at bits 4..7, saved a fifth of the shifts but the per-pair fma constants were
// rematerialised each time: more instructions in all, sm_90a.)
namespace paired3 {
// n as the bits of a float with M mantissa bits and exponent bias `bias` (|n| < 2^(M+1))
__host__ __device__ constexpr uint32_t int_bits(int n, int M, int bias) {
  const uint32_t sign = n < 0 ? 0x8000u : 0u;
  const int a = n < 0 ? -n : n;
  int e = 0;
  while ((2 << e) <= a) ++e;
  return a == 0 ? sign : sign | (uint32_t(e + bias) << M) | ((uint32_t(a) - (1u << e)) << (M - e));
}
// 2^-e as float bits (e >= 0)
__host__ __device__ constexpr uint32_t pow2_neg_bits(int e, int M, int bias) { return uint32_t(bias - e) << M; }
// bits [s, s + 32) of the stream (s < 0: the first word shifted up), enough for bit `last`
template <int s, int last>
static __device__ __forceinline__ uint32_t window(const uint32_t* w) {
  if constexpr (s < 0) {
    return w[0] << (-s);
  } else {
    constexpr int word = s >> 5, off = s & 31;
    if constexpr (off == 0) return w[word];
    else if constexpr ((last >> 5) == word) return w[word] >> off;
    else return __funnelshift_r(w[word], w[word + 1], off);
  }
}
// result pair j of group G: a window starting 4 bits below the low code puts it at bits
// 4..6 of the low half and the high code (12 bits up) at bits 0..2 of the high half
template <bool S, int G, int j, bool Half>
static __device__ __forceinline__ uint32_t pair(const uint32_t* w) {
  constexpr int p = 24 * G + 3 * j;  // the low code's first bit; the high code's is p + 12
  constexpr uint32_t mask = 0x00070070u;
  constexpr uint32_t flip = S ? 0x00040040u : 0u;
  constexpr int off = S ? 4 : 0;
  if constexpr (Half) {
    // {64 + code, 1024 + code}: the low code at mantissa bits 4..6 under 64.0 (a mantissa
    // step of 1/16), the high one at bits 0..2 under 1024.0; one subtraction
    const uint32_t x = vec4::and_xor(window<p - 4, p + 14>(w), mask, 0x64005400u ^ flip);
    return vec4::sub_f16x2(x, int_bits(64 + off, 10, 15) | (int_bits(1024 + off, 10, 15) << 16));
  } else {
    // {128 + 16 code, 128 + code} under 128.0, times {1/16, 1} less {8, 128}
    constexpr uint32_t scale = pow2_neg_bits(4, 7, 127) | (pow2_neg_bits(0, 7, 127) << 16);
    constexpr uint32_t minus = int_bits(-(8 + off), 7, 127) | (int_bits(-(128 + off), 7, 127) << 16);
    const uint32_t x = vec4::and_xor(window<p - 4, p + 14>(w), mask, 0x43004300u ^ flip);
    return vec4::fma_bf16x2(x, scale, minus);
  }
}
}  // namespace paired3
// (To: half or bfloat16)
template <typename To, bool S, int G>
static __device__ __forceinline__ void int3x8_paired_to(To* out, const uint32_t* w) {
  constexpr bool Half = detail::is_same<To, half>();
  uint32_t* words = reinterpret_cast<uint32_t*>(out);
  words[0] = paired3::pair<S, G, 0, Half>(w);
  words[1] = paired3::pair<S, G, 1, Half>(w);
  words[2] = paired3::pair<S, G, 2, Half>(w);
  words[3] = paired3::pair<S, G, 3, Half>(w);
}

// The paired conversions less a zero point per result pair, the zero folded into the
// subtracted constant (CudaEmitter::emit_zero_fold): one instruction a pair fewer. The
// constants come from paired_minus_low/high (half) or paired_minus_bf16 per zero, made
// once per zero rather than per pair. Bit for bit the conversion then the subtraction
// when every zero is an integer of magnitude at most 1024 (half) or 64 (bfloat16), which
// the emitter knows from the zeros' integer type: 1024 + z, 64 + z (72, 128, 136 + z)
// are then exact and the one rounding of code - z is the subtraction's own.
// {1024 + z} ({1032 + z} signed): what a low pair's sub.f16x2 takes away
template <bool S>
static __device__ __forceinline__ uint32_t paired_minus_low(half z) {
  return vec4::splat16(to_half((S ? 1032.0f : 1024.0f) + to_float(z)).bits);
}
// {-(64 + z)} ({-(72 + z)}): what a high pair's fma.f16x2 adds
template <bool S>
static __device__ __forceinline__ uint32_t paired_minus_high(half z) {
  return vec4::splat16(to_half(-((S ? 72.0f : 64.0f) + to_float(z))).bits);
}
// {-(128 + z)} ({-(136 + z)}): what each fma.bf16x2 adds
template <bool S>
static __device__ __forceinline__ uint32_t paired_minus_bf16(bfloat16 z) {
  return vec4::splat16(to_bfloat16(-((S ? 136.0f : 128.0f) + to_float(z))).bits);
}
// out[0..7] = int4x8_paired_to_half(w) less pair r's zero: c0, c2 from paired_minus_low,
// c1, c3 from paired_minus_high
template <bool S>
static __device__ __forceinline__ void int4x8_paired_minus_to_half(half* out, uint32_t w, uint32_t c0, uint32_t c1,
                                                                  uint32_t c2, uint32_t c3) {
  const uint32_t low = S ? 0x64086408u : 0x64006400u;
  const uint32_t high = S ? 0x64806480u : 0x64006400u;
  const uint32_t sixteenth = vec4::splat16(0x2C00u);
  uint32_t* words = reinterpret_cast<uint32_t*>(out);
  words[0] = vec4::sub_f16x2(vec4::and_xor(w, 0x000F000Fu, low), c0);
  words[1] = vec4::fma_f16x2(vec4::and_xor(w, 0x00F000F0u, high), sixteenth, c1);
  words[2] = vec4::sub_f16x2(vec4::and_xor(w >> 8, 0x000F000Fu, low), c2);
  words[3] = vec4::fma_f16x2(vec4::and_xor(w >> 8, 0x00F000F0u, high), sixteenth, c3);
}
// out[0..7] = int4x8_paired_to_bf16(w) less pair r's zero: c_r from paired_minus_bf16
template <bool S>
static __device__ __forceinline__ void int4x8_paired_minus_to_bf16(bfloat16* out, uint32_t w, uint32_t c0,
                                                                  uint32_t c1, uint32_t c2, uint32_t c3) {
  const uint32_t magic = S ? 0x43084308u : 0x43004300u;
  const uint32_t one = vec4::splat16(0x3F80u);
  const uint32_t c[4] = {c0, c1, c2, c3};
  uint32_t* words = reinterpret_cast<uint32_t*>(out);
#pragma unroll
  for (int j = 0; j < 4; ++j) words[j] = vec4::fma_bf16x2(vec4::and_xor(w >> (4 * j), 0x000F000Fu, magic), one, c[j]);
}

// out[0..N) = cast<To>(the N codes of From packed in w), two per step straight from the
// words: for the sub-byte types cast4 takes (integers, finite small floats) when a view
// has just unpacked them (the one-byte copies go unused and vanish). Bit for bit cast4's
// result; ~2.5 instructions a code for 3-, 5-, 6- and 7-bit codes against ~5 through the
// bytes (unpack_bits, then reassembling each byte quadruple into a word).
template <typename To, typename From, int N>
static __device__ __forceinline__ void packed_cast(To* out, const uint32_t* w) {
  using namespace detail;
  static_assert(N % 2 == 0, "codes go in pairs");
  constexpr bool to_half = is_same<To, half>();
#pragma unroll
  for (int z = 0; z < N; z += 2) {
    uint32_t h;
    if constexpr (is_lowp_int<From>()) {
      constexpr int B = lowp_traits<From>::bits;
      constexpr bool S = lowp_traits<From>::is_signed;
      const uint32_t x = vec4::pair_at<B>(w, z);
      h = to_half ? vec4::int_pair_to_half<B, S>(x) : vec4::int_pair_to_bf16<B, S>(x);
    } else {
      constexpr int E = lowp_traits<From>::e, M = lowp_traits<From>::m;
      h = to_half ? vec4::rebias_half<E>(vec4::placed_pair_at<E, M, 10>(w, z))
                  : vec4::rebias_bf16<E>(vec4::placed_pair_at<E, M, 7>(w, z));
    }
    memcpy(out + z, &h, 4);
  }
}

// out[0], out[1] = the two halves of w (out 4-byte aligned: an even index of a register array)
template <typename T>
static __device__ __forceinline__ void store_word(T* out, uint32_t w) {
  memcpy(out, &w, 4);
}

// The rebias of packed small-float codes folded into the scale that multiplies them
// (CudaEmitter::emit_scale_fold): {s, s} * 2^(15 - bias) (bfloat16: 2^(127 - bias)), the
// multiplication packed_cast gives each pair, here once a scale. Exact unless it
// overflows, which clears `fits` (the emitter then rebiases and multiplies apart).
template <typename To, typename From>
static __device__ __forceinline__ uint32_t rebiased_scale(To s, bool& fits) {
  constexpr int E = detail::lowp_traits<From>::e;
  const uint32_t both = vec4::splat16(s.bits);
  constexpr bool to_half = detail::is_same<To, half>();
  const uint32_t r = to_half ? vec4::rebias_half<E>(both) : vec4::rebias_bf16<E>(both);
  fits = fits && (r & 0x7FFFu) < (to_half ? 0x7C00u : 0x7F80u);  // finite: neither inf nor NaN
  return r;
}
// The placed pairs of packed_cast (before its rebias), one word a pair of codes: what
// emit_scale_fold multiplies, by a rebiased_scale or, where one does not fit, after the
// rebias by the scale itself.
template <typename To, typename From, int N>
static __device__ __forceinline__ void packed_place(uint32_t* placed, const uint32_t* w) {
  static_assert(N % 2 == 0, "codes go in pairs");
  constexpr int E = detail::lowp_traits<From>::e, M = detail::lowp_traits<From>::m;
  constexpr int Mantissa = detail::is_same<To, half>() ? 10 : 7;
#pragma unroll
  for (int z = 0; z < N; z += 2) placed[z / 2] = vec4::placed_pair_at<E, M, Mantissa>(w, z);
}
// packed_cast's rebias of one placed pair
template <typename To, typename From>
static __device__ __forceinline__ uint32_t rebias_placed(uint32_t placed) {
  constexpr int E = detail::lowp_traits<From>::e;
  if constexpr (detail::is_same<To, half>()) return vec4::rebias_half<E>(placed);
  else return vec4::rebias_bf16<E>(placed);
}
// a pair times {s, s}, as mul2 multiplies (bfloat16: the -0 addend keeps the sign of a
// zero product): with a rebiased_scale, one rounding of code * scale
template <typename To>
static __device__ __forceinline__ uint32_t times_pair(uint32_t pair, uint32_t s2) {
  return f16ops::word<f16ops::kMul, To>(pair, s2);
}
template <typename To>
static __device__ __forceinline__ uint32_t splat_pair(To s) {
  return vec4::splat16(s.bits);
}

}  // namespace tilus

#endif  // TILUS_DEVICE_LOWP_VEC_CUH
