// Kernel 04 (tiled_unrolled): the source study's tiled kernel (kernel 03) with an explicit #pragma unroll on the inner loop, the
// A100 post's step. Static shared memory and a compile-time trip count fold the offsets into immediates.
#pragma once

template <typename T, typename Acc, int BLOCK>
__device__ void tiled_unrolled_matmul(const T* A, const T* B, Acc* C, int m, int n, int k)
{
    static_assert(BLOCK >= 1 && BLOCK <= 32, "BLOCK x BLOCK threads must fit in one block (<= 1024)");
    // One pair of arrays per template instance, so different T and BLOCK don't clash.
    __shared__ T As[BLOCK][BLOCK];
    __shared__ T Bs[BLOCK][BLOCK];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * BLOCK + ty;
    const int col = blockIdx.x * BLOCK + tx;

    Acc sum = 0;
    for (int t = 0; t < k; t += BLOCK) {
        // Zero-fill past the edges so the unrolled loop needs no bounds checks.
        As[ty][tx] = (row < m && t + tx < k) ? A[static_cast<size_t>(row) * k + t + tx] : T(0);
        Bs[ty][tx] = (t + ty < k && col < n) ? B[static_cast<size_t>(t + ty) * n + col] : T(0);
        __syncthreads();

#pragma unroll
        for (int i = 0; i < BLOCK; ++i)
            sum += static_cast<Acc>(As[ty][i]) * static_cast<Acc>(Bs[i][tx]);
        __syncthreads();
    }
    if (row < m && col < n) C[static_cast<size_t>(row) * n + col] = sum;
}
