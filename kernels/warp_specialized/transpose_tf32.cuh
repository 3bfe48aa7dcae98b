// The tf32 rung's pre-pass (kernels/13_wgmma_tf32.cu, method wgmma_tf32): Bt = B^T, written on every launch and
// timed with the GEMM. wgmma reads 32-bit operands only K-major, and the study's B is k x n row-major (N-major), so
// the GEMM's second tensor map reads Bt (n x k). It lets its dependent (the GEMM, launched with programmatic stream
// serialisation) launch at once, so that the GEMM's launch and set-up run under it; the GEMM waits for it to complete
// before it reads Bt (kernel.cuh). It is itself launched in stream order, after the previous GEMM (which reads Bt)
// has ended; its wait for the previous grid guards Bt where it is launched as a dependent too. On an H200, cuBLAS's
// geam, which did this before, moved the bytes at the same rate (3.4-4.3 TB/s at 2048^2 to 8192^2, 6-7 us at 1024^2
// and below), but the GEMM launched only once it had ended.
//
// Host contract: grid (cdiv(n, TILE), cdiv(k, TILE), 1), block (THREADS, 1, 1), no dynamic shared memory, launched
// after the previous GEMM in stream order; Bt with row pitch bt_pitch(k) floats (k rounded up to 16
// bytes: the tensor map's row stride), whose columns past k are not written (the tensor map's extent is k: TMA
// fills past it with zeros).
#pragma once

namespace tf32_transpose {

constexpr int TILE = 64;                    // a block's tile: 64 k x 64 columns of B
constexpr int THREADS = 256;                // 64 x 4: a row of the tile per 64 threads, four rows a pass
constexpr int PASS_ROWS = THREADS / TILE;

__host__ __device__ constexpr int bt_pitch(int k) { return (k + 3) / 4 * 4; }

}  // namespace tf32_transpose

// One 64 x 64 tile per block, through shared memory (rows padded by one float: no bank conflicts either way), so
// that both the reads of B's rows (along n) and the writes of Bt's rows (along k) are coalesced. A is the pre-pass
// contract's first operand (specs.Prepass) and is not read.
extern "C" __global__ void __launch_bounds__(tf32_transpose::THREADS)
    wgmma_tf32_transpose(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ bt, int m,
                         int n, int k)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    using namespace tf32_transpose;
    // The GEMM may launch now (it waits for this grid to complete before reading Bt). Launched in stream order
    // (the host's way) this grid starts after the last GEMM, which reads Bt, has ended; as a dependent it would
    // wait for it here.
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
    __shared__ float tile[TILE][TILE + 1];
    const int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
    const int n0 = blockIdx.x * TILE, k0 = blockIdx.y * TILE;
#pragma unroll
    for (int j = 0; j < TILE; j += PASS_ROWS) {  // tile[k - k0][n - n0] = B[k][n]
        const int kk = k0 + ty + j, nn = n0 + tx;
        tile[ty + j][tx] = (kk < k && nn < n) ? B[static_cast<size_t>(kk) * n + nn] : 0.f;
    }
    __syncthreads();
    const size_t pitch = static_cast<size_t>(bt_pitch(k));
    const int kk = k0 + tx;
    if (kk >= k) return;
#pragma unroll
    for (int j = 0; j < TILE; j += PASS_ROWS) {  // Bt[n][k] = tile[k - k0][n - n0]
        const int nn = n0 + ty + j;
        if (nn < n) bt[static_cast<size_t>(nn) * pitch + kk] = tile[tx][ty + j];
    }
#endif
}
