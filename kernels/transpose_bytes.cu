// Not a matmul method: the byte transpose that the int8 rung (15_wgmma_int8.cu) and cuBLAS's int8 call both run
// before their GEMM, on every launch and inside the timed region. Tensor cores read 8-bit operands only K-major
// (wgmma has no transpose for them, and cuBLAS's int8 tensor-core kernels want the "TN" layout), while the study's
// B is k x n row-major, i.e. N-major: so Bt = B^T (n x k) is written first.
//
// src: rows x cols bytes, row pitch src_pitch; dst: cols x rows bytes, row pitch dst_pitch (both in bytes).
// A block of 256 threads (16 x 16) owns a 64 x 64 tile. Each thread loads a 4 x 4 block of bytes as four 32-bit
// words (one per source row, 16 lanes covering 64 contiguous bytes), transposes it in registers with four byte
// permutes per pair of words (prmt), and parks the four result words (one per destination row) in shared memory;
// the block then writes each of the tile's 64 destination rows as 16 contiguous words. Tiles that reach past the
// matrix, or pitches that are not multiples of 4 bytes (no aligned words), go byte by byte: only edges and odd
// shapes take that path.
//
// It is launched in stream order, and on sm_90 lets the next kernel launch at once where that kernel is launched
// as a programmatic dependent (the int8 and FP8 rungs' GEMMs, which wait for it to complete before they read Bt:
// their launch and set-up then run under it). A library's GEMM launched after it (cuBLAS's int8 call, cuBLASLt's
// FP8 one) is no such dependent, and starts when it ends.
#pragma once

#include <stdint.h>

extern "C" __global__ void __launch_bounds__(256) transpose_bytes(const uint8_t* __restrict__ src,
                                                                   uint8_t* __restrict__ dst, int rows, int cols,
                                                                   int src_pitch, int dst_pitch)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    constexpr int TILE = 64;
    __shared__ uint32_t t[TILE][TILE / 4 + 1];  // [destination row][word]; the extra word spreads the banks
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
    const bool whole = r0 + TILE <= rows && c0 + TILE <= cols && src_pitch % 4 == 0 && dst_pitch % 4 == 0;
    if (!whole) {
        // Consecutive threads write consecutive bytes of one destination row.
        for (int i = threadIdx.x; i < TILE * TILE; i += blockDim.x) {
            const int c = c0 + i / TILE, r = r0 + i % TILE;
            if (r < rows && c < cols)
                dst[static_cast<size_t>(c) * dst_pitch + r] = src[static_cast<size_t>(r) * src_pitch + c];
        }
        return;
    }
    uint32_t w[4];  // source rows r0 + 4 ty + i, columns c0 + 4 tx .. + 3
#pragma unroll
    for (int i = 0; i < 4; ++i)
        w[i] = *reinterpret_cast<const uint32_t*>(src + static_cast<size_t>(r0 + 4 * ty + i) * src_pitch + c0 + 4 * tx);
    // Byte j of w[i] is element (i, j) of the 4 x 4 block; the output word j holds bytes (0, j), (1, j), (2, j),
    // (3, j): first interleave pairs of rows, then pairs of pairs.
    const uint32_t lo01 = __byte_perm(w[0], w[1], 0x5140), hi01 = __byte_perm(w[0], w[1], 0x7362);
    const uint32_t lo23 = __byte_perm(w[2], w[3], 0x5140), hi23 = __byte_perm(w[2], w[3], 0x7362);
    t[4 * tx + 0][ty] = __byte_perm(lo01, lo23, 0x5410);
    t[4 * tx + 1][ty] = __byte_perm(lo01, lo23, 0x7632);
    t[4 * tx + 2][ty] = __byte_perm(hi01, hi23, 0x5410);
    t[4 * tx + 3][ty] = __byte_perm(hi01, hi23, 0x7632);
    __syncthreads();
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int row = 16 * q + ty;  // destination row c0 + row, bytes r0 + 4 tx .. + 3
        *reinterpret_cast<uint32_t*>(dst + static_cast<size_t>(c0 + row) * dst_pitch + r0 + 4 * tx) = t[row][tx];
    }
}
