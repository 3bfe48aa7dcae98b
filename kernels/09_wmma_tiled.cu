// Kernel 09 (wmma_tiled): tensor cores with block tiling, fp16 in, fp32 accumulate and out.
// A block of 8 warps computes a 128x128 tile of C; warps sit 2 (rows) x 4 (columns) and each owns a 64x32
// region, 4x2 accumulator fragments. Each k step of BK = 32 stages a 128x32 slice of A and a 32x128 slice of
// B in shared memory; every fragment loaded from there feeds 2 (A) or 4 (B) mma_syncs instead of one.
// Block tile, k slice and thread count are the registry's (core/geometry.py, WMMA_TILED: -DWMMA_TILED_BM, _BN,
// _BK, _THREADS), the warp arrangement the kernel's own.
// Shared memory is double-buffered with the next slice prefetched into registers during the MMAs.
// Any m, n, k: loads past the edges are zero-filled, edge tiles of C are stored through shared memory.
#pragma once

#include <cuda_fp16.h>
#include <mma.h>
#include <stdint.h>

namespace wmma_tiled {

constexpr int BM = WMMA_TILED_BM, BN = WMMA_TILED_BN, BK = WMMA_TILED_BK;
constexpr int WARPS_M = 2, WARPS_N = 4, THREADS = WMMA_TILED_THREADS;
constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;  // 64 x 32 per warp
constexpr int FM = WTM / 16, FN = WTN / 16;            // 4 x 2 fragments per warp
// Rows padded by 8 halves (16 bytes): the 8 rows an ldmatrix phase reads then start in different banks.
// Pads keep ldm a multiple of 8 halves and every fragment pointer 32-byte aligned, as wmma requires.
constexpr int A_LD = BK + 8, B_LD = BN + 8;
constexpr int A_TILE = BM * A_LD, B_TILE = BK * B_LD;  // halves per buffer
constexpr int SMEM_BYTES = 2 * (A_TILE + B_TILE) * 2;  // double-buffered: 37,888 bytes
constexpr int LOADS = (BM * BK / 8) / THREADS;         // 16-byte chunks per thread, per operand

static_assert(THREADS == 32 * WARPS_M * WARPS_N, "the registry's thread count is not the warp arrangement's");
static_assert(WTM % 16 == 0 && WTN % 16 == 0 && BK % 16 == 0, "whole 16 x 16 x 16 fragments");
static_assert((BM * BK / 8) % THREADS == 0 && BM * BK == BK * BN, "A and B slices split evenly");
static_assert(SMEM_BYTES <= 48 * 1024, "static shared memory is limited to 48 KB");
static_assert(SMEM_BYTES >= THREADS / 32 * 16 * 16 * 4, "epilogue staging reuses the operand buffers");

// 8 consecutive halves of which the first `valid` are in bounds, as raw bits; zero bits are +0.0.
__device__ __forceinline__ uint4 load8(const __half* src, int valid, bool vec_ok)
{
    if (vec_ok && valid >= 8) return *reinterpret_cast<const uint4*>(src);
    const unsigned short* s = reinterpret_cast<const unsigned short*>(src);
    unsigned int h[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) h[i] = i < valid ? s[i] : 0u;
    return make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
}

}  // namespace wmma_tiled

