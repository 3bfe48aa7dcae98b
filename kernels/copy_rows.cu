// Not a matmul method: the copy of a matrix's rows between buffers of different row pitches, which the launchers run
// on every launch and inside the timed region. A tensor map (and cuBLASLt's alignment rules) needs row pitches that
// are multiples of 16 bytes, so an operand whose rows are not (k = 65 in fp16, a B of 56 one-byte columns that a
// swapped build reads as it is) is first copied into a padded buffer, and a library's padded C back into the study's.
// A kernel on the stream rather than a two-dimensional copy of the copy engine: a copy-engine copy of narrow rows
// moves them one at a time, and the GEMM launched after it cannot start under it; after this kernel a GEMM launched
// as a programmatic dependent does (as after transpose_bytes.cu), and waits for it to complete before it reads.
//
// One entry per copy unit U (1, 2, 4, 8 or 16 bytes): the widest that divides both pitches and the row's bytes, so a
// row of 999 fp16 values moves in 2-byte units and a row of 56 bytes in 8-byte ones. The rows' units are numbered as
// one sequence, row by row, and consecutive threads take consecutive units: where the source's rows are packed (its
// pitch is the row), a warp reads one contiguous span however narrow the rows are. Each thread issues UNROLL loads
// before their stores, so a thread has that many copies in flight rather than one.
//
// src: rows x row_units units, row pitch src_pitch units; dst: the same rows at a row pitch of dst_pitch units. What
// lies past the row in dst (the padding) is not written: the tensor maps keep the logical width, and a library's zero
// padding is set once when the buffer is made. rows x row_units must be below 2^32 (operands here are far smaller).
#pragma once

#include <stdint.h>

namespace copy_rows_detail {

constexpr int UNROLL = 4;

template <typename U>
__device__ __forceinline__ void copy(const U* __restrict__ src, U* __restrict__ dst, unsigned rows, unsigned row_units,
                                     unsigned src_pitch, unsigned dst_pitch)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    const unsigned total = rows * row_units;
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned first = blockIdx.x * blockDim.x + threadIdx.x; first < total; first += UNROLL * stride) {
        U value[UNROLL];
        size_t to[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const unsigned i = first + u * stride;
            if (i < total) {
                const unsigned r = i / row_units, c = i - r * row_units;
                value[u] = src[static_cast<size_t>(r) * src_pitch + c];
                to[u] = static_cast<size_t>(r) * dst_pitch + c;
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            if (first + u * stride < total) dst[to[u]] = value[u];
    }
}

}  // namespace copy_rows_detail

#define COPY_ROWS_ENTRY(BYTES, TYPE)                                                                                 \
    extern "C" __global__ void __launch_bounds__(256)                                                                 \
        copy_rows_##BYTES(const TYPE* __restrict__ src, TYPE* __restrict__ dst, unsigned rows, unsigned row_units,  \
                          unsigned src_pitch, unsigned dst_pitch)                                                     \
    {                                                                                                                 \
        copy_rows_detail::copy(src, dst, rows, row_units, src_pitch, dst_pitch);                                      \
    }

COPY_ROWS_ENTRY(1, uint8_t)
COPY_ROWS_ENTRY(2, uint16_t)
COPY_ROWS_ENTRY(4, uint32_t)
COPY_ROWS_ENTRY(8, uint2)
COPY_ROWS_ENTRY(16, uint4)
