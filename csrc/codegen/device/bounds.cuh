// Bounds checking of global accesses (tilus.option.debug.bounds_check): included only by
// kernels built with CodegenOptions::bounds_check, which take two extra parameters per
// kernel: the byte size of every pointer argument's tensor, and a BoundsRecord in device
// memory that the host reads after the launch (python/tilus/runtime/bounds.py).
//
// An access at byte offset x from its tensor's start, of n bytes, is allowed when
// 0 <= x <= size - n. The emitter hoists `size - n` per view and access width, so an
// access costs one subtraction folded into its address and one compare; a failing
// access is skipped (a load gives 0) and the first failure of the launch is recorded.
#ifndef TILUS_DEVICE_BOUNDS_CUH
#define TILUS_DEVICE_BOUNDS_CUH

#include "tilus/types.cuh"

namespace tilus {

// Layout shared with the host (python/tilus/runtime/bounds.py reads it as 16 int64).
struct BoundsRecord {
  unsigned long long claimed;  // 0: no violation yet; 1: the fields below are written
  long long site;              // index into the kernel's bounds sites (GeneratedKernel)
  long long block[3];          // the script's blockIdx (after any launch remapping)
  long long thread;            // threadIdx.x
  long long byte_offset;       // from the start of the tensor passed, in bytes
  long long rank;              // how many of index[] are set
  long long index[4];          // the view index of the element (rank <= 4)
  long long done;              // set last: the record is complete
  long long unused[3];
};

// True when an access at byte offset `x` from its tensor's start lies inside it;
// `limit` is the tensor's size minus the access's width (negative: nothing fits).
__device__ __forceinline__ bool bounds_ok(long long x, long long limit) {
  return limit >= 0 && (unsigned long long)x <= (unsigned long long)limit;
}

// The cold path: the first thread of the launch that fails claims the record. Inlined,
// so that a checked wgmma loop holds no call (an ABI call saves live registers, and
// accumulators the tensor cores are still writing must not be touched).
__device__ __forceinline__ void bounds_report(BoundsRecord* r, int site, int bx, int by, long long x,
                                           int rank, long long i0, long long i1, long long i2,
                                           long long i3) {
  if (atomicCAS(&r->claimed, 0ull, 1ull) != 0ull) return;
  r->site = site;
  r->block[0] = bx;
  r->block[1] = by;
  r->block[2] = blockIdx.z;
  r->thread = threadIdx.x;
  r->byte_offset = x;
  r->rank = rank;
  r->index[0] = i0;
  r->index[1] = i1;
  r->index[2] = i2;
  r->index[3] = i3;
  __threadfence();
  r->done = 1;
}

// One element `p[off]` of a global tensor in a scalar expression (`g[i, j]`, `.item()`).
template <typename T>
__device__ __forceinline__ T bounds_item(const T* p, long long off, long long base, long long limit,
                                         BoundsRecord* r, int site, int bx, int by, int rank,
                                         long long i0, long long i1, long long i2, long long i3) {
  const long long x = off * (long long)sizeof(T) + base;
  if (bounds_ok(x, limit)) return p[off];
  bounds_report(r, site, bx, by, x, rank, i0, i1, i2, i3);
  return T{};  // all bits zero: 0 of every tilus type
}

}  // namespace tilus

#endif  // TILUS_DEVICE_BOUNDS_CUH
