// Kernel 01 (naive): one thread per element of C, straight from global memory.
#pragma once

template <typename T, typename Acc>
__device__ void naive_matmul(const T* A, const T* B, Acc* C, int m, int n, int k)
{
    // x walks the columns: neighbouring threads of a warp read neighbouring elements of B's row
    // and write neighbouring elements of C (coalesced); A[row][i] is the same address for them (broadcast).
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;

    // 64-bit row offsets so matrices past 2^31 elements still index correctly.
    const T* a = A + static_cast<size_t>(row) * k;
    const T* b = B + col;
    Acc sum = 0;
    for (int i = 0; i < k; ++i)
        sum += static_cast<Acc>(a[i]) * static_cast<Acc>(b[static_cast<size_t>(i) * n]);
    C[static_cast<size_t>(row) * n + col] = sum;
}
