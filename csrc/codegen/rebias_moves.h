// Where the rebias of small-float codes can leave their conversion for a float32 scale
// that multiplies the dot product they feed.
//
// A finite small float (float6_e3m2, float4_e2m1, ...) converts to float16 by placing
// its bits at float16's positions and multiplying by 2^(15 - bias) (tilus::packed_cast).
// When the converted tile's one reader is a dot that starts from zeros, and the dot's
// one reader multiplies it by a float32 tile (the decode kernels' `part * scale`), the
// multiplication by 2^(15 - bias) can move to that tile: the placed codes are the values
// times 2^-(15 - bias) exactly, every product of the dot is scaled alike and stays far
// from float32's subnormals, so the dot's sum is the true one times 2^-(15 - bias)
// exactly, and (scale * 2^(15 - bias)) * it is one rounding of scale * the true sum: bit
// for bit the unmoved program. One multiplication a pair of codes fewer.
#pragma once
#include <unordered_map>

#include "ir/stmt.h"

namespace tilus {

struct RebiasMove {
  const Instruction* mul;  // the float32 multiplication that takes the factor
  int scale_input;         // which of its inputs (0, 1) is the scale, multiplied by it
  int exponent;            // the factor is 2^exponent
};

// The casts (keys) whose rebias can move, found over the whole kernel body: the cast,
// the dot and the multiplication in one statement list, in that order, each tensor
// between them written once and read once (by the next of the three), the dot's
// accumulator a fresh zero tile that only it reads, the scale a cast from float16 (so
// that scale * 2^exponent is exact in float32).
std::unordered_map<const Instruction*, RebiasMove> find_rebias_moves(const Stmt& body);

}  // namespace tilus
