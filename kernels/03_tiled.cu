// Kernel 03 (tiled): the source study's tiled kernel. BLOCK x BLOCK tiles of A and B are staged in shared memory,
// declared As[BLOCK][BLOCK] with BLOCK a compile-time constant, as in all four sources; the inner loop is left
// to the compiler (which may unroll it: its trip count is a constant). Kernel 04 adds an explicit #pragma unroll.
#pragma once

template <typename T, typename Acc, int BLOCK>
__device__ void tiled_matmul(const T* A, const T* B, Acc* C, int m, int n, int k)
{
    static_assert(BLOCK >= 1 && BLOCK <= 32, "BLOCK x BLOCK threads must fit in one block (<= 1024)");
    __shared__ T As[BLOCK][BLOCK];
    __shared__ T Bs[BLOCK][BLOCK];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * BLOCK + ty;
    const int col = blockIdx.x * BLOCK + tx;

    Acc sum = 0;
    for (int t = 0; t < k; t += BLOCK) {
        // Out-of-range elements are loaded as zero so they add nothing (the sources' boundary handling); no
        // thread returns early because every thread must reach __syncthreads() and help load the tiles.
        As[ty][tx] = (row < m && t + tx < k) ? A[static_cast<size_t>(row) * k + t + tx] : T(0);
        Bs[ty][tx] = (t + ty < k && col < n) ? B[static_cast<size_t>(t + ty) * n + col] : T(0);
        __syncthreads();

        for (int i = 0; i < BLOCK; ++i)
            sum += static_cast<Acc>(As[ty][i]) * static_cast<Acc>(Bs[i][tx]);
        // Nobody may overwrite the tiles for the next step while others still read them.
        __syncthreads();
    }
    if (row < m && col < n) C[static_cast<size_t>(row) * n + col] = sum;
}
