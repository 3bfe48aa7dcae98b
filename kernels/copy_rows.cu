// Not a matmul method: the copy of a matrix's rows between buffers of different row pitches, which the launchers run
// on every launch and inside the timed region. A tensor map (and cuBLASLt's alignment rules) needs row pitches that
// are multiples of 16 bytes, so an operand whose rows are not (k = 65 in fp16, a B of 56 one-byte columns that a
// swapped build reads as it is) is first copied into a padded buffer, and a library's padded C back into the study's.
// A kernel on the stream rather than a two-dimensional copy of the copy engine: a copy-engine copy of narrow rows
// moves them one at a time, and the GEMM launched after it cannot start under it; after this kernel a GEMM launched
// as a programmatic dependent does (as after transpose_bytes.cu), and waits for it to complete before it reads.
//
// src: rows x row_bytes bytes, row pitch src_pitch; dst: the same rows, row pitch dst_pitch (both in bytes). Block
// (x, y) copies rows y, y + gridDim.y, ...; in each, its 256 threads take consecutive bytes from column 256 x on, so
// loads and stores coalesce along a row. What lies past row_bytes in dst's rows (the padding) is not written: the
// tensor maps keep the logical width, and a library's zero padding is set once when the buffer is made.
#pragma once

#include <stdint.h>

extern "C" __global__ void __launch_bounds__(256) copy_rows(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst,
                                                            int rows, int row_bytes, int src_pitch, int dst_pitch)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        const uint8_t* from = src + static_cast<size_t>(r) * src_pitch;
        uint8_t* to = dst + static_cast<size_t>(r) * dst_pitch;
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < row_bytes; c += gridDim.x * blockDim.x) to[c] = from[c];
    }
}
