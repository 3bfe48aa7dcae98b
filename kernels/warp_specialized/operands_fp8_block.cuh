// Operand policy of the block-scaled FP8 rung (kernels/17_wgmma_fp8_block.cu): e4m3 A and B with DeepSeek-V3's fp32
// block scales, A one per row and 128 k (1x128), B one per 128x128 block, for the warp-specialised pipeline
// (kernel.cuh): C = sum over k blocks kb of (A_kb · B_kb) * sa[row, kb] * sb[kb, col / 128] in fp32.
//
// It is the e4m3 operands' promoted build (operands_bytes.cuh at WGMMA_WS_BN=128, WGMMA_WS_PROMOTE=1) with the
// weights that the mainloop applies for a block-scaled Op (BLOCK_SCALED, mainloop.cuh): the promoted mainloop
// already starts every k step (BK = 128 k, exactly one scale block) from zero in a scratch accumulator set and adds
// the finished partial into fp32 accumulators, so the block scales cost one multiply folded into that add,
// d = fma(partial, sa[row, kt] * sb[kt, n0 / 128], d): an FFMA where the per-tensor build has an FADD, and no
// per-tensor factor at the end. The tile's 128 columns lie in one column block of B's scales (n0 / 128), so a
// thread needs three scales per k step: its two rows' (each consumer thread holds rows l/4 and l/4 + 8 of its
// warp's 16 in the wgmma accumulator layout) and the tile's B scale. They are read through the read-only path
// (__ldg) and used only after the next step's wgmmas are issued, so their latency runs under the tensor cores'
// work (ptxas 13.0 issues them just after the next step's first wgmma, where they overlap the wait for the step's
// own group); consecutive lanes read consecutive rows of one k block, and the scales (kb x (m + nb) floats, 2 MiB
// at 8192^3) stay in L2. Stream-K pieces and split-K slices are whole k steps, each weighted as it is computed, and
// summed as in the per-tensor builds. This is DeepGEMM's scheme (its promotion, its scale per 1x128 and 128x128
// block).
//
// Scales (matmul_study.core.dtypes.block_scale_layout): one fp32 buffer, kb = ceil(k / 128), nb = ceil(n / 128):
// [ sa: kb x m, k-block-major (row i's scale of k block q at q * m + i) | sb: kb x nb, k-block-major ]. Rows past m
// (the last tile's) read row m - 1's scale: their partials are zero (TMA's zero fill), and the loads stay inside sa.
#pragma once

#include "operands_bytes.cuh"

namespace wgmma_ws {

constexpr int SCALE_BLOCK = 128;  // the scales' block edge (dtypes: float8_e4m3_block's scale_block)

#if HOPPER_SM90A
// The e4m3 operands and instruction without their per-tensor factor: their scales are the blocks'.
struct E4M3Block : E4M3 {
    static constexpr bool SCALED = false;
};

struct OpFp8Block : OpBytes<E4M3Block> {
    static constexpr bool BLOCK_SCALED = true;
    static_assert(BK == SCALE_BLOCK && BN == SCALE_BLOCK,
                  "a k step is one 128-k scale block and a tile one 128-column block of B's scales");

    // One consumer thread's weights of its k steps in one tile: at(kt) = (sa[kt, r0], sa[kt, r1]) * sb[kt, n0 / 128]
    // for its rows r0 and r1 = r0 + 8 (clamped to m - 1), as the mainloop's Step (x: r0, y: r1).
    struct Weights {
        using Step = float2;
        const float* sa;  // row r0's scale at k step 0; a k step further is m on
        const float* sb;  // the tile's B scale at k step 0; a k step further is nb on
        int r1;           // from r0's scale to r1's
        int m, nb;

        __device__ __forceinline__ Weights(const float* scales, int m_, int row0, int n0, int ktiles, int cols)
            : m(m_), nb(cols)
        {
            const int r0 = min(row0, m_ - 1);
            r1 = min(row0 + 8, m_ - 1) - r0;
            sa = scales + r0;
            sb = scales + static_cast<size_t>(ktiles) * m_ + n0 / SCALE_BLOCK;
        }

        __device__ __forceinline__ float2 at(int kt) const
        {
            const float* const a = sa + static_cast<size_t>(kt) * m;
            const float b = __ldg(sb + static_cast<size_t>(kt) * nb);
            return make_float2(__ldg(a) * b, __ldg(a + r1) * b);
        }
    };
};
#endif  // HOPPER_SM90A

}  // namespace wgmma_ws
