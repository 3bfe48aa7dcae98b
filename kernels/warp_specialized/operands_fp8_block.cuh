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
// warp's 16 in the wgmma accumulator layout) and the tile's B scale.
//
// Where the scales come from: a ring of WGMMA_WS_SCALE_SLOTS slots in shared memory (config.cuh), each a k step's
// scales of the tile's 128 rows and its B scale, which the producer warpgroup's second warp copies (mainloop.cuh,
// scale_loader; ScaleCopies below: cp.async through L2, consecutive lanes consecutive rows of one k block) up to
// that many steps ahead of the consumers. A consumer thread waits for its step's slot, reads its three scales with
// ld.shared, and its warp frees its share of the slot (the slot is free once every consumer warp has). Read by each
// consumer thread from global memory instead, 30 % of the build's warp samples waited on them (ncu, 8192^3): ptxas
// issues such loads just after the next step's first wgmma wherever they stand in the source, too late for L2's
// latency. Stream-K pieces and split-K slices are
// whole k steps, each weighted as it is computed, and summed as in the per-tensor builds. This is DeepGEMM's scheme
// (its promotion, its scale per 1x128 and 128x128 block, its scales staged in shared memory by the producer side).
//
// Scales (matmul_study.core.dtypes.block_scale_layout): one fp32 buffer, kb = ceil(k / 128), nb = ceil(n / 128):
// [ sa: kb x m, k-block-major (row i's scale of k block q at q * m + i) | sb: kb x nb, k-block-major ]. Rows past m
// (the last tile's) get row m - 1's scale: their partials are zero (TMA's zero fill), and the copies stay inside sa.
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

    static_assert(SCALE_SLOTS >= 2, "block scales (wgmma_fp8_block) need WGMMA_WS_SCALE_SLOTS of at least 2: the "
                                     "scale ring that the producer warpgroup fills");

    // One loader lane's copies of an item's k steps into slots of the scale ring (SCALE_SLOT_BYTES), from its first
    // step k0 on: row m0 + i's A scale to float i (rows past m: row m - 1's), the tile's B scale to float BM. Lane l
    // copies rows l, l + 32, ... (each copy instruction 32 consecutive floats), lane 0 the B scale too; `cols` is
    // nb, B's scale columns.
    struct ScaleCopies {
        const float* sa;  // row 0's A scale of the next k step
        const float* sb;  // the tile's B scale of the next k step
        int row;  // this lane's first row, m0 + lane
        int m, cols, lane;

        __device__ __forceinline__ ScaleCopies(const float* scales, int m_, int m0, int n0, int k0, int ktiles,
                                               int cols_, int lane_)
            : sa(scales + static_cast<size_t>(k0) * m_),
              sb(scales + static_cast<size_t>(ktiles) * m_ + static_cast<size_t>(k0) * cols_ + n0 / SCALE_BLOCK),
              row(m0 + lane_), m(m_), cols(cols_), lane(lane_)
        {
        }

        // The next k step's scales into `slot`.
        __device__ __forceinline__ void copy(uint32_t slot)
        {
#pragma unroll
            for (int j = 0; j < BM / 32; ++j)
                hopper::cp_async_4(slot + 4 * (lane + 32 * j), sa + min(row + 32 * j, m - 1));
            if (lane == 0) hopper::cp_async_4(slot + 4 * BM, sb);
            sa += m;
            sb += cols;
        }
    };

    // One consumer thread's weights of an item's k steps: next() = (sa[kt, r0], sa[kt, r1]) * sb[kt, n0 / 128] of
    // its next step kt, for its rows r0 and r1 = r0 + 8 of the tile, read from the step's slot once the loader has
    // filled it, as the mainloop's Step (x: r0, y: r1). The warp frees its share of the slot as soon as its lanes
    // have read it: one arrival, by lane 0 after the warp's lanes meet (__syncwarp orders their reads before it), as
    // on a stage's empty barrier. The item's first step is ring step `step`; each next() moves on one slot (RingPos).
    struct Weights {
        using Step = float2;
        uint32_t slots, full, empty;  // the ring's first slot, its first full and first empty barrier
        uint32_t row;                 // r0's byte offset in a slot
        RingPos<SCALE_SLOTS> pos;     // the next step's slot and phase
        bool signals;                 // lane 0: arrives for its warp

        __device__ __forceinline__ Weights(const Smem& sm, int row0, uint32_t step)
            : slots(sm.scales), full(sm.scale_full_bar), empty(sm.scale_empty_bar), row(4 * row0), pos(step),
              signals(threadIdx.x % 32 == 0)
        {
        }

        __device__ __forceinline__ float2 next()
        {
            hopper::mbar_wait(full + 8 * pos.slot, pos.phase);
            const uint32_t slot = slots + pos.slot * SCALE_SLOT_BYTES;
            const float a0 = hopper::ld_shared_f32(slot + row), a1 = hopper::ld_shared_f32(slot + row + 4 * 8);
            const float b = hopper::ld_shared_f32(slot + 4 * BM);
            __syncwarp();
            hopper::mbar_arrive_local_if(empty + 8 * pos.slot, signals);  // after the warp's reads (release order)
            pos.advance();
            return make_float2(a0 * b, a1 * b);
        }
    };
};
#endif  // HOPPER_SM90A

}  // namespace wgmma_ws
