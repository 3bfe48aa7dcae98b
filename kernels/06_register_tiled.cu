// Kernel 06 (register_tiled): 2D block tiling with register blocking (SIMT, float32/float64).
// A block of 256 threads computes a 128x128 tile of C, stepping through k in slices of BK = 8. Each thread
// keeps an 8x8 sub-tile of C in registers and, per k step, reads 8 values of A and 8 of B from shared memory
// for 64 FMAs. The A slice is stored transposed (k-major) so a thread's 8 A values are contiguous and come
// in as 16-byte vector reads. Shared memory is double-buffered: the next slice is fetched from global into
// registers while the current one is being multiplied, so one __syncthreads() per step suffices.
// Any m, n, k: loads past the edges are zero-filled, stores are guarded. Block tile, k slice and thread count are
// the registry's (core/geometry.py, REGISTER_TILED: -DREGISTER_TILED_BM, _BN, _BK, _THREADS), the thread's 8x8
// sub-tile the kernel's own.
#pragma once

#include <stdint.h>

#include "simt_common.cuh"

namespace register_tiled {

constexpr int BM = REGISTER_TILED_BM, BN = REGISTER_TILED_BN, BK = REGISTER_TILED_BK;  // block tile of C, k slice
constexpr int TM = 8, TN = 8;  // per-thread tile of C
constexpr int THREADS = REGISTER_TILED_THREADS;
constexpr int A_PAD = 4;  // keeps the transposed stores into As free of bank conflicts

static_assert(THREADS == (BM / TM) * (BN / TN), "the registry's thread count is not one thread per 8x8 sub-tile");
static_assert(BM * BK == THREADS * 4 && BK * BN == THREADS * 4, "each thread loads 4 elements of A and of B");

using simt_common::aligned16;
using simt_common::Vec;  // 16-byte vectors of float, double and int

// Load 4 consecutive elements of which the first `valid` are in bounds (valid <= 0: none), zeros elsewhere.
// vec_ok says the row length and base pointer allow 16-byte loads, so src is aligned whenever valid >= 4.
template <typename T>
__device__ __forceinline__ void load4(T (&dst)[4], const T* src, int valid, bool vec_ok)
{
    constexpr int V = 16 / sizeof(T);
    if (vec_ok && valid >= 4) {
#pragma unroll
        for (int i = 0; i < 4; i += V) Vec<T>::get(*reinterpret_cast<const typename Vec<T>::type*>(src + i), dst + i);
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) dst[i] = i < valid ? src[i] : T(0);
    }
}

}  // namespace register_tiled

template <typename T, typename Acc>
__device__ void register_tiled_matmul(const T* A, const T* B, Acc* C, int m, int n, int k)
{
    using namespace register_tiled;
    static_assert(sizeof(T) == sizeof(Acc), "vector stores assume C has A's element size");
    constexpr int V = 16 / sizeof(T);  // elements per 16-byte vector: 4 floats, 2 doubles
    constexpr int G = TM / V;          // vector groups per thread row/column of its 8x8 sub-tile
    using VecT = typename Vec<T>::type;

    __shared__ __align__(16) T As[2][BK][BM + A_PAD];  // transposed: As[kk][row]
    __shared__ __align__(16) T Bs[2][BK][BN];

    const int tid = threadIdx.x;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;

    // Loader mapping: each thread fetches 4 consecutive elements of one row of the A slice (128 x 8) and of
    // the B slice (8 x 128). Neighbouring threads take neighbouring chunks, so global reads coalesce.
    const int a_row = tid / (BK / 4), a_col = (tid % (BK / 4)) * 4;
    const int b_row = tid / (BN / 4), b_col = (tid % (BN / 4)) * 4;
    const bool a_vec = (k % V == 0) && aligned16(A);
    const bool b_vec = (n % V == 0) && aligned16(B);
    const bool c_vec = (n % V == 0) && aligned16(C);
    const bool a_row_in = bm + a_row < m;
    const T* a_src = A + static_cast<size_t>(a_row_in ? bm + a_row : 0) * k + a_col;
    const T* b_src = B + static_cast<size_t>(b_row) * n + bn + b_col;
    const int b_cols_left = n - (bn + b_col);

    // Compute mapping: a 16x16 grid of threads. A thread's 8 rows are G groups of V consecutive rows spaced
    // 16*V apart (likewise its columns), so at each vector read the 16 threads of a half-warp touch 16
    // consecutive vectors: no bank conflicts. Rows/columns of thread (ty, tx): g*16*V + ty*V + v.
    const int ty = tid / (BN / TN), tx = tid % (BN / TN);

    T a_ld[4], b_ld[4];
    auto fetch = [&](int k0) {
        load4(a_ld, a_src + k0, a_row_in ? k - (k0 + a_col) : 0, a_vec);
        load4(b_ld, b_src + static_cast<size_t>(k0) * n, k0 + b_row < k ? b_cols_left : 0, b_vec);
    };
    auto stash = [&](int buf) {
#pragma unroll
        for (int i = 0; i < 4; ++i) As[buf][a_col + i][a_row] = a_ld[i];
#pragma unroll
        for (int i = 0; i < 4; i += V) *reinterpret_cast<VecT*>(&Bs[buf][b_row][b_col + i]) = Vec<T>::make(b_ld + i);
    };

    Acc acc[TM][TN] = {};
    const int steps = (k + BK - 1) / BK;
    fetch(0);
    stash(0);
    __syncthreads();

    for (int s = 0; s < steps; ++s) {
        const int cur = s & 1;
        // Issue the next slice's global loads now; they land while we compute on the current slice.
        if (s + 1 < steps) fetch((s + 1) * BK);

#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            T a[TM], b[TN];
#pragma unroll
            for (int g = 0; g < G; ++g) {
                Vec<T>::get(*reinterpret_cast<const VecT*>(&As[cur][kk][g * 16 * V + ty * V]), a + g * V);
                Vec<T>::get(*reinterpret_cast<const VecT*>(&Bs[cur][kk][g * 16 * V + tx * V]), b + g * V);
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += static_cast<Acc>(a[i]) * static_cast<Acc>(b[j]);
        }

        // The other buffer was last read in step s-1, and everyone has passed that step's barrier.
        if (s + 1 < steps) stash(cur ^ 1);
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = bm + (i / V) * 16 * V + ty * V + i % V;
        if (row >= m) continue;
        Acc* c_row = C + static_cast<size_t>(row) * n;
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const int col = bn + g * 16 * V + tx * V;
            if (c_vec && col + V <= n) {
                *reinterpret_cast<typename Vec<Acc>::type*>(c_row + col) = Vec<Acc>::make(&acc[i][g * V]);
            } else {
#pragma unroll
                for (int v = 0; v < V; ++v)
                    if (col + v < n) c_row[col + v] = acc[i][g * V + v];
            }
        }
    }
}