__device__ void wmma_tiled_matmul(const __half* A, const __half* B, float* C, int m, int n, int k)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    using namespace nvcuda;
    using namespace wmma_tiled;

    __shared__ __align__(128) unsigned char smem[SMEM_BYTES];
    __half* As = reinterpret_cast<__half*>(smem);  // [2][BM][A_LD]
    __half* Bs = As + 2 * A_TILE;                  // [2][BK][B_LD]

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;

    // 16-byte loads need the row length to keep every row 16-byte aligned.
    const bool a_vec = (k % 8 == 0) && reinterpret_cast<uintptr_t>(A) % 16 == 0;
    const bool b_vec = (n % 8 == 0) && reinterpret_cast<uintptr_t>(B) % 16 == 0;

    // Loader mapping: chunk c = tid + i*THREADS of 8 halves; neighbouring threads take neighbouring chunks
    // of a row, so global reads coalesce.
    int a_row[LOADS], a_col[LOADS], b_row[LOADS], b_col[LOADS];
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
        const int c = tid + i * THREADS;
        a_row[i] = c / (BK / 8), a_col[i] = (c % (BK / 8)) * 8;
        b_row[i] = c / (BN / 8), b_col[i] = (c % (BN / 8)) * 8;
    }

    uint4 a_ld[LOADS], b_ld[LOADS];
    auto fetch = [&](int k0) {
#pragma unroll
        for (int i = 0; i < LOADS; ++i) {
            const int r = bm + a_row[i], c = k0 + a_col[i];
            a_ld[i] = r < m ? load8(A + static_cast<size_t>(r) * k + c, k - c, a_vec) : make_uint4(0, 0, 0, 0);
            const int kr = k0 + b_row[i], bc = bn + b_col[i];
            b_ld[i] = kr < k ? load8(B + static_cast<size_t>(kr) * n + bc, n - bc, b_vec) : make_uint4(0, 0, 0, 0);
        }
    };
    auto stash = [&](int buf) {
#pragma unroll
        for (int i = 0; i < LOADS; ++i) {
            *reinterpret_cast<uint4*>(As + buf * A_TILE + a_row[i] * A_LD + a_col[i]) = a_ld[i];
            *reinterpret_cast<uint4*>(Bs + buf * B_TILE + b_row[i] * B_LD + b_col[i]) = b_ld[i];
        }
    };

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    const int steps = (k + BK - 1) / BK;
    fetch(0);
    stash(0);
    __syncthreads();

    for (int s = 0; s < steps; ++s) {
        const int cur = s & 1;
        if (s + 1 < steps) fetch((s + 1) * BK);  // in flight during the MMAs below

        const __half* a_s = As + cur * A_TILE + (warp_m * WTM) * A_LD;
        const __half* b_s = Bs + cur * B_TILE + warp_n * WTN;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a_frag[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b_frag[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(a_frag[i], a_s + i * 16 * A_LD + kk, A_LD);
#pragma unroll
            for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(b_frag[j], b_s + kk * B_LD + j * 16, B_LD);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
        }

        // The other buffer was last read in step s-1, and everyone has passed that step's barrier.
        if (s + 1 < steps) stash(cur ^ 1);
        __syncthreads();
    }

    // Epilogue. The last barrier above means no warp still reads the operand buffers, so each warp may reuse
    // 1 KB of them to stage edge fragments.
    float* stage = reinterpret_cast<float*>(smem) + warp * 16 * 16;
    const bool c_vec = (n % 4 == 0) && reinterpret_cast<uintptr_t>(C) % 32 == 0;
#pragma unroll
    for (int i = 0; i < FM; ++i) {
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            const int row0 = bm + warp_m * WTM + i * 16, col0 = bn + warp_n * WTN + j * 16;
            if (row0 >= m || col0 >= n) continue;  // warp-uniform
            float* c_tile = C + static_cast<size_t>(row0) * n + col0;
            // row0 and col0 are multiples of 16, so with n % 4 == 0 the tile pointer stays 32-byte aligned.
            if (c_vec && row0 + 16 <= m && col0 + 16 <= n) {
                wmma::store_matrix_sync(c_tile, acc[i][j], n, wmma::mem_row_major);
            } else {
                wmma::store_matrix_sync(stage, acc[i][j], 16, wmma::mem_row_major);
                __syncwarp();
                for (int e = lane; e < 16 * 16; e += 32) {
                    const int r = e / 16, c = e % 16;
                    if (row0 + r < m && col0 + c < n) c_tile[static_cast<size_t>(r) * n + c] = stage[e];
                }
                __syncwarp();  // before the next fragment overwrites the staging tile
            }
        }
    }
#elif defined(__CUDA_ARCH__)
    __trap();  // wmma needs compute capability 7.0; fail loudly rather than leave C untouched
#endif
}
