// Kernel 02 (tiled_runtime_block), the run-time variant of kernel 03: BLOCK x BLOCK tiles of A and B staged in shared memory, but the tile size is
// blockDim.x, read at run time, and the inner loop is kept rolled. It shows what the source study's compile-time
// BLOCK (kernel 03, tiled) buys: the same algorithm with loop overhead and computed shared-memory offsets.
#pragma once

template <typename T, typename Acc>
__device__ void tiled_runtime_block_matmul(const T* A, const T* B, Acc* C, int m, int n, int k)
{
    // Dynamic shared memory is one untyped buffer per kernel: declaring it as T[] would clash between
    // instances with different T, so take raw bytes and cast. The launch passes 2 * BLOCK^2 * sizeof(T).
    extern __shared__ __align__(16) unsigned char smem[];
    const int bs = blockDim.x;
    T* As = reinterpret_cast<T*>(smem);
    T* Bs = As + bs * bs;

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * bs + ty;
    const int col = blockIdx.x * bs + tx;

    Acc sum = 0;
    for (int t = 0; t < k; t += bs) {
        // Out-of-range elements are loaded as zero so they add nothing; no thread returns early because
        // every thread must reach __syncthreads() and help load the tiles.
        As[ty * bs + tx] = (row < m && t + tx < k) ? A[static_cast<size_t>(row) * k + t + tx] : T(0);
        Bs[ty * bs + tx] = (t + ty < k && col < n) ? B[static_cast<size_t>(t + ty) * n + col] : T(0);
        __syncthreads();

#pragma unroll 1
        for (int i = 0; i < bs; ++i)
            sum += static_cast<Acc>(As[ty * bs + i]) * static_cast<Acc>(Bs[i * bs + tx]);
        // Nobody may overwrite the tiles for the next step while others still read them.
        __syncthreads();
    }
    if (row < m && col < n) C[static_cast<size_t>(row) * n + col] = sum;
}
