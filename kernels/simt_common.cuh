// Helpers shared by the CUDA-core and mma.sync kernels 06 (register_tiled), 07 (warptiled), 08 (dmma), 10
// (mma_async_copy) and 20 (mma_3xtf32), and by split_k.cuh: 16-byte vectors and alignment, cp.async (sm_80+) and the
// multi-stage pipeline of 07, 08 and 10, the mma.sync accumulator stores of 08 and 10, ldmatrix (10 and 20, and the
// byte operands of the warp-specialised Hopper kernels), and the grouped tile order (07, 08, 10, and the
// warp-specialised kernels' persistent tile schedule). Hopper's TMA and wgmma helpers are in hopper.cuh.
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
// cp_async<16> of a whole chunk that the L2 should not keep, to the shared address `dst`: under an L2 evict_first
// policy (createpolicy.fractional, every line), with the L2 fetching the 256 bytes around it at once.
__device__ __forceinline__ void cp_async_16_evict_first(uint32_t dst, const void* src)
{
    asm volatile("{\n .reg .b64 policy;\n createpolicy.fractional.L2::evict_first.b64 policy, 1.0;\n"
                 " cp.async.cg.shared.global.L2::cache_hint.L2::256B [%0], [%1], 16, policy;\n}\n"
                 ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// The cp.async pipeline of kernels 07 (its default loop), 08 and 10: S stages of shared memory, one commit group
// per slice of k, the slice kt + S - 1 fetched while slice kt is multiplied. load_slice(stage, kt) issues a
// slice's copies (any plain shared stores it makes are published by the same barriers).
template <int S, class LoadSlice>
__device__ __forceinline__ void mma_pipeline_prologue(int KT, LoadSlice&& load_slice)
{
    // Slices 0 .. S-2 in flight, one commit group per slice (empty past the end).
#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
        if (s < KT) load_slice(s, s);
        cp_async_commit();
    }
}

// The main loop after the prologue, with fragments double-buffered in registers: KSTEPS mma k steps per slice,
// load_frags(buf, stage, ks) reads k step ks of a stage into register buffer buf while compute(buf ^ 1) runs.
template <int S, int KSTEPS, class LoadSlice, class LoadFrags, class Compute>
__device__ __forceinline__ void mma_pipeline_double_buffered(int KT, LoadSlice&& load_slice, LoadFrags&& load_frags,
                                                             Compute&& compute)
{
    int read_stage = 0, write_stage = S - 1;
    cp_async_wait<S - 2>();
    __syncthreads();
    load_frags(0, 0, 0);
    for (int kt = 0; kt < KT; ++kt) {
#pragma unroll
        for (int s = 0; s < KSTEPS; ++s) {
            if (s == 0) {
                // Refill the stage that slice kt-1 used: all its fragment reads preceded the barrier at the
                // end of slice kt-1.
                if (kt + S - 1 < KT) load_slice(write_stage, kt + S - 1);
                cp_async_commit();
                write_stage = write_stage + 1 == S ? 0 : write_stage + 1;
            }
            if (s == KSTEPS - 1) {
                cp_async_wait<S - 2>();  // slice kt+1 has landed (own copies) ...
                __syncthreads();         // ... and everyone's
                read_stage = read_stage + 1 == S ? 0 : read_stage + 1;
            }
            load_frags((s + 1) % 2, read_stage, (s + 1) % KSTEPS);
            compute(s % 2);
        }
    }
}

template <typename T> struct Vec2;
template <> struct Vec2<float> { using type = float2; };
template <> struct Vec2<double> { using type = double2; };

// Stores a warp's mma.sync accumulators, MT x NT tiles of 16 x 8 at rows row0 + 16 i, columns col0 + 8 j of
// row-major C (m x n), in the PTX layout c[v0 + 2*v1] = C[g + 8*v1][2*t + v0] (g = lane / 4, t = lane % 4).
// Each column pair is one 2-vector store where n is even, C aligned and both columns inside; else guarded.
template <int MT, int NT, typename T>
__device__ __forceinline__ void store_mma_tiles(T* C, const T (&acc)[MT][NT][4], int m, int n, int row0, int col0,
                                                int g, int t)
{
    using V2 = typename Vec2<T>::type;
    const bool vec = (n % 2 == 0) && reinterpret_cast<uintptr_t>(C) % sizeof(V2) == 0;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = row0 + i * 16 + g + 8 * h;
            if (row >= m) continue;
            T* c_row = C + static_cast<size_t>(row) * n;
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const int col = col0 + j * 8 + 2 * t;
                if (vec && col + 2 <= n) {
                    *reinterpret_cast<V2*>(c_row + col) = V2{acc[i][j][2 * h], acc[i][j][2 * h + 1]};
                } else {
                    if (col < n) c_row[col] = acc[i][j][2 * h];
                    if (col + 1 < n) c_row[col + 1] = acc[i][j][2 * h + 1];
                }
            }
        }
}

// Four 8x8 matrices of 16-bit elements (8 rows of 16 bytes each) from shared memory (sm_75+): lanes 8j..8j+7 give
// the row addresses of matrix j, and lane l receives in r[j] the 4 bytes of row l/4 of matrix j at byte (l%4)*4. Four
// matrices that are rows 0-7 and 8-15 at bytes 0-15 and 16-31 of a tile's 32-byte k slice give the register fragment
// of an mma.sync A operand (10, 20) and of a wgmma A operand from registers (the byte operands of 15-17).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// The same matrices transposed as they load (ldmatrix .trans): lane l receives in r[j] the 16-bit elements of rows
// 2 (l % 4) and 2 (l % 4) + 1 of matrix j at element l / 4 (bytes 2 (l / 4) and the next of each row's 16), the
// first in the low half.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

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
