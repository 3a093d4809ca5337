// The grid sizes a CUDA launch takes, per axis: x up to 2^31 - 1, y and z up to 65535
// (every architecture tilus targets). The interpreter refuses larger grids at the
// script line as the GPU would refuse them, so a program that runs on the CPU launches.
#pragma once

#include <cstdint>

namespace tilus {

constexpr int64_t kMaxGridX = (int64_t(1) << 31) - 1;
constexpr int64_t kMaxGridYZ = 65535;

constexpr int64_t max_grid_size(int axis) { return axis == 0 ? kMaxGridX : kMaxGridYZ; }

}  // namespace tilus
