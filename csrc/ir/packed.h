// Packed sub-byte storage: how tensors of a type narrower than a byte (int4b,
// float6_e3m2 ...) lie in global and shared memory, as Tilus 0.2 packs them. The
// elements form one little-endian bit stream: element i (its offset from the start of
// the tensor, counted in elements) occupies bits [i*b, (i+1)*b), bit j of the stream
// being bit j%8 of byte j/8. A 3-, 5-, 6- or 7-bit element may straddle two bytes.
// Register tiles still hold one element per byte (the code in the low bits).
#ifndef TILUS_IR_PACKED_H
#define TILUS_IR_PACKED_H

#include <cstdint>

#include "ir/dtype.h"

namespace tilus {

// Whether tensors of `t` in memory are packed several elements to a byte.
inline bool is_packed(DataType t) { return !t.is_pointer && t.bits() < 8; }

// The code of the element whose first bit is `bit`, read from `base` (1 or 2 bytes).
inline uint8_t packed_get(const uint8_t* base, int64_t bit, int bits) {
  const uint8_t* p = base + (bit >> 3);
  const int shift = static_cast<int>(bit & 7);
  unsigned v = p[0];
  if (shift + bits > 8) v |= static_cast<unsigned>(p[1]) << 8;
  return static_cast<uint8_t>((v >> shift) & ((1u << bits) - 1u));
}

// Writes `code` (its low `bits` bits) as the element whose first bit is `bit`,
// leaving the neighbouring elements' bits as they are.
inline void packed_set(uint8_t* base, int64_t bit, int bits, uint8_t code) {
  uint8_t* p = base + (bit >> 3);
  const int shift = static_cast<int>(bit & 7);
  const unsigned mask = ((1u << bits) - 1u) << shift;
  const unsigned v = (static_cast<unsigned>(code) << shift) & mask;
  p[0] = static_cast<uint8_t>((p[0] & ~mask) | v);
  if (shift + bits > 8) p[1] = static_cast<uint8_t>((p[1] & ~(mask >> 8)) | (v >> 8));
}

// The bytes bits [first_bit, end_bit) touch.
inline int64_t packed_first_byte(int64_t first_bit) { return first_bit >> 3; }
inline int64_t packed_end_byte(int64_t end_bit) { return (end_bit + 7) >> 3; }

}  // namespace tilus

#endif  // TILUS_IR_PACKED_H
