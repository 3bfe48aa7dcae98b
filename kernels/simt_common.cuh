// Helpers shared by the CUDA-core and mma.sync kernels (5, 9, 10): 16-byte vectors, alignment, cp.async
// (sm_80+), and the grouped tile order (which kernel 8's persistent loop uses too). Hopper's TMA and wgmma
// helpers are in hopper.cuh.
#pragma once

#include <stdint.h>

namespace simt_common {

__device__ __forceinline__ bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

__device__ __forceinline__ uint32_t smem_addr(const void* p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte vector of T and how to spill it into / gather it from an array.
template <typename T> struct Vec;
template <> struct Vec<float> {
    using type = float4;
    __device__ static void get(const type& v, float* d) { d[0] = v.x; d[1] = v.y; d[2] = v.z; d[3] = v.w; }
    __device__ static type make(const float* s) { return make_float4(s[0], s[1], s[2], s[3]); }
};
template <> struct Vec<double> {
    using type = double2;
    __device__ static void get(const type& v, double* d) { d[0] = v.x; d[1] = v.y; }
    __device__ static type make(const double* s) { return make_double2(s[0], s[1]); }
};
template <> struct Vec<int> {
    using type = int4;
    __device__ static void get(const type& v, int* d) { d[0] = v.x; d[1] = v.y; d[2] = v.z; d[3] = v.w; }
    __device__ static type make(const int* s) { return make_int4(s[0], s[1], s[2], s[3]); }
};

// Copy BYTES (4, 8 or 16) from global to shared without passing through registers; only the first src_bytes
// are read and the rest is zero-filled, which is how loads past the matrix edges become zeros.
template <int BYTES>
__device__ __forceinline__ void cp_async(void* dst, const void* src, int src_bytes)
{
    if constexpr (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes)
                     : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_addr(dst)), "l"(src), "n"(BYTES),
                     "r"(src_bytes)
                     : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// Tile t of a rows x cols grid of tiles, in groups of GROUP tile-rows: consecutive t walk down a group's rows
// first, so the tiles in flight at one time cover a compact patch of C and reuse each other's A and B panels
// from L2.
template <int GROUP>
__device__ __forceinline__ void grouped_tile(int t, int rows, int cols, int& tm, int& tn)
{
    const int per_group = GROUP * cols;
    const int group = t / per_group;
    const int first = group * GROUP;
    const int size = min(rows - first, GROUP);
    const int in = t - group * per_group;
    tm = first + in % size;
    tn = in / size;
}

// The same order over the blocks of a 2-D grid, one tile per block.
template <int GROUP = 8>
__device__ __forceinline__ void grouped_block_tile(int& tm, int& tn)
{
    const int gn = gridDim.x, gm = gridDim.y;
    grouped_tile<GROUP>(blockIdx.y * gn + blockIdx.x, gm, gn, tm, tn);
}

}  // namespace simt_common
