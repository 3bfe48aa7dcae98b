// Kernel 05 (wmma): tensor cores through nvcuda::wmma, fp16 in, fp32 accumulate and out.
// Each warp owns one 16x16 tile of C; a block of 4 warps (128 threads) covers a 2x2 arrangement of them,
// a 32x32 tile of C. Works for any m, n, k: a 16x16 operand tile that is not fully in bounds, or that wmma
// cannot read straight from global memory, is staged through shared memory with zero fill. The block tile and
// thread count are the registry's (core/geometry.py, WMMA: -DWMMA_BM, _BN, _BK, _THREADS), the warp tile the
// wmma fragment (m16n16k16).
#pragma once

#include <cuda_fp16.h>
#include <mma.h>
#include <stdint.h>

namespace wmma_kernel {

constexpr int WM = 16, WN = 16, WK = 16;
constexpr int WARPS_M = WMMA_BM / WM, WARPS_N = WMMA_BN / WN;
static_assert(WMMA_BM % WM == 0 && WMMA_BN % WN == 0 && WMMA_BK == WK, "whole fragments per warp, one k step each");
static_assert(WMMA_THREADS == 32 * WARPS_M * WARPS_N, "the registry's thread count is not one warp per 16x16 tile");

// load/store_matrix_sync need a 256-bit aligned pointer and ldm a multiple of 16 bytes.
__device__ __forceinline__ bool wmma_ok(const void* p, int ldm, int elem_bytes)
{
    return (reinterpret_cast<uintptr_t>(p) % 32 == 0) && ((ldm * elem_bytes) % 16 == 0);
}

// Copy a rows x cols (<= 16 x 16) corner of a row-major matrix into a dense 16x16 tile, zeros elsewhere.
// The whole warp shares the work: 256 elements, 8 per lane.
__device__ __forceinline__ void stage_tile(__half* tile, const __half* src, int ld, int rows, int cols, int lane)
{
    for (int i = lane; i < 16 * 16; i += 32) {
        const int r = i / 16, c = i % 16;
        tile[i] = (r < rows && c < cols) ? src[static_cast<size_t>(r) * ld + c] : __float2half(0.0f);
    }
}

}  // namespace wmma_kernel

__device__ void wmma_matmul(const __half* A, const __half* B, float* C, int m, int n, int k)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    using namespace nvcuda;
    using namespace wmma_kernel;

    // Every warp stages its own tiles, so warps synchronise only with themselves (__syncwarp) and a warp
    // whose tile lies wholly outside C can leave at once.
    __shared__ __align__(32) __half a_stage[WARPS_M * WARPS_N][WM * WK];
    __shared__ __align__(32) __half b_stage[WARPS_M * WARPS_N][WK * WN];
    __shared__ __align__(32) float c_stage[WARPS_M * WARPS_N][WM * WN];

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int row0 = blockIdx.y * (WARPS_M * WM) + (warp / WARPS_N) * WM;
    const int col0 = blockIdx.x * (WARPS_N * WN) + (warp % WARPS_N) * WN;
    if (row0 >= m || col0 >= n) return;  // warp-uniform, and nothing below waits on other warps

    const int rows = min(WM, m - row0);  // rows and columns of this tile inside C
    const int cols = min(WN, n - col0);

    wmma::fragment<wmma::matrix_a, WM, WN, WK, __half, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, WM, WN, WK, __half, wmma::row_major> b_frag;
    wmma::fragment<wmma::accumulator, WM, WN, WK, float> c_frag;
    wmma::fill_fragment(c_frag, 0.0f);

    const __half* a_tile = A + static_cast<size_t>(row0) * k;  // A[row0][0]
    const __half* b_tile = B + col0;                           // B[0][col0]
    for (int k0 = 0; k0 < k; k0 += WK, a_tile += WK, b_tile += static_cast<size_t>(WK) * n) {
        const int depth = min(WK, k - k0);
        // All conditions are the same for every lane, so the collective loads below are never divergent.
        if (rows == WM && depth == WK && wmma_ok(a_tile, k, sizeof(__half))) {
            wmma::load_matrix_sync(a_frag, a_tile, k);
        } else {
            stage_tile(a_stage[warp], a_tile, k, rows, depth, lane);
            __syncwarp();
            wmma::load_matrix_sync(a_frag, a_stage[warp], WK);
        }
        if (depth == WK && cols == WN && wmma_ok(b_tile, n, sizeof(__half))) {
            wmma::load_matrix_sync(b_frag, b_tile, n);
        } else {
            stage_tile(b_stage[warp], b_tile, n, depth, cols, lane);
            __syncwarp();
            wmma::load_matrix_sync(b_frag, b_stage[warp], WN);
        }
        wmma::mma_sync(c_frag, a_frag, b_frag, c_frag);
        // The next step may overwrite the staging tiles; every lane must be done reading them first.
        __syncwarp();
    }

    float* c_tile = C + static_cast<size_t>(row0) * n + col0;
    if (rows == WM && cols == WN && wmma_ok(c_tile, n, sizeof(float))) {
        wmma::store_matrix_sync(c_tile, c_frag, n, wmma::mem_row_major);
    } else {
        // Edge tile: the fragment's layout is opaque, so land it in shared memory and copy out what fits.
        wmma::store_matrix_sync(c_stage[warp], c_frag, WN, wmma::mem_row_major);
        __syncwarp();
        for (int i = lane; i < WM * WN; i += 32) {
            const int r = i / WN, c = i % WN;
            if (r < rows && c < cols) c_tile[static_cast<size_t>(r) * n + c] = c_stage[warp][i];
        }
    }
#elif defined(__CUDA_ARCH__)
    // wmma needs compute capability 7.0; fail loudly rather than leave C untouched.
    __trap();
#endif
}
